// Package batchtest helps handler authors test a batch.Handler the way it
// runs in Lambda: through the real batch.Processor, with an in-memory
// idempotency ledger and a DLQ that records what the processor sends.
//
//	w := batchtest.NewWorker(t, batch.Config{Handler: myHandler, MaxReceiveCount: 4})
//	res := w.Run(batchtest.Event(
//		batchtest.Msg{ID: "ok", Body: `{"order":"o-1"}`},
//		batchtest.Msg{ID: "bad", Body: `{"order":`},
//		batchtest.Msg{ID: "flaky", Body: `{"order":"o-2","flaky":true}`, ReceiveCount: 4},
//	))
//	batchtest.RequireAcked(t, res, "ok")
//	batchtest.RequireDeadLettered(t, res, "bad", deadletter.ReasonJSONInvalid)
//	batchtest.RequireDeadLettered(t, res, "flaky", deadletter.ReasonBudgetExhausted)
//
// Event and Msg build a Lambda SQS event from bodies and attributes
// (receive counts, FIFO message groups, message attributes, trace headers).
// A Worker keeps its ledger and DLQ across runs, so a second Run of the
// same event is a redelivery: a key the first run completed is a no-op.
//
// After a run every record of the event met one Fate: acknowledged,
// retried (a batch item failure) or dead-lettered (sent to the DLQ, then
// acknowledged). The Require functions fail the test, saying what happened
// instead, when a record met another; DeadLetter holds the decoded dlq_meta
// for further checks. Worker.DLQ.FailSends makes the DLQ refuse sends, to
// test that nothing is lost when it is down.
//
// The package is for tests only: it imports testing.
package batchtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/functions/batch"
	"github.com/agentdlq/agentdlq/internal/sqsio"
	"github.com/agentdlq/agentdlq/ledger"
)

// The queues and times the built events and the Worker use.
const (
	// QueueARN is the hot queue of the events Event builds (with a ".fifo"
	// suffix when a message has a GroupID).
	QueueARN = "arn:aws:sqs:us-east-1:123456789012:agent-tasks"
	// DLQURL is the Worker's default DLQ (with a ".fifo" suffix when the
	// Config is FIFO).
	DLQURL = "https://sqs.us-east-1.amazonaws.com/123456789012/agent-tasks-dlq"
	// MaxReceiveCount is the Worker's default Config.MaxReceiveCount.
	MaxReceiveCount = 4
)

// SentAt is every built message's SentTimestamp and
// ApproximateFirstReceiveTimestamp.
var SentAt = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// Msg is one record of an event to build. Only Body is needed.
type Msg struct {
	// ID is the message id (default "m1", "m2", … by position in the event).
	ID string
	// Body is the message body, as it is.
	Body string
	// ReceiveCount is ApproximateReceiveCount (default 1, the first
	// delivery). The processor dead-letters a retryable failure when it
	// reaches the Config's MaxReceiveCount.
	ReceiveCount int
	// GroupID is the MessageGroupId: set it on every message of a FIFO event.
	GroupID string
	// Attributes are message attributes of type String.
	Attributes map[string]string
	// TraceHeader is the AWSTraceHeader system attribute.
	TraceHeader string
}

