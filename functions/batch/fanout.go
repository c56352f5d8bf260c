package batch

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentdlq/agentdlq/functions/batch/internal/sqsevent"
	"github.com/agentdlq/agentdlq/internal/textutil"
)

// runOne handles record i unless its FIFO group is already held. batchNow
// is the clock read once when the batch started: without a deadline the
// record's ledger calls use it (each time.Now cost ~0.1 µs a record); with
// one, the reading taken for the deadline check serves the record.
func (p *Processor) runOne(ctx context.Context, rs []sqsevent.Message, i int, st *recordState, held bool, batchNow time.Time, m *counters) {
	if held {
		st.result = resultRetry // reported, not handled: the group's order holds
		return
	}
	now := batchNow
	if dl, ok := ctx.Deadline(); ok {
		if now = p.now(); !now.Before(dl.Add(-p.margin)) {
			// Out of time: a record started now could be cut off with the
			// whole batch. Reported, not handled; its receive count is not
			// spent on it by the worker (the broker counts the receive).
			st.result, st.notStarted = resultRetry, true
			return
		}
	}
	rec := p.newRecord(&rs[i], st, now)
	if st.badCount {
		value := rec.Attribute(attrReceiveCount)
		logAttrs(ctx, p.log, slog.LevelWarn, "unreadable ApproximateReceiveCount; counted as 1",
			slog.String("message_id", rec.MessageID()), slog.String("queue", queueName(rec.EventSourceARN())),
			slog.String("value", textutil.Truncate(value, 32)))
	}
	if r := p.process(ctx, rec, m); r != resultPending {
		st.result = r
	}
}

// runSequential handles the records one after the other, in event order.
func (p *Processor) runSequential(ctx context.Context, rs []sqsevent.Message, states []recordState, now time.Time, m *counters) {
	var held map[string]struct{} // FIFO message groups stopped at a failure
	for i := range len(rs) {
		group := ""
		if p.fifo {
			group = rs[i].Group()
		}
		_, stop := held[group]
		p.runOne(ctx, rs, i, &states[i], p.fifo && stop, now, m)
		if p.fifo && states[i].result == resultRetry {
			if held == nil {
				held = make(map[string]struct{})
			}
			held[group] = struct{}{}
		}
	}
}

// runConcurrent handles the records of a standard queue with up to
// Concurrency goroutines.
func (p *Processor) runConcurrent(ctx context.Context, rs []sqsevent.Message, states []recordState, now time.Time, m *counters) {
	p.fanOut(ctx, len(rs), m, func(i int, part *counters) {
		p.runOne(ctx, rs, i, &states[i], false, now, part)
	})
}

// runGroups handles the message groups of a FIFO queue with up to
// Concurrency goroutines, each group's records in order.
func (p *Processor) runGroups(ctx context.Context, rs []sqsevent.Message, states []recordState, now time.Time, m *counters) {
	var order []string
	groups := map[string][]int{}
	for i := range len(rs) {
		g := rs[i].Group()
		if _, ok := groups[g]; !ok {
			order = append(order, g)
		}
		groups[g] = append(groups[g], i)
	}
	p.fanOut(ctx, len(order), m, func(k int, part *counters) {
		held := false
		for _, i := range groups[order[k]] {
			p.runOne(ctx, rs, i, &states[i], held, now, part)
			held = held || states[i].result == resultRetry
		}
	})
}

// fanOut calls do(k, part) for every k in [0, n) on up to Concurrency
// goroutines, each counting into its own part and sending its dead letters
// from its own outbox, and adds the parts into m.
func (p *Processor) fanOut(ctx context.Context, n int, m *counters, do func(k int, part *counters)) {
	workers := min(p.concurrency, n)
	parts := make([]counters, workers)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			part := &parts[w]
			part.dlq = getOutbox()
			defer func() {
				p.flush(ctx, part)
				putOutbox(part.dlq)
				part.dlq = nil
			}()
			for {
				k := int(next.Add(1) - 1)
				if k >= n {
					return
				}
				do(k, part)
			}
		})
	}
	wg.Wait()
	for i := range parts {
		m.add(&parts[i])
	}
}

// getStates returns the per-record state of a batch: new for each
// invocation, never recycled, so that a Record a handler kept writes only
// its own invocation's state.
func getStates(n int) []recordState { return make([]recordState, n) }
