package batch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/agentdlq/agentdlq/functions/batch/internal/sqsevent"
	"github.com/agentdlq/agentdlq/ledger"
)

// ErrNotSQSEvent is returned by Handle for an event whose records are not
// SQS messages (no messageId, or another eventSource): the function is wired
// to the wrong source, and nothing is acknowledged.
var ErrNotSQSEvent = sqsevent.ErrNotSQSEvent

// Processor runs a Handler over Lambda SQS events. It is safe for
// concurrent use.
type Processor struct {
	handler     Handler
	sqs         SQSAPI
	dlqURL      string
	hotURL      string
	sourceARN   string
	maxReceive  int
	pipeline    string
	fifo        bool
	holdGroup   bool
	backoff     Backoff
	ledger      ledger.Ledger
	lease       time.Duration
	concurrency int
	margin      time.Duration
	loopAfter   int
	requeues    int
	classify    ClassifyFunc
	version     string
	log         *slog.Logger
	metrics     io.Writer
	now         func() time.Time
	rand        func(int64) int64
	pipelineKey []byte // the JSON-quoted pipeline name, for the metrics

	maxMessage     int
	evidence       S3API
	evidenceBucket string
}

// result is what happened to one record.
type result uint8

const (
	resultAck result = iota
	resultRetry
	resultDeadLettered
	// resultPending: the record's dead letter waits in its lane's outbox;
	// the send sets the record's result (see enqueue).
	resultPending
)

// Handle is the Lambda handler on aws-lambda-go's event type: it runs the
// Handler over every record and returns the partial batch response. Record
// failures never make it return an error; it returns one (and acknowledges
// nothing) only when the processor was not built by New or the event is not
// an SQS event. Invoke runs the same processing on the raw payload.
func (p *Processor) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	if p == nil || p.handler == nil {
		return events.SQSEventResponse{}, fmt.Errorf("%w: use batch.New", ErrConfig)
	}
	if err := CheckSQSEvent(ev); err != nil {
		return events.SQSEventResponse{}, err
	}
	// One representation of a record on every entry: a message as Invoke
	// decodes one.
	msgs, err := sqsevent.FromSQSEvent(ev)
	if err != nil {
		return events.SQSEventResponse{}, err
	}
	return p.run(ctx, msgs), nil
}

// HandleEvent is Handle on an event decoded by DecodeEvent. Handlers see
// the same Record on every entry.
func (p *Processor) HandleEvent(ctx context.Context, ev *Event) (events.SQSEventResponse, error) {
	if p == nil || p.handler == nil {
		return events.SQSEventResponse{}, fmt.Errorf("%w: use batch.New", ErrConfig)
	}
	if ev == nil {
		return events.SQSEventResponse{}, fmt.Errorf("%w: nil event", ErrNotSQSEvent)
	}
	if err := ev.ev.Check(); err != nil {
		return events.SQSEventResponse{}, err
	}
	return p.run(ctx, ev.ev.Records), nil
}

// Invoke makes the Processor an aws-lambda-go lambda.Handler:
// lambda.Start(p) hands it the invocation's payload, which it decodes as
// DecodeEvent does (attributes when read: no events.SQSEvent is built, so
// the event is not decoded twice) and runs as HandleEvent does, and it
// returns the partial batch response as JSON. A payload that is not an SQS
// event is an error, and nothing is acknowledged: Lambda retries the whole
// batch, nothing is lost. Like DecodeEvent, Invoke neither modifies nor
// keeps payload (the runtime's buffer, which the runtime reuses): it
// decodes one copy of it, which the records' views share, so a Record a
// handler keeps reads the message as received after the runtime reused its
// buffer, and keeps that copy alive while it is kept.
func (p *Processor) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	ev, err := DecodeEvent(payload)
	if err != nil {
		return nil, err
	}
	resp, err := p.HandleEvent(ctx, ev)
	if err != nil {
		return nil, err
	}
	return MarshalResponse(resp), nil
}

