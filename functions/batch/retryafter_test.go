package batch

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/ledger"
)

// handle runs ev and returns the partial batch response's failures and the
// messages sent, split by queue.
func (h *harness) handle(t *testing.T, ev events.SQSEvent) (failed []string, requeued, dead []*sqs.SendMessageInput) {
	t.Helper()
	before := len(h.sqs.sent)
	resp, err := h.p.Handle(context.Background(), ev)
	require.NoError(t, err)
	for _, f := range resp.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	for _, in := range h.sqs.sent[before:] {
		switch aws.ToString(in.QueueUrl) {
		case testHot:
			requeued = append(requeued, in)
		case testDLQ:
			dead = append(dead, in)
		default:
			t.Fatalf("sent to %q", aws.ToString(in.QueueUrl))
		}
	}
	return failed, requeued, dead
}

// requeuedMsg is m as it comes back after a requeue that carried state.
func requeuedMsg(id, body string, receive int, state string) events.SQSMessage {
	m := sqsMsg(id, body, receive)
	m.MessageAttributes[AttrRequeued] = events.SQSMessageAttribute{DataType: "String", StringValue: aws.String(state)}
	return m
}

func TestOutcomeAfter(t *testing.T) {
	t.Parallel()
	o := Transient(errors.New("429"))
	a := o.After(30 * time.Second)
	assert.Equal(t, 30*time.Second, a.RetryAfter())
	assert.Zero(t, o.RetryAfter(), "After returns a copy")
	assert.Zero(t, o.After(-time.Second).RetryAfter(), "a negative delay is none")
	wrapped := errors.Join(errors.New("search"), a)
	assert.ErrorIs(t, wrapped, ErrTransient)
	c := classify(wrapped, false, nil)
	assert.Equal(t, deadletter.ReasonBudgetExhausted, c.Reason)
	assert.Equal(t, 30*time.Second, c.RetryAfter, "a wrapped outcome keeps its delay")
	assert.Zero(t, classify(a, true, nil).RetryAfter-30*time.Second, "the delay is kept")
	assert.Equal(t, deadletter.ReasonEffectUnknown, classify(a, true, nil).Reason, "after StartEffect it is effect_unknown all the same")
}

func TestRetryAfterVisibility(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		body    string
		receive int
		mod     func(*Config)
		want    int32 // the visibility set; -1: none
		dead    bool  // dead-lettered as budget_exhausted
	}{
		{name: "the provider's delay, not the backoff", body: "ratelimited:30", receive: 1, want: 30},
		{name: "with the backoff disabled too", body: "ratelimited:30", receive: 2, mod: func(c *Config) { c.Backoff = Backoff{Disabled: true} }, want: 30},
		{name: "capped at SQS's 12 hours", body: "ratelimited:90000", receive: 1, want: 43200},
		{name: "requeues on, but over 15 minutes: hidden, counted", body: "ratelimited:901", receive: 1, mod: func(c *Config) { c.RetryAfterRequeues = 3 }, want: 901},
		{name: "counted: the last receive dead-letters", body: "ratelimited:30", receive: 4, want: -1, dead: true},
		{name: "no delay: the backoff", body: "transient", receive: 1, want: 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, tt.mod)
			failed, requeued, dead := h.handle(t, events.SQSEvent{Records: []events.SQSMessage{sqsMsg("m1", tt.body, tt.receive)}})
			assert.Empty(t, requeued)
			if tt.dead {
				require.Len(t, dead, 1)
				assert.Equal(t, string(deadletter.ReasonBudgetExhausted), aws.ToString(dead[0].MessageAttributes[deadletter.AttrReason].StringValue))
				assert.Empty(t, h.sqs.visChanges)
				return
			}
			assert.Equal(t, []string{"m1"}, failed)
			assert.Empty(t, dead)
			require.Len(t, h.sqs.visChanges, 1)
			assert.Equal(t, tt.want, h.sqs.visChanges[0].VisibilityTimeout)
			assert.Equal(t, testHot, aws.ToString(h.sqs.visChanges[0].QueueUrl))
		})
	}
}

