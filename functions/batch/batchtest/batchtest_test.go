package batchtest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/functions/batch"
	"github.com/agentdlq/agentdlq/functions/batch/batchtest"
	"github.com/agentdlq/agentdlq/internal/tbrec"
	"github.com/agentdlq/agentdlq/ledger"
)

// mixed runs one record of each fate: ok acknowledged (key r-1 done), torn
// dead-lettered json_invalid, flaky retried.
func mixed(t *testing.T) (*batchtest.Worker, *batchtest.Result) {
	w := batchtest.NewWorker(t, batch.Config{Handler: handleRefund})
	res := w.Run(batchtest.Event(
		batchtest.Msg{ID: "ok", Body: `{"refund_id":"r-1","amount_cents":500}`},
		batchtest.Msg{ID: "torn", Body: `{"refund_id":`},
		batchtest.Msg{ID: "flaky", Body: `{"refund_id":"r-3","amount_cents":7,"flaky":true}`},
	))
	return w, res
}

// TestRequire: each helper passes on what happened and fails, saying what
// happened instead, on anything else.
func TestRequire(t *testing.T) {
	t.Parallel()
	w, res := mixed(t)
	clean := w.Run(batchtest.Bodies(`{"refund_id":"r-5","amount_cents":1}`))
	// A result that contradicts itself: m1 retried and dead-lettered.
	both := &batchtest.Result{
		Event:       batchtest.Bodies(`x`),
		Response:    events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{{ItemIdentifier: "m1"}}},
		DeadLetters: []batchtest.DeadLetter{{MessageID: "m1", Reason: deadletter.ReasonJSONInvalid}},
	}
	tests := []struct {
		name     string
		check    func(t testing.TB)
		wantFail bool
		wantMsg  string // in the failure message
	}{
		{name: "acked: acked", check: func(t testing.TB) { batchtest.RequireAcked(t, res, "ok") }},
		{name: "acked: dead-lettered", check: func(t testing.TB) { batchtest.RequireAcked(t, res, "ok", "torn") }, wantFail: true,
			wantMsg: `torn was dead-lettered as json_invalid (error: poison: unexpected end of JSON input)`},
		{name: "acked: retried", check: func(t testing.TB) { batchtest.RequireAcked(t, res, "flaky") }, wantFail: true,
			wantMsg: "flaky was retried (a batch item failure)"},
		{name: "acked: not in the event", check: func(t testing.TB) { batchtest.RequireAcked(t, res, "m9") }, wantFail: true,
			wantMsg: "m9 was not in the event"},
		{name: "acked: no id", check: func(t testing.TB) { batchtest.RequireAcked(t, res) }, wantFail: true, wantMsg: "no message id given"},

		{name: "retried: retried", check: func(t testing.TB) { batchtest.RequireRetried(t, res, "flaky") }},
		{name: "retried: acked", check: func(t testing.TB) { batchtest.RequireRetried(t, res, "ok") }, wantFail: true, wantMsg: "ok was acknowledged"},
		{name: "retried: dead-lettered", check: func(t testing.TB) { batchtest.RequireRetried(t, res, "torn") }, wantFail: true},
		{name: "retried: also dead-lettered", check: func(t testing.TB) { batchtest.RequireRetried(t, both, "m1") }, wantFail: true,
			wantMsg: "although it was also dead-lettered"},

		{name: "dead-lettered: its reason", check: func(t testing.TB) { batchtest.RequireDeadLettered(t, res, "torn", deadletter.ReasonJSONInvalid) }},
		{name: "dead-lettered: another reason", check: func(t testing.TB) { batchtest.RequireDeadLettered(t, res, "torn", deadletter.ReasonSchemaInvalid) },
			wantFail: true, wantMsg: "want torn dead-lettered as schema_invalid: it was dead-lettered as json_invalid"},
		{name: "dead-lettered: acked", check: func(t testing.TB) { batchtest.RequireDeadLettered(t, res, "ok", deadletter.ReasonJSONInvalid) }, wantFail: true},
		{name: "dead-lettered: retried", check: func(t testing.TB) { batchtest.RequireDeadLettered(t, res, "flaky", deadletter.ReasonBudgetExhausted) },
			wantFail: true, wantMsg: "it was retried"},
		{name: "dead-lettered: also retried", check: func(t testing.TB) { batchtest.RequireDeadLettered(t, both, "m1", deadletter.ReasonJSONInvalid) }, wantFail: true},
		{name: "dead-lettered: not in the event", check: func(t testing.TB) { batchtest.RequireDeadLettered(t, res, "m9", deadletter.ReasonJSONInvalid) }, wantFail: true},

		{name: "failures: exactly", check: func(t testing.TB) { batchtest.RequireBatchItemFailures(t, res, "flaky") }},
		{name: "failures: none on a clean run", check: func(t testing.TB) { batchtest.RequireBatchItemFailures(t, clean) }},
		{name: "failures: none wanted", check: func(t testing.TB) { batchtest.RequireBatchItemFailures(t, res) }, wantFail: true},
		{name: "failures: one more", check: func(t testing.TB) { batchtest.RequireBatchItemFailures(t, res, "flaky", "ok") }, wantFail: true},

		{name: "no dead letters: clean", check: func(t testing.TB) { batchtest.RequireNoDeadLetters(t, clean) }},
		{name: "no dead letters: one", check: func(t testing.TB) { batchtest.RequireNoDeadLetters(t, res) }, wantFail: true, wantMsg: "torn as json_invalid"},

		{name: "ledger: done", check: func(t testing.TB) { batchtest.RequireLedgerState(t, w, w.Key("", "r-1"), ledger.StateDone) }},
		{name: "ledger: another state", check: func(t testing.TB) { batchtest.RequireLedgerState(t, w, w.Key("", "r-1"), ledger.StateDeadLettered) }, wantFail: true},
		{name: "ledger: no entry", check: func(t testing.TB) { batchtest.RequireLedgerState(t, w, w.Key("", "r-404"), ledger.StateDone) }, wantFail: true,
			wantMsg: "no entry"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			failed, msg := tbrec.Run(t, tt.check)
			assert.Equal(t, tt.wantFail, failed, "failed with %q", msg)
			assert.Contains(t, msg, tt.wantMsg)
		})
	}
}

