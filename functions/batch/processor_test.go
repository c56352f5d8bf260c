package batch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/agenttask"
	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/ledger"
)

const (
	testDLQ    = "https://sqs.us-east-1.amazonaws.com/123456789012/agent-tasks-dlq"
	testHot    = "https://sqs.us-east-1.amazonaws.com/123456789012/agent-tasks"
	testHotARN = "arn:aws:sqs:us-east-1:123456789012:agent-tasks"
)

var testNow = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// scripted is a handler driven by the body: "<action>[:<key>]". Any other
// body is decoded as an agent task.
// testCatalog is the tools the tests' tasks name (the sample worker's,
// which batch's own tests cannot import: it imports batch).
var testCatalog = func() agenttask.Catalog {
	c := agenttask.Catalog{}
	for _, name := range []string{"web.search", "http.fetch", "code.exec", "file.read", "sql.query", "vector.search"} {
		c[name] = agenttask.Tool{Name: name, Versions: ">=1.0.0 <4.0.0"}
	}
	for _, name := range []string{"file.write", "email.send"} {
		c[name] = agenttask.Tool{Name: name, Versions: ">=1.0.0 <4.0.0", Mutates: true}
	}
	return c
}()

func scripted(ctx context.Context, r Record) error {
	action, key, _ := strings.Cut(string(r.Body()), ":")
	switch action {
	case "ok":
		return nil
	case "transient":
		return Transient(errors.New("upstream 503"))
	case "auth":
		return AuthConfig(errors.New("token expired"))
	case "dep":
		return DependencyOpen(errors.New("breaker open"))
	case "poison":
		return Poison(deadletter.ReasonSchemaInvalid, errors.New("args must be an object"))
	case "security":
		return Security(deadletter.ReasonSignatureInvalid, errors.New("bad signature"))
	case "effect":
		return EffectUnknown(errors.New("timeout after the call"))
	case "policy":
		return PolicyLimit(errors.New("too many steps"))
	case "unclassified":
		return errors.New("something nobody expected")
	case "quota":
		return fmt.Errorf("search: %w", &errQuota{tenant: "acme"})
	case "refused":
		return errRefused
	case "throttled":
		return &smithy.OperationError{ServiceID: "Bedrock", OperationName: "Converse", Err: &smithy.GenericAPIError{Code: "ThrottlingException", Fault: smithy.FaultClient}}
	case "panic":
		var m map[string]int
		m["x"] = 1 //nolint:staticcheck // SA5000: a nil map write, a real runtime panic, is the point
		return nil
	case "begin", "begin-mutate":
		if err := r.Begin(ctx, "t", key, "", action == "begin-mutate"); err != nil {
			return err
		}
		r.SetReceipt("receipt-" + key)
		return nil
	case "ratelimited": // ratelimited:<Retry-After in seconds>
		secs, _ := strconv.Atoi(key)
		return Transient(errors.New("upstream returned 429")).After(time.Duration(secs) * time.Second)
	case "digest": // digest:<key>|<args digest>
		k, digest, _ := strings.Cut(key, "|")
		if err := r.Begin(ctx, "t", k, digest, true); err != nil {
			return err
		}
		r.SetReceipt("receipt-" + digest)
		return nil
	case "begin-fail": // a claimed key (a mutating tool's), failing before its call
		if err := r.Begin(ctx, "t", key, "", true); err != nil {
			return err
		}
		return errors.New("tool failed")
	case "ro", "ro-fail": // a read-only tool's task: ro:<key>|<args digest>
		k, digest, _ := strings.Cut(key, "|")
		if err := r.Begin(ctx, "t", k, digest, false); err != nil {
			return err
		}
		if action == "ro-fail" {
			return errors.New("tool failed")
		}
		r.SetReceipt("receipt-" + k)
		return nil
	case "begin-mutate-timeout":
		if err := r.Begin(ctx, "t", key, "", true); err != nil {
			return err
		}
		if err := r.StartEffect(ctx); err != nil {
			return err
		}
		return fmt.Errorf("email.send: %w", context.DeadlineExceeded)
	}
	task, err := agenttask.DecodeTask(r.Body(), testCatalog)
	if err != nil {
		return err
	}
	r.Describe(&task)
	return nil
}

func sqsMsg(id, body string, receive int) events.SQSMessage {
	return events.SQSMessage{
		MessageId: id, ReceiptHandle: "rh-" + id, Body: body,
		Attributes: map[string]string{
			"ApproximateReceiveCount":          strconv.Itoa(receive),
			"SentTimestamp":                    strconv.FormatInt(testNow.Add(-time.Minute).UnixMilli(), 10),
			"ApproximateFirstReceiveTimestamp": strconv.FormatInt(testNow.Add(-30*time.Second).UnixMilli(), 10),
		},
		MessageAttributes: map[string]events.SQSMessageAttribute{
			"tenant": {DataType: "String", StringValue: aws.String("acme")},
		},
		EventSourceARN: testHotARN, EventSource: "aws:sqs", AWSRegion: "us-east-1",
	}
}

type harness struct {
	p       *Processor
	sqs     *fakeSQS
	ledger  *fakeLedger
	metrics *bytes.Buffer
	logs    *bytes.Buffer
}