func TestRetryAfterRequeue(t *testing.T) {
	t.Parallel()
	three := func(c *Config) { c.RetryAfterRequeues = 3 }

	t.Run("sent back with the delay, acknowledged, not counted", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, three)
		m := sqsMsg("m1", "ratelimited:20", 2) // one counted failure before
		m.Attributes["AWSTraceHeader"] = "Root=1-abc"
		failed, requeued, dead := h.handle(t, events.SQSEvent{Records: []events.SQSMessage{m}})
		assert.Empty(t, failed, "acknowledged: the original is deleted")
		assert.Empty(t, dead)
		assert.Empty(t, h.sqs.visChanges)
		require.Len(t, requeued, 1)
		in := requeued[0]
		assert.Equal(t, "ratelimited:20", aws.ToString(in.MessageBody), "the body byte for byte")
		assert.Equal(t, int32(20), in.DelaySeconds)
		assert.Equal(t, "1/1", aws.ToString(in.MessageAttributes[AttrRequeued].StringValue), "one receive spent before, one requeue")
		assert.Equal(t, "acme", aws.ToString(in.MessageAttributes["tenant"].StringValue), "the original attributes")
		assert.Equal(t, "Root=1-abc", aws.ToString(in.MessageSystemAttributes["AWSTraceHeader"].StringValue))
		assert.Contains(t, h.logs.String(), "requeued after the provider's Retry-After")
		emf := parseEMF(t, h.metrics.String())
		assert.Equal(t, 1.0, emf[0][MetricRequeued])
		assert.Equal(t, 0.0, emf[0][MetricRetried], "not a batch item failure")
		assert.Equal(t, 0.0, emf[0][MetricProcessed])
	})
	t.Run("the copy counts what was spent, and stops at the limit", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, three)
		// A copy that had spent 1 receive and been requeued once: requeued again.
		_, requeued, _ := h.handle(t, events.SQSEvent{Records: []events.SQSMessage{requeuedMsg("m2", "ratelimited:5", 1, "1/1")}})
		require.Len(t, requeued, 1)
		assert.Equal(t, "1/2", aws.ToString(requeued[0].MessageAttributes[AttrRequeued].StringValue))
		// At the limit: hidden instead, and this receive counts.
		failed, requeued, _ := h.handle(t, events.SQSEvent{Records: []events.SQSMessage{requeuedMsg("m3", "ratelimited:5", 1, "1/3")}})
		assert.Empty(t, requeued)
		assert.Equal(t, []string{"m3"}, failed)
		require.Len(t, h.sqs.visChanges, 1)
		assert.Equal(t, int32(5), h.sqs.visChanges[0].VisibilityTimeout)
	})
	t.Run("on the last receive a Retry-After is still requeued", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, three)
		failed, requeued, dead := h.handle(t, events.SQSEvent{Records: []events.SQSMessage{sqsMsg("m1", "ratelimited:5", 4)}})
		assert.Empty(t, failed)
		assert.Empty(t, dead, "not counted: not budget_exhausted")
		require.Len(t, requeued, 1)
		assert.Equal(t, "3/1", aws.ToString(requeued[0].MessageAttributes[AttrRequeued].StringValue))
	})
	t.Run("carried receives hold the budget; the dead letter leaves the bookkeeping behind", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, three)
		// 3 receives spent before the requeue, the copy's first: the 4th.
		_, requeued, dead := h.handle(t, events.SQSEvent{Records: []events.SQSMessage{requeuedMsg("m1", "transient", 1, "3/1")}})
		assert.Empty(t, requeued)
		require.Len(t, dead, 1)
		assert.Equal(t, string(deadletter.ReasonBudgetExhausted), aws.ToString(dead[0].MessageAttributes[deadletter.AttrReason].StringValue))
		_, kept := dead[0].MessageAttributes[AttrRequeued]
		assert.False(t, kept, "a redrive starts with a whole budget")
		meta, _, err := deadletter.DecodeDeadLetter(attrsOf(dead[0]))
		require.NoError(t, err)
		assert.Equal(t, 4, meta.Attempts)
	})
	t.Run("an unreadable state counts nothing", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, three)
		failed, _, dead := h.handle(t, events.SQSEvent{Records: []events.SQSMessage{requeuedMsg("m1", "transient", 1, "lots")}})
		assert.Equal(t, []string{"m1"}, failed)
		assert.Empty(t, dead)
	})
	t.Run("a failed requeue hides the message instead", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, three)
		h.sqs.reject = func(types.SendMessageBatchRequestEntry) bool { return true }
		failed, _, _ := h.handle(t, events.SQSEvent{Records: []events.SQSMessage{sqsMsg("m1", "ratelimited:7", 1)}})
		assert.Equal(t, []string{"m1"}, failed)
		require.Len(t, h.sqs.visChanges, 1)
		assert.Equal(t, int32(7), h.sqs.visChanges[0].VisibilityTimeout)
		assert.Contains(t, h.logs.String(), "Retry-After not requeued")
	})
	t.Run("no room for the attribute: hidden, counted", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, three)
		m := sqsMsg("m1", "ratelimited:7", 1)
		for i := range deadletter.MaxAttributes - 1 {
			m.MessageAttributes[string(rune('a'+i))] = events.SQSMessageAttribute{DataType: "String", StringValue: aws.String("v")}
		}
		failed, requeued, _ := h.handle(t, events.SQSEvent{Records: []events.SQSMessage{m}})
		assert.Empty(t, requeued)
		assert.Equal(t, []string{"m1"}, failed)
	})
	t.Run("the lease is released for the copy", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, three)
		h.p.handler = func(ctx context.Context, r Record) error {
			if err := r.Begin(ctx, "t", "k", "", true); err != nil {
				return err
			}
			return Transient(errors.New("429")).After(time.Second)
		}
		_, requeued, _ := h.handle(t, events.SQSEvent{Records: []events.SQSMessage{sqsMsg("m1", "x", 1)}})
		require.Len(t, requeued, 1)
		e, _, _ := h.ledger.Get(context.Background(), lkey("k"))
		assert.Equal(t, ledger.StateInProgress, e.State)
		assert.True(t, e.LeaseUntil.IsZero(), "released: the copy finds the key free")
	})
}

func TestRetryAfterRequeuesConfig(t *testing.T) {
	t.Parallel()
	base := func() Config {
		return Config{Handler: scripted, SQS: &fakeSQS{}, DLQURL: testDLQ, HotQueueURL: testHot, MaxReceiveCount: 4, Pipeline: "p", RetryAfterRequeues: 3}
	}
	_, err := New(base())
	require.NoError(t, err)
	c := base()
	c.FIFO, c.DLQURL, c.HotQueueURL = true, testDLQ+".fifo", testHot+".fifo"
	_, err = New(c)
	assert.ErrorContains(t, err, "RetryAfterRequeues needs a standard queue")
	c = base()
	c.HotQueueURL = ""
	_, err = New(c)
	assert.ErrorContains(t, err, "RetryAfterRequeues needs HotQueueURL")
	c = base()
	c.RetryAfterRequeues = 101
	_, err = New(c)
	assert.ErrorContains(t, err, "outside 0..100")
}