// MarshalResponse encodes a partial batch response as Lambda reads it,
// {"batchItemFailures":[{"itemIdentifier":"..."}]}, as json.Marshal does.
func MarshalResponse(resp events.SQSEventResponse) []byte {
	n := 24
	for _, f := range resp.BatchItemFailures {
		n += 22 + len(f.ItemIdentifier)
	}
	out := make([]byte, 0, n)
	out = append(out, `{"batchItemFailures":`...)
	if resp.BatchItemFailures == nil {
		return append(out, "null}"...)
	}
	out = append(out, '[')
	for i, f := range resp.BatchItemFailures {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"itemIdentifier":`...)
		q, _ := json.Marshal(f.ItemIdentifier) // a string: never fails
		out = append(out, q...)
		out = append(out, '}')
	}
	return append(out, "]}"...)
}

// run handles the records and builds the partial batch response.
func (p *Processor) run(ctx context.Context, rs []sqsevent.Message) events.SQSEventResponse {
	var resp events.SQSEventResponse
	n := len(rs)
	states := getStates(n)
	m := counters{dlq: getOutbox()}
	defer putOutbox(m.dlq)
	now := p.now()
	switch {
	case p.concurrency <= 1 || n < 2:
		p.runSequential(ctx, rs, states, now, &m)
	case p.fifo:
		p.runGroups(ctx, rs, states, now, &m)
	default:
		p.runConcurrent(ctx, rs, states, now, &m)
	}
	p.flush(ctx, &m) // the dead letters still waiting
	// The response lists the retried records in event order.
	notStarted := 0
	for i := range n {
		if states[i].notStarted {
			notStarted++
		}
		switch states[i].result {
		case resultRetry:
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rs[i].ID()})
			m.retried++
		case resultDeadLettered:
			m.deadLettered++
		}
	}
	if notStarted > 0 {
		logAttrs(ctx, p.log, slog.LevelWarn, "invocation out of time: records not started, reported as batch item failures",
			slog.Int("records", notStarted), slog.Duration("margin", p.margin))
	}
	p.emit(&m)
	return resp
}

// CheckSQSEvent returns an error wrapping ErrNotSQSEvent when a record of ev
// is not an SQS message: it has no messageId, or an eventSource other than
// aws:sqs. An event with no records is an SQS event with nothing to do.
func CheckSQSEvent(ev events.SQSEvent) error { return sqsevent.CheckSQSEvent(ev) }

// process runs the handler on one record and acts on its outcome.
func (p *Processor) process(ctx context.Context, rec Record, m *counters) result {
	err := p.call(ctx, rec)
	st := rec.st
	if st.readOnly && p.ledger != nil {
		err = p.settleReadOnly(ctx, rec, err) // no claim was taken: one write, or a read on failure
	}
	if err == nil {
		if st.begun && p.ledger != nil {
			if lerr := p.ledger.Complete(ctx, st.ledgerKey, rec.MessageID(), st.receipt, st.now); lerr != nil {
				p.logFailure(ctx, slog.LevelError, "ledger unavailable: could not record done; retried", rec, "", lerr)
				return resultRetry
			}
		}
		m.processed++
		return resultAck
	}
	if errors.Is(err, ErrAlreadyDone) {
		m.duplicates++
		return resultAck
	}
	if errors.Is(err, errLedger) {
		// Never dead-letter on a ledger outage: the message is retried.
		p.logFailure(ctx, slog.LevelError, "ledger unavailable; retried", rec, "", err)
		return resultRetry
	}
	c := classify(err, st.effectStarted, p.classify)
	lastReceive := rec.ReceiveCount >= p.maxReceive
	if c.Class().Retryable() && c.RetryAfter > 0 && p.requeues > 0 {
		// The provider's Retry-After, where the pipeline allows it: sent
		// back with that delay, this receive not counted (even the last).
		rerr := p.requeue(ctx, rec, c)
		if rerr == nil {
			m.requeued++
			return resultAck
		}
		if !errors.Is(rerr, errNoRequeue) {
			// Over the delay SQS allows or out of requeues is the documented
			// fallback (hidden, counted); a failed send is worth a warning.
			p.logFailure(ctx, slog.LevelWarn, "Retry-After not requeued; the receive counts", rec, c.Reason, rerr)
		}
	}
	if c.Class().Retryable() && !lastReceive {
		p.retry(ctx, rec, c, err)
		return resultRetry
	}
	if p.holdGroup && !c.Class().Retryable() && !lastReceive {
		// hold_group: the record and the rest of its group wait; on the last
		// allowed receive the record is dead-lettered with its own reason.
		p.logFailure(ctx, slog.LevelWarn, "FIFO group held at a failure that dead-letters at its last receive", rec, c.Reason, err)
		p.release(ctx, rec)
		return resultRetry
	}
	return p.deadLetter(ctx, rec, c, err, m)
}