func newHarness(t *testing.T, mod func(*Config)) *harness {
	t.Helper()
	h := &harness{sqs: &fakeSQS{}, ledger: &fakeLedger{Memory: ledger.NewMemory()}, metrics: &bytes.Buffer{}, logs: &bytes.Buffer{}}
	cfg := Config{
		Handler: scripted, SQS: h.sqs, DLQURL: testDLQ, HotQueueURL: testHot, MaxReceiveCount: 4,
		Pipeline: "agent-tasks", Ledger: h.ledger, WorkerVersion: "test",
		Logger:  slog.New(NewLogHandler(h.logs, nil)),
		Metrics: h.metrics, Now: func() time.Time { return testNow },
		Rand: func(n int64) int64 { return n - 1 },
	}
	if mod != nil {
		mod(&cfg)
	}
	p, err := New(cfg)
	require.NoError(t, err)
	h.p = p
	return h
}

// outcome is what happened to one record, as the caller of Handle sees it.
type outcome string

const (
	acked   outcome = "acked"
	retried outcome = "retried"
)

func deadLettered(r deadletter.Reason) outcome { return outcome("dead_lettered:" + string(r)) }

// run handles ev and returns every record's outcome by message id, checking
// that each record is exactly one of acknowledged, retried or dead-lettered.
func (h *harness) run(t *testing.T, ev events.SQSEvent) map[string]outcome {
	t.Helper()
	before := len(h.sqs.sent)
	resp, err := h.p.Handle(context.Background(), ev)
	require.NoError(t, err)
	got := map[string]outcome{}
	for _, f := range resp.BatchItemFailures {
		_, dup := got[f.ItemIdentifier]
		require.False(t, dup, "record %s reported twice", f.ItemIdentifier)
		got[f.ItemIdentifier] = retried
	}
	for _, in := range h.sqs.sent[before:] {
		meta, err := deadletter.ParseMeta([]byte(aws.ToString(in.MessageAttributes[deadletter.AttrMeta].StringValue)))
		require.NoError(t, err)
		_, dup := got[meta.MessageID]
		require.False(t, dup, "record %s both retried and dead-lettered", meta.MessageID)
		got[meta.MessageID] = deadLettered(meta.Reason)
	}
	for _, r := range ev.Records {
		if _, seen := got[r.MessageId]; !seen {
			got[r.MessageId] = acked
		}
	}
	require.Len(t, got, len(ev.Records), "every record is acknowledged, retried or dead-lettered, and nothing else")
	return got
}

func TestProcessorOutcomes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		body    string
		receive int
		want    outcome
	}{
		{name: "ok", body: "ok", receive: 1, want: acked},
		{name: "transient with budget left", body: "transient", receive: 1, want: retried},
		{name: "transient one before the last receive", body: "transient", receive: 3, want: retried},
		{name: "transient on the last receive", body: "transient", receive: 4, want: deadLettered(deadletter.ReasonBudgetExhausted)},
		{name: "transient beyond the last receive", body: "transient", receive: 7, want: deadLettered(deadletter.ReasonBudgetExhausted)},
		{name: "throttled API error", body: "throttled", receive: 2, want: retried},
		{name: "throttled API error on the last receive", body: "throttled", receive: 4, want: deadLettered(deadletter.ReasonBudgetExhausted)},
		{name: "auth with budget left", body: "auth", receive: 1, want: retried},
		{name: "auth on the last receive", body: "auth", receive: 4, want: deadLettered(deadletter.ReasonAuthConfig)},
		{name: "dependency with budget left", body: "dep", receive: 3, want: retried},
		{name: "dependency on the last receive", body: "dep", receive: 4, want: deadLettered(deadletter.ReasonDependencyOpen)},
		{name: "poison at once", body: "poison", receive: 1, want: deadLettered(deadletter.ReasonSchemaInvalid)},
		{name: "security at once", body: "security", receive: 1, want: deadLettered(deadletter.ReasonSignatureInvalid)},
		{name: "effect unknown at once", body: "effect", receive: 1, want: deadLettered(deadletter.ReasonEffectUnknown)},
		{name: "policy at once", body: "policy", receive: 1, want: deadLettered(deadletter.ReasonPolicyLimit)},
		{name: "unclassified at once", body: "unclassified", receive: 1, want: deadLettered(deadletter.ReasonUnclassified)},
		{name: "panic at once", body: "panic", receive: 1, want: deadLettered(deadletter.ReasonUnclassified)},
		{name: "body not JSON", body: "{not json", receive: 1, want: deadLettered(deadletter.ReasonJSONInvalid)},
		{name: "mutating call timed out", body: "begin-mutate-timeout:k1", receive: 1, want: deadLettered(deadletter.ReasonEffectUnknown)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, nil)
			got := h.run(t, events.SQSEvent{Records: []events.SQSMessage{sqsMsg("m1", tt.body, tt.receive)}})
			assert.Equal(t, tt.want, got["m1"])
		})
	}
}

