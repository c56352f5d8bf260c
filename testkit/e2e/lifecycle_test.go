package e2e_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/local/workload"
	"github.com/agentdlq/agentdlq/testkit/localtest"
)

// The full path for every failure class at once: the demo's workload (valid,
// every poison reason, a transient that recovers, budget exhaustion, effect
// unknown, auth and dependency failures, a duplicate key) through the real
// worker. Must hold, per message: processed or dead-lettered with the reason
// its kind says; poison after exactly one handler attempt; the recovering
// transient on its second receive; exhaustion at exactly maxReceiveCount
// (attempts, and dlq_meta's attempts); nothing lost, nothing extra.
func TestLifecycleEveryFailureClass(t *testing.T) {
	t.Parallel()
	// The demo's 30 s visibility: retries come from the worker's backoff, and
	// a slow batch on a loaded machine is never delivered twice.
	h := newHarness(t, false, 0, nil)
	sent := h.send(workload.Demo(localtest.Unique("life"))...)
	w := h.worker()
	stats := h.drain(w.Handle)
	assert.Zero(t, stats.BatchErrors, "one record never fails the batch")

	acct := h.account(sent)
	assert.True(t, acct.AddsUp(), acct.Line())
	assert.Zero(t, acct.Lost, acct.Line())
	assert.Zero(t, acct.InFlight, acct.Line())
	assert.Zero(t, acct.ExtraDeadLetters, acct.Line())
	assert.Empty(t, acct.Unexpected)

	dead := byOriginal(h.deadLetters())
	for _, s := range sent {
		want := s.Task.Kind.Expect(h.p)
		got := h.attemptsOf(s.MessageID)
		t.Run(string(s.Task.Kind)+"/"+s.MessageID[:8], func(t *testing.T) {
			if s.Task.Kind == workload.Duplicate || (s.Task.Kind == workload.OK && s.Task.Key == sent[0].Task.Key) {
				// The original and its duplicate may race for the lease: the loser retries once.
				assert.GreaterOrEqual(t, got, 1)
			} else {
				assert.Equal(t, want.Attempts, got, "handler attempts")
			}
			if want.Processed {
				return
			}
			d, ok := dead[s.MessageID]
			require.True(t, ok, "in the DLQ")
			assert.Equal(t, want.Reason, d.Reason)
			assert.False(t, d.Inferred, "the worker wrote the reason")
			require.NotNil(t, d.Meta)
			assert.Equal(t, want.Attempts, d.Meta.Attempts, "dlq_meta attempts")
			assert.Equal(t, s.Task.Body, d.Body, "the original body, byte for byte")
		})
	}
	// Effects once: the mutating task's effect was recorded once.
	started, completed := h.ledger.counts()
	for _, s := range sent {
		if s.Task.Kind == workload.OKMutating {
			assert.Equal(t, 1, started[h.lkey(s.Task)])
			assert.Equal(t, 1, completed[h.lkey(s.Task)])
		}
	}
}

// Fault: the handler's process crashes on every delivery of a message (an
// out-of-memory kill, a Lambda timeout): the invocation fails as a whole and
// the worker never finishes it. Must hold: the message is received exactly
// maxReceiveCount times, then the hot queue's redrive policy moves it to the
// DLQ, where triage finds no metadata and infers receive_limit.
func TestReceiveLimitWhenTheHandlerCrashes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, false, 2, nil)
	task := workload.Make(localtest.Unique("crash"), 0, workload.OK, 0)
	sent := h.send(task)
	crash := func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
		panic("runtime: out of memory (injected)")
	}
	stats := h.drain(crash)
	assert.Equal(t, int64(h.p.MaxReceiveCount), stats.BatchErrors)
	assert.Equal(t, h.p.MaxReceiveCount, h.attemptsOf(sent[0].MessageID))

	dead := h.deadLetters()
	require.Len(t, dead, 1)
	assert.Equal(t, sent[0].MessageID, dead[0].MessageID, "the broker keeps the message id")
	assert.Equal(t, deadletter.ReasonReceiveLimit, dead[0].Reason)
	assert.True(t, dead[0].Inferred)
	assert.Equal(t, task.Body, dead[0].Body)
	assert.Zero(t, h.depth(h.q.HotURL))
}

// A redriven task whose key is done is a no-op. Must hold: the second
// delivery of a processed task (sent again, as a redrive sends it) is
// acknowledged without running the tool again: the ledger records its
// effect once and keeps the first receipt; nothing is dead-lettered.
func TestRedriveOfADoneTaskIsANoOp(t *testing.T) {
	t.Parallel()
	h := newHarness(t, false, 0, nil)
	task := workload.Make(localtest.Unique("noop"), 0, workload.OKMutating, 0)
	h.send(task)
	w := h.worker()
	h.drain(w.Handle)
	ctx := context.Background()
	first, ok, err := h.ledger.Get(ctx, h.lkey(task))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, ledger.StateDone, first.State)

	_, err = h.ledger.Redriven(ctx, h.lkey(task), time.Now())
	require.NoError(t, err)
	again := h.send(task)
	stats := h.drain(w.Handle)
	assert.Equal(t, int64(1), stats.Deleted, "acknowledged")
	assert.Equal(t, 1, h.attemptsOf(again[0].MessageID))
	after, _, err := h.ledger.Get(ctx, h.lkey(task))
	require.NoError(t, err)
	assert.Equal(t, first.Receipt, after.Receipt)
	started, completed := h.ledger.counts()
	assert.Equal(t, 1, started[h.lkey(task)], "the mutating call started once")
	assert.Equal(t, 1, completed[h.lkey(task)])
	assert.Empty(t, h.deadLetters())
	assert.Zero(t, h.depth(h.q.HotURL))
}

// FIFO: a message group's steps run in order, poison in a group is
// dead-lettered and the group goes on (fifo_poison dead_letter), and a
// transient failure holds the rest of its group until it succeeds.
func TestFIFOGroupsEndToEnd(t *testing.T) {
	t.Parallel()
	// Short: the rest of a held group waits for its visibility timeout.
	h := newHarness(t, true, 6, nil)
	prefix := localtest.Unique("fifo")
	var tasks []workload.Task
	kinds := []workload.Kind{workload.OK, workload.TransientRecovers, workload.OK, workload.SchemaInvalid, workload.OK}
	for i, k := range kinds {
		task := workload.Make(prefix, i, k, 0)
		task.Group = "run-a"
		tasks = append(tasks, task)
	}
	sent := h.send(tasks...)
	var (
		mu    sync.Mutex
		order []string
	)
	w := h.worker()
	h.drain(func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		resp, err := w.Handle(ctx, ev)
		failed := map[string]bool{}
		for _, f := range resp.BatchItemFailures {
			failed[f.ItemIdentifier] = true
		}
		mu.Lock()
		defer mu.Unlock()
		for _, r := range ev.Records {
			if !failed[r.MessageId] {
				order = append(order, r.MessageId)
			}
		}
		return resp, err
	})
	var want []string
	for _, s := range sent {
		want = append(want, s.MessageID)
	}
	assert.Equal(t, want, order, "each step finished (processed or dead-lettered) in the group's order")
	acct := h.account(sent)
	assert.True(t, acct.AddsUp(), acct.Line())
	assert.Zero(t, acct.Lost)
	assert.Equal(t, map[deadletter.Reason]int{deadletter.ReasonSchemaInvalid: 1}, acct.ByReason)
	assert.Equal(t, 4, acct.Processed)
}
