package sampleworker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/functions/batch"
	"github.com/agentdlq/agentdlq/internal/sqsio"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/testkit/localtest"
)

var _ batch.SQSAPI = (*sqsio.Recorder)(nil)

const testdata = "../../events/testdata"

// expected is events/testdata/expected.json.
type expected struct {
	MaxReceiveCount int `json:"max_receive_count"`
	Fixtures        []struct {
		File       string `json:"file"`
		FIFO       bool   `json:"fifo"`
		EventError bool   `json:"event_error"`
		Records    []struct {
			MessageID string            `json:"message_id"`
			Outcome   string            `json:"outcome"` // ok, retry, dead_letter
			Reason    deadletter.Reason `json:"reason"`
			Why       string            `json:"why"`
		} `json:"records"`
	} `json:"fixtures"`
}

func testPipeline(t testing.TB, fifo bool, maxReceive int) (*pipeline.Pipeline, pipeline.Queues) {
	t.Helper()
	p := &pipeline.Pipeline{Name: "fixtures", Owner: "test", FIFO: fifo, MaxReceiveCount: maxReceive}
	p.ApplyDefaults()
	require.NoError(t, p.Validate())
	q := pipeline.Queues{
		HotURL: "http://127.0.0.1:1/000000000000/" + p.HotQueueName(), HotARN: "arn:aws:sqs:us-east-1:000000000000:" + p.HotQueueName(),
		DLQURL: "http://127.0.0.1:1/000000000000/" + p.DLQName(), DLQARN: "arn:aws:sqs:us-east-1:000000000000:" + p.DLQName(),
		FIFO: fifo,
	}
	return p, q
}

func newTestWorker(t testing.TB, fifo bool, maxReceive int, rec *sqsio.Recorder) *Worker {
	t.Helper()
	p, q := testPipeline(t, fifo, maxReceive)
	w, err := New(Config{
		Pipeline: p, Queues: q, SQS: rec, Ledger: ledger.NewMemory(), WorkerVersion: "test",
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), Metrics: io.Discard,
		Now:  func() time.Time { return time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC) },
		Rand: func(n int64) int64 { return 0 },
	})
	require.NoError(t, err)
	return w
}

func loadEvent(t testing.TB, name string) (events.SQSEvent, []byte) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testdata, name))
	require.NoError(t, err)
	var ev events.SQSEvent
	require.NoError(t, json.Unmarshal(data, &ev))
	return ev, data
}

// TestFixtures runs every fixture through the real handler and compares
// each record's outcome with expected.json.
func TestFixtures(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join(testdata, "expected.json"))
	require.NoError(t, err)
	var exp expected
	require.NoError(t, json.Unmarshal(data, &exp))
	require.NotEmpty(t, exp.Fixtures)

	files, err := filepath.Glob(filepath.Join(testdata, "sqs-*.json"))
	require.NoError(t, err)
	assert.Len(t, exp.Fixtures, len(files), "every fixture file has its expected outcomes")

	for _, fx := range exp.Fixtures {
		t.Run(fx.File, func(t *testing.T) {
			t.Parallel()
			ev, _ := loadEvent(t, fx.File)
			rec := &sqsio.Recorder{}
			w := newTestWorker(t, fx.FIFO, exp.MaxReceiveCount, rec)
			resp, err := w.Handle(context.Background(), ev)
			if fx.EventError {
				require.ErrorIs(t, err, batch.ErrNotSQSEvent)
				assert.Empty(t, resp.BatchItemFailures)
				assert.Empty(t, rec.Sent())
				return
			}
			require.NoError(t, err)

			got := map[string]string{}
			for _, f := range resp.BatchItemFailures {
				got[f.ItemIdentifier] = "retry"
			}
			dls, err := rec.DeadLetters()
			require.NoError(t, err)
			bodies := map[string]string{}
			for _, r := range ev.Records {
				bodies[r.MessageId] = r.Body
			}
			for _, dl := range dls {
				require.NotContains(t, got, dl.MessageID, "a record is retried or dead-lettered, not both")
				got[dl.MessageID] = "dead_letter:" + string(dl.Reason)
				assert.Equal(t, bodies[dl.MessageID], dl.Body, "the dead letter keeps the body byte for byte")
				assert.LessOrEqual(t, len(dl.Attributes), deadletter.MaxAttributes)
				for _, secret := range []string{"sk-test-0123456789", "ops@example.com"} {
					assert.NotContains(t, string(dl.Meta), secret, "dlq_meta is redacted")
				}
			}
			require.Len(t, ev.Records, len(fx.Records))
			for i, r := range fx.Records {
				require.Equal(t, r.MessageID, ev.Records[i].MessageId, "expected.json lists the records in event order")
				want := r.Outcome
				if r.Outcome == "dead_letter" {
					want += ":" + string(r.Reason)
				}
				have, ok := got[r.MessageID]
				if !ok {
					have = "ok"
				}
				assert.Equal(t, want, have, "%s: %s", r.MessageID, r.Why)
			}
		})
	}
}