func TestDeadLetterIsFaithful(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	body := `{"task_id":"t1", "schema_version": 2 ,"é":"\u00e9"}` + "\n\t "
	m := sqsMsg("m1", body, 1)
	m.Attributes["AWSTraceHeader"] = "Root=1-abc"
	for i := range 9 { // 10 attributes with tenant: two must be folded
		m.MessageAttributes[fmt.Sprintf("a%d", i)] = events.SQSMessageAttribute{DataType: "String", StringValue: aws.String(strconv.Itoa(i))}
	}
	m.MessageAttributes["bin"] = events.SQSMessageAttribute{DataType: "Binary", BinaryValue: []byte{0, 1, 2}}
	got := h.run(t, events.SQSEvent{Records: []events.SQSMessage{m}})
	require.Equal(t, deadLettered(deadletter.ReasonSchemaInvalid), got["m1"])

	require.Len(t, h.sqs.sent, 1)
	in := h.sqs.sent[0]
	assert.Equal(t, testDLQ, aws.ToString(in.QueueUrl))
	assert.Equal(t, body, aws.ToString(in.MessageBody), "the body is kept byte for byte")
	assert.LessOrEqual(t, len(in.MessageAttributes), deadletter.MaxAttributes)
	assert.Equal(t, "Root=1-abc", aws.ToString(in.MessageSystemAttributes["AWSTraceHeader"].StringValue))
	assert.Nil(t, in.MessageGroupId, "a standard DLQ has no message group")

	attrs := map[string]deadletter.Attribute{}
	for name, v := range in.MessageAttributes {
		attrs[name] = deadletter.Attribute{DataType: aws.ToString(v.DataType), StringValue: aws.ToString(v.StringValue), BinaryValue: v.BinaryValue}
	}
	meta, original, err := deadletter.DecodeDeadLetter(attrs)
	require.NoError(t, err)
	assert.Len(t, original, len(m.MessageAttributes), "every original attribute comes back, folded or kept")
	assert.Equal(t, []byte{0, 1, 2}, original["bin"].BinaryValue)
	assert.Equal(t, "acme", original["tenant"].StringValue)
	assert.Equal(t, deadletter.ReasonSchemaInvalid, meta.Reason)
	assert.Equal(t, deadletter.ClassPoison, meta.Class)
	assert.Equal(t, "m1", meta.MessageID)
	assert.Equal(t, testHotARN, meta.SourceQueueARN)
	assert.Equal(t, testNow.Add(-time.Minute), meta.SentAt)
	assert.Equal(t, testNow, meta.DeadLetteredAt)
	assert.Equal(t, 1, meta.Attempts)
	assert.Equal(t, "test", meta.WorkerVersion)
	assert.Equal(t, hexSHA256(body), meta.InputSHA256)
	require.Len(t, meta.History, 1)
	assert.Equal(t, 1, meta.History[0].Receive)
}

func TestBudgetExhaustedCarriesHistory(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.run(t, events.SQSEvent{Records: []events.SQSMessage{sqsMsg("m1", "throttled", 4)}})
	require.Len(t, h.sqs.sent, 1)
	meta, err := deadletter.ParseMeta([]byte(aws.ToString(h.sqs.sent[0].MessageAttributes[deadletter.AttrMeta].StringValue)))
	require.NoError(t, err)
	assert.Equal(t, deadletter.ReasonBudgetExhausted, meta.Reason)
	assert.Equal(t, deadletter.NextRetry, meta.NextAction)
	assert.Equal(t, 4, meta.Attempts)
	assert.Equal(t, "ThrottlingException", meta.ErrorCode)
	assert.Equal(t, testNow.Add(-30*time.Second), meta.FirstFailureAt, "the first receive, which failed")
	assert.Equal(t, testNow, meta.LastFailureAt)
	require.Len(t, meta.History, 1)
	assert.Equal(t, deadletter.Attempt{Receive: 4, At: testNow, Class: deadletter.ClassTransient, ErrorCode: "ThrottlingException", Error: meta.History[0].Error}, meta.History[0])
}

func TestMalformedRecordsAreAccountedFor(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	noAttrs := sqsMsg("no-attrs", `{"task_id":`, 1)
	noAttrs.Attributes, noAttrs.MessageAttributes = nil, nil
	badCount := sqsMsg("bad-count", "transient", 1)
	badCount.Attributes["ApproximateReceiveCount"] = "four"
	emptyBody := sqsMsg("empty-body", "", 1)
	ev := events.SQSEvent{Records: []events.SQSMessage{
		sqsMsg("ok", "ok", 1), noAttrs, badCount, emptyBody,
		sqsMsg("not-json", "<xml/>", 1), sqsMsg("panic", "panic", 2),
	}}
	got := h.run(t, ev)
	assert.Equal(t, map[string]outcome{
		"ok":         acked,
		"no-attrs":   deadLettered(deadletter.ReasonJSONInvalid),
		"bad-count":  retried, // unreadable receive count counts as 1
		"empty-body": deadLettered(deadletter.ReasonJSONInvalid),
		"not-json":   deadLettered(deadletter.ReasonJSONInvalid),
		"panic":      deadLettered(deadletter.ReasonUnclassified),
	}, got)
	assert.Contains(t, h.logs.String(), `"msg":"unreadable ApproximateReceiveCount; counted as 1","message_id":"bad-count"`)
	assert.Contains(t, h.logs.String(), `"stack":`, "a panic is logged with its stack")
}

func TestNotAnSQSEvent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ev   events.SQSEvent
	}{
		{name: "no message id", ev: events.SQSEvent{Records: []events.SQSMessage{{Body: "x"}}}},
		{name: "another event source", ev: events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m", EventSource: "aws:s3"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, nil)
			resp, err := h.p.Handle(context.Background(), tt.ev)
			assert.ErrorIs(t, err, ErrNotSQSEvent)
			assert.Empty(t, resp.BatchItemFailures)
			assert.Empty(t, h.sqs.sent, "nothing is dead-lettered")
		})
	}
	var zero *Processor
	_, err := zero.Handle(context.Background(), events.SQSEvent{})
	assert.ErrorIs(t, err, ErrConfig, "a nil processor is a broken configuration")
}