// Event builds a Lambda SQS event of msgs, in order, as the event source
// mapping delivers them: eventSource aws:sqs, a receipt handle, and the
// system attributes ApproximateReceiveCount, SentTimestamp,
// ApproximateFirstReceiveTimestamp (SentAt), MessageGroupId,
// SequenceNumber and MessageDeduplicationId (FIFO) and AWSTraceHeader.
func Event(msgs ...Msg) events.SQSEvent {
	arn := QueueARN
	if slices.ContainsFunc(msgs, func(m Msg) bool { return m.GroupID != "" }) {
		arn += ".fifo"
	}
	sent := strconv.FormatInt(SentAt.UnixMilli(), 10)
	ev := events.SQSEvent{Records: make([]events.SQSMessage, len(msgs))}
	for i, m := range msgs {
		id := m.ID
		if id == "" {
			id = "m" + strconv.Itoa(i+1)
		}
		receive := max(m.ReceiveCount, 1)
		attrs := map[string]string{
			"ApproximateReceiveCount":          strconv.Itoa(receive),
			"SentTimestamp":                    sent,
			"ApproximateFirstReceiveTimestamp": sent,
			"SenderId":                         "AIDAEXAMPLE",
		}
		if m.GroupID != "" {
			attrs["MessageGroupId"] = m.GroupID
			attrs["MessageDeduplicationId"] = id
			attrs["SequenceNumber"] = fmt.Sprintf("%020d", i+1)
		}
		if m.TraceHeader != "" {
			attrs["AWSTraceHeader"] = m.TraceHeader
		}
		var mattrs map[string]events.SQSMessageAttribute
		if len(m.Attributes) > 0 {
			mattrs = make(map[string]events.SQSMessageAttribute, len(m.Attributes))
			for k, v := range m.Attributes {
				mattrs[k] = events.SQSMessageAttribute{DataType: "String", StringValue: aws.String(v)}
			}
		}
		ev.Records[i] = events.SQSMessage{
			MessageId:         id,
			ReceiptHandle:     "rh-" + id + "-" + strconv.Itoa(receive),
			Body:              m.Body,
			Attributes:        attrs,
			MessageAttributes: mattrs,
			EventSource:       "aws:sqs",
			EventSourceARN:    arn,
			AWSRegion:         "us-east-1",
		}
	}
	return ev
}

// Bodies builds a standard-queue event of first deliveries, one message a
// body, with ids m1, m2, …
func Bodies(bodies ...string) events.SQSEvent {
	msgs := make([]Msg, len(bodies))
	for i, b := range bodies {
		msgs[i].Body = b
	}
	return Event(msgs...)
}

// Worker is a batch.Processor with an in-memory ledger and a recording DLQ,
// for tests. Build it with NewWorker.
type Worker struct {
	// Processor is the real processor, built by batch.New.
	Processor *batch.Processor
	// Ledger is the Config's ledger (a ledger.Memory unless the Config
	// brought one).
	Ledger ledger.Ledger
	// DLQ records what the processor sends (when the Config brought no
	// SQS client).
	DLQ *DLQ
	// Handle makes Run hand the event to Processor.Handle as an
	// events.SQSEvent (lambda.Start(p.Handle)). By default Run takes the
	// path of lambda.Start(p): the event is marshaled to the payload Lambda
	// would send and given to Processor.Invoke. A handler sees the same
	// Record on both.
	Handle bool

	t        testing.TB
	logs     syncBuffer
	pipeline string
}

// NewWorker builds a Processor from cfg, which needs only a Handler, after
// filling in what a test does not care about: SQS (the Worker's DLQ),
// DLQURL (DLQURL, ".fifo" for a FIFO Config), MaxReceiveCount
// (MaxReceiveCount), Pipeline ("test"), Ledger (a fresh ledger.Memory),
// Metrics (discarded) and Logger (JSON lines kept for Worker.Logs). A
// Config that batch.New refuses fails the test.
func NewWorker(t testing.TB, cfg batch.Config) *Worker {
	t.Helper()
	w := &Worker{t: t, DLQ: &DLQ{}}
	if cfg.SQS == nil {
		cfg.SQS = w.DLQ
	}
	if cfg.DLQURL == "" {
		cfg.DLQURL = DLQURL
		if cfg.FIFO {
			cfg.DLQURL += ".fifo"
		}
	}
	if cfg.MaxReceiveCount == 0 {
		cfg.MaxReceiveCount = MaxReceiveCount
	}
	if cfg.Pipeline == "" {
		cfg.Pipeline = "test"
	}
	if cfg.Ledger == nil {
		cfg.Ledger = ledger.NewMemory()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = io.Discard
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(batch.NewLogHandler(&w.logs, nil))
	}
	p, err := batch.New(cfg)
	if err != nil {
		t.Fatalf("batchtest: %v", err)
	}
	w.Processor, w.Ledger, w.pipeline = p, cfg.Ledger, cfg.Pipeline
	return w
}