// TestTenAttributesFoldAndRestore checks that a dead letter of a message
// with ten attributes restores all ten.
func TestTenAttributesFoldAndRestore(t *testing.T) {
	t.Parallel()
	ev, _ := loadEvent(t, "sqs-attributes-10.json")
	rec := &sqsio.Recorder{}
	w := newTestWorker(t, false, 4, rec)
	_, err := w.Handle(context.Background(), ev)
	require.NoError(t, err)
	dls, err := rec.DeadLetters()
	require.NoError(t, err)
	require.Len(t, dls, 1)
	_, original, err := deadletter.DecodeDeadLetter(dls[0].Attributes)
	require.NoError(t, err)
	var src events.SQSMessage
	for _, r := range ev.Records {
		if r.MessageId == dls[0].MessageID {
			src = r
		}
	}
	require.Len(t, original, len(src.MessageAttributes))
	for name, a := range src.MessageAttributes {
		assert.Equal(t, a.DataType, original[name].DataType, name)
		if a.StringValue != nil {
			assert.Equal(t, *a.StringValue, original[name].StringValue, name)
		}
		assert.Equal(t, a.BinaryValue, original[name].BinaryValue, name)
	}
}

func TestParseFault(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    string
		want    *Fault // nil: no fault
		wantErr bool
	}{
		{name: "no fault", args: `{"q":"go"}`},
		{name: "the word fault as a value", args: `{"q":"fault"}`},
		{name: "a word ending in fault", args: `{"mode":"default","fault_x":1}`},
		{name: "fault at the start", args: `{"fault":{"kind":"panic"}}`, want: &Fault{Kind: "panic"}},
		{name: "transient", args: `{"q":1,"fault":{"retryable":true,"status":503,"error":"x","until_receive":2}}`, want: &Fault{Retryable: true, Status: 503, Error: "x", UntilReceive: 2}},
		{name: "kind", args: `{"fault":{"kind":"auth","code":"ExpiredToken"}}`, want: &Fault{Kind: "auth", Code: "ExpiredToken"}},
		{name: "fault of the wrong shape", args: `{"fault":"boom"}`, wantErr: true},
		{name: "a fault field of the wrong type", args: `{"fault":{"status":"503"},"q":1}`, wantErr: true},
		{name: "a nested fault key is not args.fault", args: `{"context":{"fault":{"kind":"panic"}},"q":1}`},
		{name: "fault after a nested object", args: `{"context":{"a":{}} , "fault" : {"kind":"auth","code":"AccessDenied"}}`, want: &Fault{Kind: "auth", Code: "AccessDenied"}},
		{name: "a brace in a string before fault", args: `{"q":"{","fault":{"kind":"policy_limit"}}`, want: &Fault{Kind: "policy_limit"}},
		{name: "fault as a value then as a key", args: `{"tag":"fault","fault":{"retryable":true,"status":429}}`, want: &Fault{Retryable: true, Status: 429}},
		// Other producers' spellings settle onto the same kinds.
		{name: "type for kind", args: `{"fault":{"type":"guardrail_reject"}}`, want: &Fault{Kind: "guardrail_reject", Type: "guardrail_reject"}},
		{name: "timeout alias", args: `{"fault":{"kind":"timeout"}}`, want: &Fault{Kind: FaultTimeoutAfterEffect}},
		{name: "effect_unknown alias", args: `{"fault":{"kind":"EFFECT_UNKNOWN"}}`, want: &Fault{Kind: FaultTimeoutAfterEffect}},
		{name: "authorization alias", args: `{"fault":{"kind":"authorization","code":"ExpiredToken"}}`, want: &Fault{Kind: FaultAuth, Code: "ExpiredToken"}},
		{name: "403 without a kind is auth", args: `{"fault":{"status":403,"error":"denied"}}`, want: &Fault{Kind: FaultAuth, Status: 403, Error: "denied", Code: "AccessDenied"}},
		{name: "401 without a kind is auth", args: `{"fault":{"retryable":false,"status":401}}`, want: &Fault{Kind: FaultAuth, Status: 401, Code: "UnrecognizedClientException"}},
		{name: "a retryable 403 stays transient", args: `{"fault":{"retryable":true,"status":403}}`, want: &Fault{Retryable: true, Status: 403}},
		{name: "rate limited", args: `{"fault":{"kind":"rate_limited","retry_after_seconds":30,"until_receive":3}}`, want: &Fault{Kind: FaultRateLimited, RetryAfterSeconds: 30, UntilReceive: 3}},
		{name: "throttled alias", args: `{"fault":{"type":"Throttled"}}`, want: &Fault{Kind: FaultRateLimited, Type: "Throttled"}},
		{name: "a retryable 429 with Retry-After", args: `{"fault":{"retryable":true,"status":429,"retry_after_seconds":5}}`, want: &Fault{Retryable: true, Status: 429, RetryAfterSeconds: 5}},
		{name: "nested path normalizes too", args: `{"context":{"fault":1},"fault":{"type":"circuit_open"}}`, want: &Fault{Kind: FaultDependencyOpen, Type: "circuit_open"}},
		// The walk over the top-level keys (mayHaveFaultKey).
		{name: "a closing brace in a string does not lift a nested fault", args: `{"q":"}","x":{"fault":{"kind":"panic"}}}`},
		{name: "an escaped quote before fault", args: `{"q":"a\"b\\","fault":{"kind":"auth"}}`, want: &Fault{Kind: FaultAuth}},
		{name: "fault after an array of objects", args: `{"a":[{"b":"}"},{"fault":1}],"fault":{"kind":"panic"}}`, want: &Fault{Kind: FaultPanic}},
		// Keys read as JSON reads them (and as DecodeTask reads the task's):
		// escapes resolved, exact, the last of duplicates winning.
		{name: "an escaped fault key", args: `{"q":1,"f\u0061ult":{"kind":"panic"}}`, want: &Fault{Kind: FaultPanic}},
		{name: "an escaped fault key, last letter", args: `{"faul\u0074":{"retryable":true,"status":429}}`, want: &Fault{Retryable: true, Status: 429}},
		{name: "every letter escaped", args: `{"\u0066\u0061\u0075\u006C\u0074":{"kind":"policy_limit"}}`, want: &Fault{Kind: FaultPolicyLimit}},
		{name: "an escape that is not fault", args: `{"f\u0061ulty":{"kind":"panic"},"caf\u00e9":1}`},
		{name: "the last of two faults wins", args: `{"fault":{"kind":"panic"},"fault":{"kind":"auth"}}`, want: &Fault{Kind: FaultAuth}},
		{name: "a null fault after a fault", args: `{"fault":{"kind":"panic"},"fault":null}`},
		{name: "a fault after a null one", args: `{"fault":null,"q":2,"fault":{"kind":"panic"}}`, want: &Fault{Kind: FaultPanic}},
		{name: "an escaped duplicate wins", args: `{"fault":{"kind":"panic"},"f\u0061ult":{"kind":"policy_limit"}}`, want: &Fault{Kind: FaultPolicyLimit}},
		{name: "Fault is not fault", args: `{"Fault":{"kind":"panic"}}`},
		{name: "Fault is not fault, with fault a value", args: `{"Fault":{"kind":"panic"},"x":"fault"}`},
		{name: "FAULT escaped is not fault", args: `{"F\u0041ULT":{"kind":"panic"},"y":"\u00e9"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseFault([]byte(tt.args))
			if tt.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestNewFailsFast(t *testing.T) {
	t.Parallel()
	p, q := testPipeline(t, false, 4)
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{name: "no pipeline", cfg: Config{Queues: q, SQS: &sqsio.Recorder{}, Ledger: ledger.NewMemory()}, wantErr: "Pipeline is required"},
		{name: "no ledger", cfg: Config{Pipeline: p, Queues: q, SQS: &sqsio.Recorder{}}, wantErr: "Ledger is required"},
		{name: "no DLQ", cfg: Config{Pipeline: p, Queues: pipeline.Queues{HotURL: q.HotURL}, SQS: &sqsio.Recorder{}, Ledger: ledger.NewMemory()}, wantErr: "DLQURL is required"},
		{name: "FIFO mismatch", cfg: Config{Pipeline: p, Queues: pipeline.Queues{DLQURL: q.DLQURL, FIFO: true}, SQS: &sqsio.Recorder{}, Ledger: ledger.NewMemory()}, wantErr: "fifo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w, err := New(tt.cfg)
			require.ErrorIs(t, err, batch.ErrConfig)
			assert.ErrorContains(t, err, tt.wantErr)
			assert.Nil(t, w)
		})
	}
}

// TestRedeliveryIsIdempotent: a retried transient task that recovers is
// done once; a redelivery after done is a no-op.
func TestRedeliveryIsIdempotent(t *testing.T) {
	t.Parallel()
	ev, _ := loadEvent(t, "sqs-transient-recovers.json")
	rec := &sqsio.Recorder{}
	p, q := testPipeline(t, false, 4)
	var metrics strings.Builder
	w, err := New(Config{Pipeline: p, Queues: q, SQS: rec, Ledger: ledger.NewMemory(), Metrics: &metrics,
		Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	for range 2 {
		resp, err := w.Handle(context.Background(), ev)
		require.NoError(t, err)
		assert.Empty(t, resp.BatchItemFailures)
	}
	assert.Empty(t, rec.Sent())
	lines := strings.Split(strings.TrimSpace(metrics.String()), "\n")
	require.Len(t, lines, 2)
	assert.Contains(t, lines[0], `"Processed":2,`)
	assert.Contains(t, lines[1], `"Processed":0,`)
	assert.Contains(t, lines[1], `"DuplicatesSkipped":2}`, "the redelivery of done keys is a no-op")
}

func TestParsePipeline(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		json    string
		wantErr string // "" when valid
	}{
		{name: "minimal, defaults applied", json: `{"name":"agent-tasks","owner":"team","max_receive_count":4}`},
		{name: "empty", json: ``, wantErr: "pipeline JSON"},
		{name: "unknown field", json: `{"name":"agent-tasks","owner":"team","max_receive_count":4,"colour":"red"}`, wantErr: "unknown field"},
		{name: "invalid", json: `{"name":"agent-tasks","owner":"team","max_receive_count":9}`, wantErr: "max_receive_count 9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := ParsePipeline([]byte(tt.json))
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, 96, p.RetentionHours, "defaults applied")
			assert.Equal(t, 4, p.MaxReceiveCount)
		})
	}
}

// TestLeanPathSameAsHandle runs every fixture, and two generated mixes,
// through Handle (events.SQSEvent) and through Invoke (the lean path, the
// payload as the Lambda runtime hands it) and requires the same response,
// byte for byte, the same dead letters (every SendMessage input field) and
// the same visibility changes.
func TestLeanPathSameAsHandle(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(testdata, "sqs-*.json"))
	require.NoError(t, err)
	payloads := map[string][]byte{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		payloads[filepath.Base(f)] = data
	}
	if !testing.Short() {
		for _, mix := range [][2]int{{500, 40}, {200, 90}} {
			payloads[fmt.Sprintf("gen %d:%d", mix[0], mix[1])] = localtest.GenMix(t, mix[0], mix[1])
		}
	}
	records, deadLetters := 0, 0
	for name, data := range payloads {
		var ev events.SQSEvent
		require.NoError(t, json.Unmarshal(data, &ev), name)
		fifo := strings.Contains(name, "fifo")
		compat, lean := &sqsio.Recorder{}, &sqsio.Recorder{}
		resp, herr := newTestWorker(t, fifo, 4, compat).Handle(context.Background(), ev)
		out, ierr := newTestWorker(t, fifo, 4, lean).Invoke(context.Background(), bytes.Clone(data))
		if herr != nil {
			require.ErrorIs(t, ierr, batch.ErrNotSQSEvent, name)
			require.Empty(t, lean.Sent(), name)
			continue
		}
		require.NoError(t, ierr, name)
		want, err := json.Marshal(resp)
		require.NoError(t, err)
		require.Equal(t, string(want), string(out), "%s: the response", name)
		require.Equal(t, compat.Sent(), lean.Sent(), "%s: the dead letters", name)
		require.Equal(t, compat.VisibilityChanges(), lean.VisibilityChanges(), "%s: the visibility changes", name)
		records += len(ev.Records)
		deadLetters += len(lean.Sent())
	}
	t.Logf("%d events, %d records, %d dead letters the same on both paths", len(payloads), records, deadLetters)
	require.Greater(t, deadLetters, 10)
}

// TestLeanPathConcurrent runs a generated mix through Handle and Invoke with
// the Lambda entry's concurrency (LambdaConcurrency goroutines share the
// lean records): the same records retried and the same dead letters, each
// the same input, in whatever order the goroutines sent them. Run it with
// -race.
func TestLeanPathConcurrent(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs events/gen")
	}
	data := localtest.GenMix(t, 400, 40)
	var ev events.SQSEvent
	require.NoError(t, json.Unmarshal(data, &ev))
	worker := func(rec *sqsio.Recorder) *Worker {
		p, q := testPipeline(t, false, 4)
		w, err := New(Config{
			Pipeline: p, Queues: q, SQS: rec, Ledger: ledger.NewMemory(), WorkerVersion: "test",
			Logger: slog.New(batch.NewLogHandler(io.Discard, nil)), Metrics: io.Discard, Concurrency: LambdaConcurrency,
			Now:  func() time.Time { return time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC) },
			Rand: func(n int64) int64 { return 0 },
		})
		require.NoError(t, err)
		return w
	}
	compat, lean := &sqsio.Recorder{}, &sqsio.Recorder{}
	resp, err := worker(compat).Handle(context.Background(), ev)
	require.NoError(t, err)
	raw, err := worker(lean).Invoke(context.Background(), bytes.Clone(data))
	require.NoError(t, err)
	var leanResp events.SQSEventResponse
	require.NoError(t, json.Unmarshal(raw, &leanResp))
	assert.Equal(t, resp.BatchItemFailures, leanResp.BatchItemFailures, "in event order on both paths")
	byID := func(r *sqsio.Recorder) map[string]*sqs.SendMessageInput {
		m := map[string]*sqs.SendMessageInput{}
		for _, in := range r.Sent() {
			meta, err := deadletter.ParseMeta([]byte(*in.MessageAttributes[deadletter.AttrMeta].StringValue))
			require.NoError(t, err)
			m[meta.MessageID] = in
		}
		return m
	}
	want, got := byID(compat), byID(lean)
	require.Greater(t, len(want), 100)
	require.Equal(t, len(want), len(got))
	for id, in := range want {
		require.Equal(t, in, got[id], "dead letter of %s", id)
	}
}

// TestRateLimitedFault: a rate_limited task is retried after its
// retry_after_seconds: hidden for that long (the receive counts), or, with
// the pipeline's retry_after_requeues, sent back with that delay and
// acknowledged (the receive does not count); from until_receive on it
// succeeds.
func TestRateLimitedFault(t *testing.T) {
	t.Parallel()
	body := `{"task_id":"t1","run_id":"r1","tenant":"acme","idempotency_key":"acme:r1:t1","tool":"web.search","tool_version":"1",` +
		`"trace_id":"1-abc","created_at":"2026-11-29T12:00:00Z","schema_version":1,"args":{"query":"q","fault":{"kind":"rate_limited","retry_after_seconds":7,"until_receive":3}}}`
	msg := func(receive int) events.SQSEvent {
		return events.SQSEvent{Records: []events.SQSMessage{{MessageId: fmt.Sprint("m", receive), ReceiptHandle: "rh", Body: body, EventSource: "aws:sqs",
			EventSourceARN: "arn:aws:sqs:us-east-1:000000000000:fixtures", Attributes: map[string]string{"ApproximateReceiveCount": fmt.Sprint(receive)}}}}
	}
	for _, tt := range []struct {
		name     string
		requeues int
		receive  int
		want     string // retried, requeued, ok
	}{
		{name: "counted: hidden for the Retry-After", receive: 1, want: "retried"},
		{name: "requeued where the pipeline allows it", requeues: 2, receive: 1, want: "requeued"},
		{name: "the provider recovered", requeues: 2, receive: 3, want: "ok"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, q := testPipeline(t, false, 4)
			p.RetryAfterRequeues = tt.requeues
			require.NoError(t, p.Validate())
			rec := &sqsio.Recorder{}
			w, err := New(Config{Pipeline: p, Queues: q, SQS: rec, Ledger: ledger.NewMemory(),
				Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), Metrics: io.Discard})
			require.NoError(t, err)
			resp, err := w.Handle(context.Background(), msg(tt.receive))
			require.NoError(t, err)
			switch tt.want {
			case "retried":
				require.Len(t, resp.BatchItemFailures, 1)
				require.Len(t, rec.VisibilityChanges(), 1)
				assert.Equal(t, int32(7), rec.VisibilityChanges()[0].VisibilityTimeout)
				assert.Empty(t, rec.Sent())
			case "requeued":
				assert.Empty(t, resp.BatchItemFailures)
				require.Len(t, rec.Sent(), 1)
				in := rec.Sent()[0]
				assert.Equal(t, q.HotURL, aws.ToString(in.QueueUrl))
				assert.Equal(t, int32(7), in.DelaySeconds)
				assert.Equal(t, body, aws.ToString(in.MessageBody))
			case "ok":
				assert.Empty(t, resp.BatchItemFailures)
				assert.Empty(t, rec.Sent())
			}
		})
	}
}