func TestDLQSendFailureRetriesAndCounts(t *testing.T) {
	t.Parallel()
	for _, b := range []behaviour{fail, outage, panics} {
		t.Run(fmt.Sprint(b), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, nil)
			h.sqs.send = b
			got := h.run(t, events.SQSEvent{Records: []events.SQSMessage{sqsMsg("p", "poison", 1), sqsMsg("e", "transient", 4), sqsMsg("ok", "ok", 1)}})
			assert.Equal(t, map[string]outcome{"p": retried, "e": retried, "ok": acked}, got)
			m := parseEMF(t, h.metrics.String())
			assert.Equal(t, 2.0, m[0]["DLQSendFailures"])
			assert.Equal(t, 2.0, m[0]["Retried"])
			assert.Equal(t, 0.0, m[0]["DeadLettered"])
			assert.Len(t, m, 1, "no per-reason line without a dead letter")
		})
	}
}

func TestVisibilityBackoff(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.run(t, events.SQSEvent{Records: []events.SQSMessage{sqsMsg("a", "transient", 1), sqsMsg("b", "dep", 3), sqsMsg("c", "poison", 1)}})
	require.Len(t, h.sqs.visChanges, 2)
	assert.Equal(t, "rh-a", aws.ToString(h.sqs.visChanges[0].ReceiptHandle))
	assert.Equal(t, testHot, aws.ToString(h.sqs.visChanges[0].QueueUrl))
	assert.Equal(t, int32(2), h.sqs.visChanges[0].VisibilityTimeout, "after receive 1: at most 2 s")
	assert.Equal(t, int32(8), h.sqs.visChanges[1].VisibilityTimeout, "after receive 3: at most 8 s")

	for _, b := range []behaviour{fail, panics} {
		t.Run(fmt.Sprint("a failed visibility change still retries ", b), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, nil)
			h.sqs.visibility = b
			got := h.run(t, events.SQSEvent{Records: []events.SQSMessage{sqsMsg("a", "transient", 1), sqsMsg("b", "ok", 1)}})
			assert.Equal(t, map[string]outcome{"a": retried, "b": acked}, got)
		})
	}
	t.Run("disabled", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, func(c *Config) { c.Backoff.Disabled = true })
		h.run(t, events.SQSEvent{Records: []events.SQSMessage{sqsMsg("a", "transient", 1)}})
		assert.Empty(t, h.sqs.visChanges)
	})
}