// Key is the ledger key of a task of tenant with idempotency key key, as
// Record.Begin scopes it on this Worker's pipeline (ledger.Key): what Entry
// and RequireLedgerState take.
func (w *Worker) Key(tenant, key string) string { return ledger.Key(w.pipeline, tenant, key) }

// Run hands ev to the processor as Lambda would (by default as the payload
// of lambda.Start(p), see Worker.Handle) and returns what happened to each
// record. An error from the processor (an event that is not SQS) fails the
// test, and so does a dead letter whose dlq_meta cannot be read.
func (w *Worker) Run(ev events.SQSEvent) *Result {
	w.t.Helper()
	return w.RunContext(context.Background(), ev)
}

// RunContext is Run with a context, for a deadline (the processor starts no
// record within Config.DeadlineMargin of it).
func (w *Worker) RunContext(ctx context.Context, ev events.SQSEvent) *Result {
	w.t.Helper()
	before := len(w.DLQ.Sent())
	var resp events.SQSEventResponse
	if w.Handle {
		var err error
		if resp, err = w.Processor.Handle(ctx, ev); err != nil {
			w.t.Fatalf("batchtest: Handle: %v", err)
		}
	} else {
		payload, err := json.Marshal(ev)
		if err != nil {
			w.t.Fatalf("batchtest: marshal the event: %v", err)
		}
		out, err := w.Processor.Invoke(ctx, payload)
		if err != nil {
			w.t.Fatalf("batchtest: Invoke: %v", err)
		}
		if err := json.Unmarshal(out, &resp); err != nil {
			w.t.Fatalf("batchtest: the response %q: %v", out, err)
		}
	}
	res := &Result{Event: ev, Response: resp}
	for _, in := range w.DLQ.Sent()[before:] {
		dl, err := decode(in)
		if err != nil {
			w.t.Fatalf("batchtest: %v", err)
		}
		res.DeadLetters = append(res.DeadLetters, dl)
	}
	return res
}

// Logs returns the processor's log lines (JSON) of every run so far.
func (w *Worker) Logs() string { return w.logs.String() }

// Entry returns the ledger entry of key (a ledger key: Worker.Key); ok is
// false when there is none.
func (w *Worker) Entry(key string) (e ledger.Entry, ok bool) {
	w.t.Helper()
	e, ok, err := w.Ledger.Get(context.Background(), key)
	if err != nil {
		w.t.Fatalf("batchtest: ledger get %q: %v", key, err)
	}
	return e, ok
}

// DLQ is a batch.SQSAPI that records dead letters instead of sending them.
// It is safe for concurrent use; the zero value is ready.
type DLQ struct {
	// FailSends, when set, is the error every SendMessageBatch returns
	// (nothing is recorded): the DLQ is down. Set it before the run.
	FailSends error

	rec sqsio.Recorder // what agentdlq invoke and the benches record with
}

var _ batch.SQSAPI = (*DLQ)(nil)

// SendMessageBatch records each dead letter of the batch (copied, as the
// processor reuses the input), or fails with FailSends.
func (d *DLQ) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	if d.FailSends != nil {
		return nil, d.FailSends
	}
	return d.rec.SendMessageBatch(ctx, in, opts...)
}

// ChangeMessageVisibility records the backoff of a retried record (the
// processor asks for one only when the Config has a HotQueueURL).
func (d *DLQ) ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	return d.rec.ChangeMessageVisibility(ctx, in, opts...)
}

// Sent returns the recorded dead letters of every run, in order, each as
// the SendMessage input that would send it alone.
func (d *DLQ) Sent() []*sqs.SendMessageInput { return d.rec.Sent() }