func TestFate(t *testing.T) {
	t.Parallel()
	_, res := mixed(t)
	for id, want := range map[string]batchtest.Fate{
		"ok": batchtest.Acked, "torn": batchtest.DeadLettered, "flaky": batchtest.Retried, "m9": batchtest.NotInEvent,
	} {
		assert.Equal(t, want, res.Fate(id), id)
	}
	assert.Equal(t, []string{"flaky"}, res.BatchItemFailures())
	require.Len(t, res.DeadLetters, 1)
	dl := res.DeadLetters[0]
	assert.Equal(t, `{"refund_id":`, dl.Body, "the original body")
	assert.Equal(t, batchtest.QueueARN, dl.Meta.SourceQueueARN)
	assert.Equal(t, batchtest.SentAt, dl.Meta.SentAt)
}

func TestEvent(t *testing.T) {
	t.Parallel()
	ev := batchtest.Event(
		batchtest.Msg{Body: "a"},
		batchtest.Msg{ID: "x", Body: "b", ReceiveCount: 3, GroupID: "g", Attributes: map[string]string{"k": "v"}, TraceHeader: "Root=1-abc"},
	)
	require.NoError(t, batch.CheckSQSEvent(ev))
	require.Len(t, ev.Records, 2)
	a, b := ev.Records[0], ev.Records[1]
	assert.Equal(t, "m1", a.MessageId, "ids default to the position")
	assert.Equal(t, "1", a.Attributes["ApproximateReceiveCount"], "a first delivery by default")
	assert.Empty(t, a.MessageAttributes)
	assert.Equal(t, batchtest.QueueARN+".fifo", a.EventSourceARN, "a group makes the event FIFO")
	assert.Equal(t, "x", b.MessageId)
	assert.Equal(t, "3", b.Attributes["ApproximateReceiveCount"])
	assert.Equal(t, "g", b.Attributes["MessageGroupId"])
	assert.Equal(t, "Root=1-abc", b.Attributes["AWSTraceHeader"])
	assert.Equal(t, "v", *b.MessageAttributes["k"].StringValue)
	assert.NotEqual(t, a.ReceiptHandle, b.ReceiptHandle)

	std := batchtest.Bodies("p", "q")
	assert.Equal(t, batchtest.QueueARN, std.Records[1].EventSourceARN)
	assert.Equal(t, "m2", std.Records[1].MessageId)
	assert.NotContains(t, std.Records[0].Attributes, "MessageGroupId")
}

// TestWorkerKeepsState: a Worker's ledger and DLQ outlive a run; a
// redelivery of done work is a no-op and of dead-lettered work runs again.
func TestWorkerKeepsState(t *testing.T) {
	t.Parallel()
	worked := 0 // records that got past Begin
	w := batchtest.NewWorker(t, batch.Config{Handler: func(ctx context.Context, r batch.Record) error {
		// mutates: the claim path, where Begin itself says done (a
		// read-only tool's Begin claims nothing: TestWorkerReadOnlyDone).
		if err := r.Begin(ctx, "acme", string(r.Body()), "", true); err != nil {
			return err
		}
		worked++
		if string(r.Body()) == "bad" {
			return batch.PolicyLimit(errors.New("too many steps"))
		}
		return nil
	}})
	ev := batchtest.Bodies("good", "bad")
	first := w.Run(ev)
	batchtest.RequireDeadLettered(t, first, "m2", deadletter.ReasonPolicyLimit)
	second := w.Run(ev)
	batchtest.RequireAcked(t, second, "m1")
	batchtest.RequireDeadLettered(t, second, "m2", deadletter.ReasonPolicyLimit)
	assert.Equal(t, 3, worked, "good once (then a no-op: Begin said done) and bad twice")
	assert.Len(t, second.DeadLetters, 1, "a Result holds its own run's letters")
	assert.Len(t, w.DLQ.Sent(), 2, "the DLQ holds every run's")
	e, ok := w.Entry(w.Key("acme", "bad"))
	require.True(t, ok)
	assert.Equal(t, 2, e.DeadLetterCount)
	assert.Contains(t, w.Logs(), `"reason":"policy_limit"`, "the processor's logs are kept")
}