func TestLedger(t *testing.T) {
	t.Parallel()
	t.Run("a done key is a no-op", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, nil)
		got := h.run(t, events.SQSEvent{Records: []events.SQSMessage{sqsMsg("m1", "begin:k", 1), sqsMsg("m2", "begin:k", 1)}})
		assert.Equal(t, map[string]outcome{"m1": acked, "m2": acked}, got)
		e, found, _ := h.ledger.Get(context.Background(), lkey("k"))
		require.True(t, found)
		assert.Equal(t, ledger.StateDone, e.State)
		assert.Equal(t, "receipt-k", e.Receipt)
		m := parseEMF(t, h.metrics.String())
		assert.Equal(t, 1.0, m[0]["Processed"])
		assert.Equal(t, 1.0, m[0]["DuplicatesSkipped"])
	})
	t.Run("a key reused with other args is dead-lettered, never run, the entry untouched", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, nil)
		got := h.run(t, events.SQSEvent{Records: []events.SQSMessage{sqsMsg("m1", "digest:k|jcs-sha256:aaaaaaaaaaaaaaaa", 1)}})
		require.Equal(t, acked, got["m1"])
		before, _, _ := h.ledger.Get(context.Background(), lkey("k"))
		got = h.run(t, events.SQSEvent{Records: []events.SQSMessage{
			sqsMsg("m2", "digest:k|jcs-sha256:bbbbbbbbbbbbbbbb", 1), // another task with the key
			sqsMsg("m3", "digest:k|jcs-sha256:aaaaaaaaaaaaaaaa", 1), // the first task again
		}})
		assert.Equal(t, map[string]outcome{"m2": deadLettered(deadletter.ReasonIdempotencyKeyReused), "m3": acked}, got)
		after, _, _ := h.ledger.Get(context.Background(), lkey("k"))
		assert.Equal(t, before, after, "the entry is the first task's: not dead-lettered, not counted, receipt kept")
		assert.Equal(t, "receipt-jcs-sha256:aaaaaaaaaaaaaaaa", after.Receipt)
		require.Len(t, h.sqs.sent, 1)
		meta, _, err := deadletter.DecodeDeadLetter(attrsOf(h.sqs.sent[0]))
		require.NoError(t, err)
		assert.Equal(t, deadletter.ReasonIdempotencyKeyReused, meta.Reason)
		assert.Equal(t, deadletter.ClassSecurity, meta.Reason.Class())
		assert.Equal(t, "k", meta.IdempotencyKey)
		assert.Equal(t, deadletter.EffectNone, meta.Effect, "the mutating call never started")
		assert.Contains(t, meta.Error, "jcs-sha256:aaaaaaaaaaaa…")
		assert.Contains(t, meta.Error, "jcs-sha256:bbbbbbbbbbbb…")
		dups := 0.0
		for _, doc := range parseEMF(t, h.metrics.String()) {
			if v, ok := doc["DuplicatesSkipped"].(float64); ok {
				dups += v
			}
		}
		assert.Equal(t, 1.0, dups, "the first task again is a duplicate")
	})
	t.Run("a key leased by another delivery is retried", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, nil)
		_, err := h.ledger.Begin(context.Background(), lkey("k"), "other", "", testNow, time.Minute)
		require.NoError(t, err)
		got := h.run(t, events.SQSEvent{Records: []events.SQSMessage{sqsMsg("m1", "begin:k", 1)}})
		assert.Equal(t, retried, got["m1"])
	})
	t.Run("a ledger outage retries, even on the last receive", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, nil)
		h.ledger.begin = outage
		got := h.run(t, events.SQSEvent{Records: []events.SQSMessage{sqsMsg("m1", "begin-mutate:k", 1), sqsMsg("m2", "begin-mutate:j", 4)}})
		assert.Equal(t, map[string]outcome{"m1": retried, "m2": retried}, got)
		assert.Empty(t, h.sqs.sent)
	})
	t.Run("a ledger outage on done retries", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, nil)
		h.ledger.complete = outage
		got := h.run(t, events.SQSEvent{Records: []events.SQSMessage{sqsMsg("m1", "begin:k", 1)}})
		assert.Equal(t, retried, got["m1"])
	})
	t.Run("a ledger outage after the dead letter was sent still acknowledges it", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, nil)
		h.ledger.deadLettered = outage
		got := h.run(t, events.SQSEvent{Records: []events.SQSMessage{sqsMsg("m1", "begin-fail:k", 1)}})
		assert.Equal(t, deadLettered(deadletter.ReasonUnclassified), got["m1"])
	})
	t.Run("a redelivered mutating task without a receipt is effect_unknown", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, nil)
		// The first delivery started the effect and crashed (no failure reported).
		_, err := h.ledger.Begin(context.Background(), lkey("k"), "m1", "", testNow.Add(-time.Hour), time.Minute)
		require.NoError(t, err)
		require.NoError(t, h.ledger.StartEffect(context.Background(), lkey("k"), "m1", testNow.Add(-time.Hour)))
		got := h.run(t, events.SQSEvent{Records: []events.SQSMessage{sqsMsg("m1", "begin-mutate:k", 2)}})
		assert.Equal(t, deadLettered(deadletter.ReasonEffectUnknown), got["m1"])
		e, _, _ := h.ledger.Get(context.Background(), lkey("k"))
		assert.Equal(t, ledger.StateDeadLettered, e.State)
		assert.Equal(t, 1, e.DeadLetterCount)
	})
	t.Run("a key dead-lettered again after enough redrives is redrive_loop", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, nil)
		ctx := context.Background()
		for i := range 3 {
			got := h.run(t, events.SQSEvent{Records: []events.SQSMessage{sqsMsg(fmt.Sprint("m", i), "begin-fail:k", 1)}})
			want := deadLettered(deadletter.ReasonUnclassified)
			if i == 2 {
				want = deadLettered(deadletter.ReasonRedriveLoop) // redrive count 2 = RedriveLoopAfter
			}
			assert.Equal(t, want, got[fmt.Sprint("m", i)], "delivery %d", i)
			_, err := h.ledger.Redriven(ctx, lkey("k"), testNow)
			require.NoError(t, err)
		}
		e, _, _ := h.ledger.Get(ctx, lkey("k"))
		assert.Equal(t, 3, e.DeadLetterCount)
		assert.Equal(t, deadletter.ReasonRedriveLoop, e.LastReason)
		assert.Equal(t, []deadletter.Reason{deadletter.ReasonUnclassified, deadletter.ReasonUnclassified, deadletter.ReasonRedriveLoop}, h.sqs.sentReasons())
	})
}

func TestFIFO(t *testing.T) {
	t.Parallel()
	const fifoDLQ = "https://sqs.us-east-1.amazonaws.com/123456789012/agent-steps-dlq.fifo"
	grp := func(m events.SQSMessage, g string) events.SQSMessage {
		m.Attributes["MessageGroupId"] = g
		m.EventSourceARN = "arn:aws:sqs:us-east-1:123456789012:agent-steps.fifo"
		return m
	}
	batch := events.SQSEvent{Records: []events.SQSMessage{
		grp(sqsMsg("a1", "ok", 1), "A"),
		grp(sqsMsg("b1", "ok", 1), "B"),
		grp(sqsMsg("a2", "transient", 1), "A"),
		grp(sqsMsg("b2", "poison", 1), "B"),
		grp(sqsMsg("a3", "ok", 1), "A"),
		grp(sqsMsg("b3", "ok", 1), "B"),
		grp(sqsMsg("c1", "poison", 4), "C"),
		grp(sqsMsg("c2", "ok", 1), "C"),
	}}
	tests := []struct {
		name   string
		poison FIFOPoison
		want   map[string]outcome
	}{
		{name: "dead_letter", poison: FIFOPoisonDeadLetter, want: map[string]outcome{
			"a1": acked, "b1": acked, "a2": retried, "b2": deadLettered(deadletter.ReasonSchemaInvalid),
			"a3": retried /* held behind a2 */, "b3": acked, "c1": deadLettered(deadletter.ReasonSchemaInvalid), "c2": acked,
		}},
		{name: "hold_group", poison: FIFOPoisonHoldGroup, want: map[string]outcome{
			"a1": acked, "b1": acked, "a2": retried, "b2": retried /* held */, "a3": retried, "b3": retried,
			"c1": deadLettered(deadletter.ReasonSchemaInvalid) /* last receive */, "c2": acked,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, func(c *Config) { c.FIFO, c.DLQURL, c.FIFOPoison = true, fifoDLQ, tt.poison })
			ev := events.SQSEvent{Records: append([]events.SQSMessage(nil), batch.Records...)}
			assert.Equal(t, tt.want, h.run(t, ev))
			for _, in := range h.sqs.sent {
				assert.NotEmpty(t, aws.ToString(in.MessageGroupId))
				assert.True(t, strings.HasPrefix(aws.ToString(in.MessageDeduplicationId), "dlq-"))
			}
		})
	}
	t.Run("a failed dead-letter send holds the group", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, func(c *Config) { c.FIFO, c.DLQURL = true, fifoDLQ })
		h.sqs.send = fail
		got := h.run(t, events.SQSEvent{Records: []events.SQSMessage{grp(sqsMsg("x1", "poison", 1), "X"), grp(sqsMsg("x2", "ok", 1), "X")}})
		assert.Equal(t, map[string]outcome{"x1": retried, "x2": retried}, got)
	})
}