// VisibilityChanges returns the recorded ChangeMessageVisibility inputs.
func (d *DLQ) VisibilityChanges() []*sqs.ChangeMessageVisibilityInput {
	return d.rec.VisibilityChanges()
}

// DeadLetter is one dead letter the processor sent, decoded.
type DeadLetter struct {
	// MessageID is the original message's id (dlq_meta's message_id).
	MessageID string
	// Reason is dlq_reason (the same as Meta.Reason).
	Reason deadletter.Reason
	// Meta is the dlq_meta document.
	Meta deadletter.Meta
	// Body is the dead letter's body: the original, byte for byte.
	Body string
	// Attributes are the original message attributes, as a redrive restores
	// them: dlq_reason and dlq_meta removed, folded extras put back.
	Attributes map[string]deadletter.Attribute
	// Input is the dead letter's batch entry as the processor made it, as
	// a SendMessage input (the DLQ's URL and the entry's fields).
	Input *sqs.SendMessageInput
}

func decode(in *sqs.SendMessageInput) (DeadLetter, error) {
	attrs := make(map[string]deadletter.Attribute, len(in.MessageAttributes))
	for name, v := range in.MessageAttributes {
		attrs[name] = deadletter.Attribute{DataType: aws.ToString(v.DataType), StringValue: aws.ToString(v.StringValue), BinaryValue: v.BinaryValue}
	}
	reason := deadletter.Reason(attrs[deadletter.AttrReason].StringValue)
	meta, original, err := deadletter.DecodeDeadLetter(attrs)
	if err != nil {
		return DeadLetter{}, fmt.Errorf("a dead letter's metadata cannot be read: %w", err)
	}
	if meta.Reason != reason {
		return DeadLetter{}, fmt.Errorf("dead letter of %s: dlq_reason %q but dlq_meta reason %q", meta.MessageID, reason, meta.Reason)
	}
	return DeadLetter{MessageID: meta.MessageID, Reason: reason, Meta: *meta, Body: aws.ToString(in.MessageBody), Attributes: original, Input: in}, nil
}

// Fate is what a run did to one record.
type Fate string

const (
	// Acked: the record was acknowledged without a dead letter (the handler
	// returned nil, or its key was done already).
	Acked Fate = "acknowledged"
	// Retried: the record is a batch item failure; SQS delivers it again.
	Retried Fate = "retried"
	// DeadLettered: the record was sent to the DLQ, then acknowledged.
	DeadLettered Fate = "dead-lettered"
	// NotInEvent: the event has no record of that id.
	NotInEvent Fate = "not in the event"
)

// Result is what one run did.
type Result struct {
	// Event is the event that ran.
	Event events.SQSEvent
	// Response is the partial batch response Handle returned.
	Response events.SQSEventResponse
	// DeadLetters are the dead letters sent during the run, in send order.
	DeadLetters []DeadLetter
}

// Fate returns what the run did to the record with message id id.
func (r *Result) Fate(id string) Fate {
	if !slices.ContainsFunc(r.Event.Records, func(m events.SQSMessage) bool { return m.MessageId == id }) {
		return NotInEvent
	}
	if slices.ContainsFunc(r.Response.BatchItemFailures, func(f events.SQSBatchItemFailure) bool { return f.ItemIdentifier == id }) {
		return Retried
	}
	if _, ok := r.DeadLetter(id); ok {
		return DeadLettered
	}
	return Acked
}

// DeadLetter returns the dead letter of the record with message id id.
func (r *Result) DeadLetter(id string) (DeadLetter, bool) {
	for _, dl := range r.DeadLetters {
		if dl.MessageID == id {
			return dl, true
		}
	}
	return DeadLetter{}, false
}

// BatchItemFailures returns the ids of the response's batch item failures,
// in order.
func (r *Result) BatchItemFailures() []string {
	ids := make([]string, len(r.Response.BatchItemFailures))
	for i, f := range r.Response.BatchItemFailures {
		ids[i] = f.ItemIdentifier
	}
	return ids
}