func TestNewWorkerRefusesABadConfig(t *testing.T) {
	t.Parallel()
	failed, msg := tbrec.Run(t, func(t testing.TB) {
		batchtest.NewWorker(t, batch.Config{Handler: handleRefund, FIFO: true, DLQURL: batchtest.DLQURL})
	})
	assert.True(t, failed)
	assert.Contains(t, msg, "a FIFO hot queue needs a FIFO DLQ")
	failed, msg = tbrec.Run(t, func(t testing.TB) { batchtest.NewWorker(t, batch.Config{}) })
	assert.True(t, failed)
	assert.Contains(t, msg, "Handler is required")
}

func TestRunRefusesANonSQSEvent(t *testing.T) {
	t.Parallel()
	w := batchtest.NewWorker(t, batch.Config{Handler: handleRefund})
	failed, msg := tbrec.Run(t, func(tb testing.TB) {
		// The Worker fails the t it was built with: build it on tb.
		w := batchtest.NewWorker(tb, batch.Config{Handler: handleRefund})
		ev := batchtest.Bodies("x")
		ev.Records[0].EventSource = "aws:kinesis"
		w.Run(ev)
	})
	assert.True(t, failed)
	assert.Contains(t, msg, "not an SQS event")
	batchtest.RequireAcked(t, w.Run(batchtest.Bodies(`{"refund_id":"r","amount_cents":1}`)), "m1")
}

// TestRunTakesThePathOfTheLambdaEntry: by default Run is lambda.Start(p);
// with Handle it is lambda.Start(p.Handle). Both see the same message.
func TestRunTakesThePathOfTheLambdaEntry(t *testing.T) {
	t.Parallel()
	type seen struct {
		id, body, at string
	}
	var got []seen
	handler := func(_ context.Context, r batch.Record) error {
		got = append(got, seen{id: r.MessageID(), body: string(r.Body()), at: r.Attribute("SentTimestamp")})
		return nil
	}
	body := "{\"q\":\"é \\\"x\\\" \\u00e9\"}" // JSON escapes in the body, and a non-ASCII rune
	ev := batchtest.Event(batchtest.Msg{ID: "m-é", Body: body})
	lean := batchtest.NewWorker(t, batch.Config{Handler: handler})
	batchtest.RequireAcked(t, lean.Run(ev), "m-é")
	compat := batchtest.NewWorker(t, batch.Config{Handler: handler})
	compat.Handle = true
	batchtest.RequireAcked(t, compat.Run(ev), "m-é")
	require.Len(t, got, 2)
	assert.Equal(t, got[1], got[0])
	assert.Equal(t, body, got[0].body, "the body byte for byte")
}

// TestWorkerReadOnlyDone: a read-only tool's Begin claims nothing, so a
// redelivery of its done work runs the handler again; the one conditional
// write after it is refused and the record is acknowledged as a no-op, the
// entry as the first delivery left it.
func TestWorkerReadOnlyDone(t *testing.T) {
	t.Parallel()
	worked := 0
	w := batchtest.NewWorker(t, batch.Config{Handler: func(ctx context.Context, r batch.Record) error {
		if err := r.Begin(ctx, "acme", string(r.Body()), "", false); err != nil {
			return err
		}
		worked++
		r.SetReceipt("receipt-" + r.MessageID())
		return nil
	}})
	first := w.Run(batchtest.Bodies("good"))
	batchtest.RequireAcked(t, first, "m1")
	before, ok := w.Entry(w.Key("acme", "good"))
	require.True(t, ok)
	assert.Equal(t, "receipt-m1", before.Receipt)
	second := w.Run(batchtest.Event(batchtest.Msg{ID: "m9", Body: "good"}))
	batchtest.RequireAcked(t, second, "m9")
	assert.Equal(t, 2, worked, "the read-only call ran again: the trade-off of one write")
	after, _ := w.Entry(w.Key("acme", "good"))
	assert.Equal(t, before, after, "the done entry is untouched: the redelivery was a no-op")
	assert.Empty(t, w.DLQ.Sent())
}