func TestNewFailsFast(t *testing.T) {
	t.Parallel()
	valid := func() Config {
		return Config{Handler: scripted, SQS: &fakeSQS{}, DLQURL: testDLQ, MaxReceiveCount: 4, Pipeline: "p"}
	}
	tests := []struct {
		name    string
		mod     func(*Config)
		wantErr string // "" for a valid config
	}{
		{name: "valid", mod: func(*Config) {}},
		{name: "no DLQ", mod: func(c *Config) { c.DLQURL = "" }, wantErr: "DLQURL is required"},
		{name: "no SQS client", mod: func(c *Config) { c.SQS = nil }, wantErr: "SQS is required"},
		{name: "no handler", mod: func(c *Config) { c.Handler = nil }, wantErr: "Handler is required"},
		{name: "standard DLQ for a FIFO queue", mod: func(c *Config) { c.FIFO = true }, wantErr: "needs a FIFO DLQ"},
		{name: "no max receive count", mod: func(c *Config) { c.MaxReceiveCount = 0 }, wantErr: "MaxReceiveCount 0"},
		{name: "no pipeline", mod: func(c *Config) { c.Pipeline = "" }, wantErr: "Pipeline is required"},
		{name: "bad fifo poison", mod: func(c *Config) { c.FIFOPoison = "drop" }, wantErr: "FIFOPoison"},
		{name: "bad backoff", mod: func(c *Config) { c.Backoff = Backoff{Base: time.Minute, Max: time.Second} }, wantErr: "Backoff"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := valid()
			tt.mod(&cfg)
			p, err := New(cfg)
			if tt.wantErr == "" {
				require.NoError(t, err)
				require.NotNil(t, p)
				return
			}
			require.ErrorIs(t, err, ErrConfig)
			assert.ErrorContains(t, err, tt.wantErr)
			assert.Nil(t, p)
		})
	}
}

func TestMetricsAndLogs(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.run(t, events.SQSEvent{Records: []events.SQSMessage{
		sqsMsg("ok1", "ok", 1), sqsMsg("ok2", "ok", 1), sqsMsg("t", "transient", 1),
		sqsMsg("p1", "poison", 1), sqsMsg("p2", "poison", 1), sqsMsg("x", "policy", 1),
	}})
	m := parseEMF(t, h.metrics.String())
	require.Len(t, m, 3, "one document for the pipeline, one per reason")
	aws0 := m[0]["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)
	assert.Equal(t, "AgentDLQ", aws0["Namespace"])
	assert.Equal(t, []any{[]any{"Pipeline"}}, aws0["Dimensions"])
	assert.Equal(t, "agent-tasks", m[0]["Pipeline"])
	assert.Equal(t, 2.0, m[0]["Processed"])
	assert.Equal(t, 1.0, m[0]["Retried"])
	assert.Equal(t, 3.0, m[0]["DeadLettered"])
	byReason := map[string]float64{}
	for _, doc := range m[1:] {
		dims := doc["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)["Dimensions"]
		assert.Equal(t, []any{[]any{"Pipeline", "Reason"}}, dims)
		byReason[doc["Reason"].(string)] = doc["DeadLettered"].(float64)
	}
	assert.Equal(t, map[string]float64{"schema_invalid": 2, "policy_limit": 1}, byReason)

	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(h.logs.String()), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &rec))
		lines = append(lines, rec)
	}
	require.Len(t, lines, 4, "one log line per failed record, none for the successes")
	for _, l := range lines {
		for _, k := range []string{"message_id", "queue", "reason", "attempt", "trace_id"} {
			assert.Contains(t, l, k)
		}
		assert.NotContains(t, []string{"ok1", "ok2"}, l["message_id"])
		assert.Equal(t, "agent-tasks", l["queue"])
	}
}

func parseEMF(t *testing.T, s string) []map[string]any {
	t.Helper()
	var out []map[string]any
	dec := json.NewDecoder(strings.NewReader(s))
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			return out
		} else {
			require.NoError(t, err)
		}
		out = append(out, doc)
	}
}