// describe says what happened to id, for a failure message.
func (r *Result) describe(id string) string {
	f := r.Fate(id)
	if f == Retried {
		if _, ok := r.DeadLetter(id); ok {
			return "retried (a batch item failure) although it was also dead-lettered"
		}
		return "retried (a batch item failure)"
	}
	if f != DeadLettered {
		return string(f)
	}
	dl, _ := r.DeadLetter(id)
	s := "dead-lettered as " + string(dl.Reason)
	if dl.Meta.Error != "" {
		s += " (error: " + dl.Meta.Error + ")"
	}
	return s
}

// RequireAcked fails the test unless every record of ids was acknowledged
// without a dead letter.
func RequireAcked(t testing.TB, res *Result, ids ...string) {
	t.Helper()
	requireFate(t, res, Acked, ids)
}

// RequireRetried fails the test unless every record of ids is a batch item
// failure (and was not dead-lettered).
func RequireRetried(t testing.TB, res *Result, ids ...string) {
	t.Helper()
	requireFate(t, res, Retried, ids)
}

func requireFate(t testing.TB, res *Result, want Fate, ids []string) {
	t.Helper()
	if len(ids) == 0 {
		t.Fatalf("batchtest: want %s: no message id given", want)
	}
	var bad []string
	for _, id := range ids {
		_, letter := res.DeadLetter(id)
		if got := res.Fate(id); got != want || (want == Retried && letter) {
			bad = append(bad, fmt.Sprintf("%s was %s", id, res.describe(id)))
		}
	}
	if len(bad) > 0 {
		t.Fatalf("batchtest: want %s: %s", want, strings.Join(bad, "; "))
	}
}

// RequireDeadLettered fails the test unless the record id was dead-lettered
// with reason (and is not a batch item failure); it returns the letter.
func RequireDeadLettered(t testing.TB, res *Result, id string, reason deadletter.Reason) DeadLetter {
	t.Helper()
	dl, ok := res.DeadLetter(id)
	if !ok || dl.Reason != reason || res.Fate(id) != DeadLettered {
		t.Fatalf("batchtest: want %s dead-lettered as %s: it was %s", id, reason, res.describe(id))
	}
	return dl
}

// RequireBatchItemFailures fails the test unless the partial batch
// response lists exactly ids, in order; no ids: no failures at all.
func RequireBatchItemFailures(t testing.TB, res *Result, ids ...string) {
	t.Helper()
	got := res.BatchItemFailures()
	if !slices.Equal(got, ids) {
		t.Fatalf("batchtest: batch item failures %q, want %q", got, ids)
	}
}

// RequireNoDeadLetters fails the test when the run sent any dead letter.
func RequireNoDeadLetters(t testing.TB, res *Result) {
	t.Helper()
	if len(res.DeadLetters) > 0 {
		var s []string
		for _, dl := range res.DeadLetters {
			s = append(s, dl.MessageID+" as "+string(dl.Reason))
		}
		t.Fatalf("batchtest: want no dead letters, got %s", strings.Join(s, ", "))
	}
}

// RequireLedgerState fails the test unless the ledger holds key (a ledger
// key: Worker.Key) in state;
// it returns the entry.
func RequireLedgerState(t testing.TB, w *Worker, key string, state ledger.State) ledger.Entry {
	t.Helper()
	e, ok, err := w.Ledger.Get(context.Background(), key)
	switch {
	case err != nil:
		t.Fatalf("batchtest: ledger get %q: %v", key, err)
	case !ok:
		t.Fatalf("batchtest: want ledger key %q %s: the ledger has no entry", key, state)
	case e.State != state:
		t.Fatalf("batchtest: want ledger key %q %s, got %q", key, state, e.State)
	}
	return e
}

// syncBuffer is a bytes.Buffer safe for concurrent writes (a processor
// with Concurrency > 1 logs from several goroutines).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