// TestConcurrencyKeepsOutcomes: handling records (standard) or message groups
// (FIFO) concurrently gives every record the outcome the sequential run
// gives it, and the same metrics. (Two deliveries of one key in the same
// batch may differ: handled at once, the second finds the key leased and is
// retried, where the sequential run acknowledges it as a duplicate.)
func TestConcurrencyKeepsOutcomes(t *testing.T) {
	t.Parallel()
	const fifoDLQ = "https://sqs.us-east-1.amazonaws.com/123456789012/agent-steps-dlq.fifo"
	actions := []string{"ok", "transient", "poison", "begin:k%d", "panic", "ok", "auth", "policy", "begin-mutate-timeout:j%d", "ok", "throttled", "begin-fail:f%d"}
	build := func(fifo bool) events.SQSEvent {
		var ev events.SQSEvent
		for i := range 60 {
			body := actions[i%len(actions)]
			if strings.Contains(body, "%d") {
				body = fmt.Sprintf(body, i)
			}
			m := sqsMsg(fmt.Sprintf("m%02d", i), body, 1+i%5)
			if fifo {
				m.Attributes["MessageGroupId"] = fmt.Sprint("g", i%7)
			}
			ev.Records = append(ev.Records, m)
		}
		return ev
	}
	for _, fifo := range []bool{false, true} {
		t.Run(fmt.Sprint("fifo=", fifo), func(t *testing.T) {
			t.Parallel()
			run := func(concurrency int) (map[string]outcome, map[string]any) {
				h := newHarness(t, func(c *Config) {
					c.Concurrency = concurrency
					if fifo {
						c.FIFO, c.DLQURL = true, fifoDLQ
					}
				})
				got := h.run(t, build(fifo))
				return got, parseEMF(t, h.metrics.String())[0]
			}
			seq, seqMetrics := run(1)
			par, parMetrics := run(8)
			assert.Equal(t, seq, par)
			delete(seqMetrics, "_aws")
			delete(parMetrics, "_aws")
			assert.Equal(t, seqMetrics, parMetrics)
			assert.NotZero(t, seqMetrics["DeadLettered"])
			assert.NotZero(t, seqMetrics["Retried"])
			assert.NotZero(t, seqMetrics["Processed"])
		})
	}
}

// TestOutOfTime: records are not started once the invocation's deadline is
// within DeadlineMargin; they are reported, so that a Lambda timeout does
// not fail the whole batch.
func TestOutOfTime(t *testing.T) {
	t.Parallel()
	clock := testNow
	h := newHarness(t, func(c *Config) {
		c.DeadlineMargin = 2 * time.Second
		c.Handler = func(ctx context.Context, r Record) error {
			clock = clock.Add(time.Second) // each record takes a second
			return nil
		}
		c.Now = func() time.Time { return clock }
	})
	ctx, cancel := context.WithDeadline(context.Background(), testNow.Add(5*time.Second))
	defer cancel()
	ev := events.SQSEvent{}
	for i := range 6 {
		ev.Records = append(ev.Records, sqsMsg(fmt.Sprint("m", i), "ok", 1))
	}
	resp, err := h.p.Handle(ctx, ev)
	require.NoError(t, err)
	// m0..m2 start at 0, 1 and 2 s; from 3 s on the deadline is within 2 s.
	var got []string
	for _, f := range resp.BatchItemFailures {
		got = append(got, f.ItemIdentifier)
	}
	assert.Equal(t, []string{"m3", "m4", "m5"}, got)
	assert.Contains(t, h.logs.String(), `"msg":"invocation out of time: records not started, reported as batch item failures","records":3`)
}

func TestPanicStackIsTheSameFromTheCache(t *testing.T) {
	t.Parallel()
	p := &Processor{handler: func(context.Context, Record) error { panic("boom") }}
	var stacks []string
	for range 2 {
		err := p.call(context.Background(), Record{})
		pe, ok := errors.AsType[*panicError](err)
		require.True(t, ok, "a panic is a *panicError")
		stacks = append(stacks, pe.stack())
		assert.Equal(t, pe.format(), stacks[len(stacks)-1], "the kept text is the formatted one")
	}
	assert.Equal(t, stacks[0], stacks[1])
	assert.Contains(t, stacks[0], "TestPanicStackIsTheSameFromTheCache")
	// From the panic down to the processor's call, no further.
	lines := strings.Split(strings.TrimSpace(stacks[0]), "\n")
	require.GreaterOrEqual(t, len(lines), 4)
	assert.Equal(t, "github.com/agentdlq/agentdlq/functions/batch.(*Processor).call", lines[len(lines)-2])
	assert.NotContains(t, stacks[0], "testing.tRunner")
}

func TestProcessorOwnClassification(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		body    string
		receive int
		want    outcome
	}{
		{name: "own transient error with budget left", body: "quota", receive: 1, want: retried},
		{name: "own transient error on the last receive", body: "quota", receive: 4, want: deadLettered(deadletter.ReasonBudgetExhausted)},
		{name: "own policy error at once", body: "refused", receive: 1, want: deadLettered(deadletter.ReasonPolicyLimit)},
		{name: "unknown to the hook: built-in rules", body: "throttled", receive: 1, want: retried},
		{name: "typed outcomes are not asked", body: "poison", receive: 1, want: deadLettered(deadletter.ReasonSchemaInvalid)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, func(c *Config) { c.Classify = ownClassify })
			got := h.run(t, events.SQSEvent{Records: []events.SQSMessage{sqsMsg("m1", tt.body, tt.receive)}})
			assert.Equal(t, tt.want, got["m1"])
		})
	}
	// Without the hook the same errors are unclassified: dead-lettered at once.
	h := newHarness(t, nil)
	got := h.run(t, events.SQSEvent{Records: []events.SQSMessage{sqsMsg("m1", "quota", 1), sqsMsg("m2", "refused", 1)}})
	assert.Equal(t, map[string]outcome{"m1": deadLettered(deadletter.ReasonUnclassified), "m2": deadLettered(deadletter.ReasonUnclassified)}, got)
}

// TestLedgerPanics: a panic in any ledger call is that call's failure, as a
// handler's panic is: Handle returns, with one goroutine or eight, and every
// record is acknowledged, retried or dead-lettered exactly once.
func TestLedgerPanics(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		panic   func(*fakeLedger)
		body    string
		receive int
		want    outcome
		sent    int // dead letters sent for the record
	}{
		{"Begin: a ledger outage, retried", func(l *fakeLedger) { l.begin = panics }, "begin-mutate:k", 1, retried, 0},
		{"Begin on the last receive: still retried, never dead-lettered", func(l *fakeLedger) { l.begin = panics }, "begin-mutate:k", 4, retried, 0},
		{"StartEffect: retried, the mutating call not made", func(l *fakeLedger) { l.startEffect = panics }, "begin-mutate-timeout:k", 1, retried, 0},
		{"Complete: retried", func(l *fakeLedger) { l.complete = panics }, "begin:k", 1, retried, 0},
		{"DeadLettered: the dead letter sent once and acknowledged", func(l *fakeLedger) { l.deadLettered = panics }, "begin-fail:k", 1, deadLettered(deadletter.ReasonUnclassified), 1},
		{"Release: retried", func(l *fakeLedger) { l.release = panics }, "transient-begin:k", 1, retried, 0},
	}
	for _, tt := range tests {
		for _, concurrency := range []int{1, 8} {
			t.Run(fmt.Sprintf("%s/concurrency=%d", tt.name, concurrency), func(t *testing.T) {
				t.Parallel()
				h := newHarness(t, func(c *Config) {
					c.Concurrency = concurrency
					c.Handler = func(ctx context.Context, r Record) error {
						if key, ok := strings.CutPrefix(string(r.Body()), "transient-begin:"); ok {
							if err := r.Begin(ctx, "t", key, "", true); err != nil {
								return err
							}
							return Transient(errors.New("upstream 503"))
						}
						return scripted(ctx, r)
					}
				})
				tt.panic(h.ledger)
				var ev events.SQSEvent
				for i := range 4 {
					ev.Records = append(ev.Records, sqsMsg(fmt.Sprint("m", i), tt.body+fmt.Sprint(i), tt.receive))
				}
				got := h.run(t, ev)
				for i := range 4 {
					assert.Equal(t, tt.want, got[fmt.Sprint("m", i)])
				}
				assert.Len(t, h.sqs.sent, 4*tt.sent)
				assert.Contains(t, h.logs.String(), "panicked", "the panic is logged as the call's failure")
			})
		}
	}
}

// TestOversizedDeadLetterIsSentOnce: metadata too large for dlq_meta (the
// review's 18607-byte case) is reduced and sent on this receive, never a
// batch item failure that fires DLQSendFailures on every receive; a claim
// check that cannot be stored does not hold it back.
func TestOversizedDeadLetterIsSentOnce(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		put  behaviour
		// wantEvidence is whether dlq_meta points to a stored claim check.
		wantEvidence bool
	}{
		{"claim check stored", ok, true},
		{"claim check refused", fail, false},
		{"claim check client panics", panics, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			store := &fakeS3{put: tt.put}
			h := newHarness(t, func(c *Config) { c.Evidence, c.EvidenceBucket = store, "evals" })
			m := sqsMsg("m1", "poison", 1)
			for i := range 10 {
				m.MessageAttributes[fmt.Sprintf("a%02d", i)] = events.SQSMessageAttribute{DataType: "String", StringValue: aws.String(strings.Repeat("v", 9000))}
			}
			got := h.run(t, events.SQSEvent{Records: []events.SQSMessage{m}})
			assert.Equal(t, deadLettered(deadletter.ReasonSchemaInvalid), got["m1"])
			require.Len(t, h.sqs.sent, 1)
			sent := h.sqs.sent[0]
			assert.Equal(t, "poison", aws.ToString(sent.MessageBody), "the body byte for byte")
			meta, err := deadletter.ParseMeta([]byte(aws.ToString(sent.MessageAttributes[deadletter.AttrMeta].StringValue)))
			require.NoError(t, err)
			assert.Equal(t, []deadletter.Reduction{deadletter.ReducedHistory, deadletter.ReducedFolded}, meta.Reduced)
			if tt.wantEvidence {
				assert.Equal(t, "s3://evals/agent-tasks/evidence/2026-11-29/m1.json", meta.Evidence)
				assert.Equal(t, []string{"agent-tasks/evidence/2026-11-29/m1.json"}, store.keys)
			} else {
				assert.Empty(t, meta.Evidence, "no pointer to a claim check that is not there")
				assert.Contains(t, h.logs.String(), "claim check could not be stored")
			}
			assert.Zero(t, parseEMF(t, h.metrics.String())[0]["DLQSendFailures"])
		})
	}
}

// hexSHA256 is the dlq_meta input_sha256 of body, computed apart from the processor.
func hexSHA256(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// attrsOf is a sent dead letter's attributes as deadletter decodes them.
func attrsOf(in *sqs.SendMessageInput) map[string]deadletter.Attribute {
	attrs := map[string]deadletter.Attribute{}
	for name, v := range in.MessageAttributes {
		attrs[name] = deadletter.Attribute{DataType: aws.ToString(v.DataType), StringValue: aws.ToString(v.StringValue), BinaryValue: v.BinaryValue}
	}
	return attrs
}
