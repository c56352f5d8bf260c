package console

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/testkit/sqsfake"
	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/store"
)

// t0 is the fake clock's now.
var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

var quiet = slog.New(slog.NewJSONHandler(io.Discard, nil))

func testPipeline(t testing.TB) *pipeline.Pipeline {
	t.Helper()
	f, err := pipeline.Load(filepath.Join("..", pipeline.DefaultFile))
	require.NoError(t, err)
	p, err := f.Get("agent-tasks")
	require.NoError(t, err)
	cp := *p
	return &cp
}

var _ SQSAPI = (*sqsfake.Fake)(nil)

// newFakeSQS is the shared in-memory SQS (testkit/sqsfake) with one queue,
// which every URL reaches: it carries the DLQ's tags and says it holds
// depth letters (ApproximateNumberOfMessages), though it holds none. It
// fails the test on a receive (pages never scan: a test that scans clears
// NoReceive) and on anything that would change a queue.
func newFakeSQS(t testing.TB, depth string, tags map[string]string) *sqsfake.Fake {
	f := sqsfake.New(nil)
	f.T, f.AnyURL, f.NoReceive, f.ReadOnly = t, true, true, true
	f.AddQueue(&sqsfake.Queue{URL: "http://q/dlq", Tags: tags,
		Attributes: map[string]string{"ApproximateNumberOfMessages": depth, "ApproximateNumberOfMessagesNotVisible": "0"}})
	return f
}

// body is an agent task with a secret in its args.
func body(key, tool, tenant string) string {
	return fmt.Sprintf(`{"task_id":"task-%[1]s","run_id":"run-1","tenant":%[3]q,"idempotency_key":%[1]q,"tool":%[2]q,"tool_version":"1.2.0","trace_id":"trace-%[1]s","created_at":"2026-11-29T10:00:00Z","schema_version":1,"args":{"q":"weather in Oslo","api_key":"sk-live-SECRET-%[1]s"}}`, key, tool, tenant)
}

// letters makes n dead letters the way the worker writes them, spread over
// reasons and fingerprints: 3/4 budget_exhausted (two error signatures),
// 1/4 schema_invalid.
func letters(t testing.TB, n int) []triage.Message {
	t.Helper()
	out := make([]triage.Message, 0, n)
	for i := range n {
		key := fmt.Sprintf("key-%06d", i)
		reason, class, errText := deadletter.ReasonBudgetExhausted, deadletter.ClassTransient, "search API 503 Service Unavailable"
		switch {
		case i%4 == 3:
			reason, class, errText = deadletter.ReasonSchemaInvalid, deadletter.ClassPoison, "args.q: expected string <script>alert(1)</script>"
		case i%4 == 2:
			errText = "search API 429 Too Many Requests"
		}
		at := t0.Add(-time.Duration(i%300) * time.Minute)
		tool := "web.search"
		if n >= 10_000 { // a deep DLQ: about 1,500 groups
			tool = fmt.Sprintf("tool-%03d", i%500)
		}
		m := deadletter.Meta{
			Version: deadletter.MetaVersion, Class: class, Reason: reason, NextAction: reason.NextAction(), Attempts: 3,
			FirstFailureAt: at.Add(-2 * time.Minute), LastFailureAt: at, ErrorCode: "http_503", Error: errText,
			History: []deadletter.Attempt{
				{Receive: 1, At: at.Add(-2 * time.Minute), Class: class, ErrorCode: "http_503", Error: errText},
				{Receive: 2, At: at.Add(-time.Minute), Class: class, ErrorCode: "http_503", Error: errText},
				{Receive: 3, At: at, Class: class, ErrorCode: "http_503", Error: errText},
			},
			DeadLetteredAt: at, TaskID: "task-" + key, RunID: "run-1", Tenant: fmt.Sprintf("tenant-%d", i%7),
			Tool: tool, ToolVersion: "1.2.0", SchemaVersion: 1, IdempotencyKey: key, TraceID: "trace-" + key,
		}
		attrs, err := deadletter.EncodeDeadLetter(m, map[string]deadletter.Attribute{"traceparent": {DataType: "String", StringValue: "00-abc-def-01"}})
		require.NoError(t, err)
		out = append(out, triage.Message{MessageID: fmt.Sprintf("m-%06d", i), Body: body(key, tool, m.Tenant), Attributes: attrs, SentTimestamp: at})
	}
	return out
}

// effectUnknownLetters makes a dead letter for each key the way the worker
// writes one after a timeout that followed the start of a mutating call.
func effectUnknownLetters(t testing.TB, keys ...string) []triage.Message {
	t.Helper()
	reason := deadletter.ReasonEffectUnknown
	var out []triage.Message
	for i, key := range keys {
		at := t0.Add(-time.Duration(i+1) * time.Minute)
		m := deadletter.Meta{
			Version: deadletter.MetaVersion, Class: reason.Class(), Reason: reason, NextAction: reason.NextAction(), Attempts: 1,
			FirstFailureAt: at, LastFailureAt: at, ErrorCode: "timeout", Error: "email.send: timed out after the call started",
			DeadLetteredAt: at, TaskID: "task-" + key, RunID: "run-1", Tenant: "tenant-1", Tool: "email.send", ToolVersion: "1.0.0",
			SchemaVersion: 1, IdempotencyKey: key, TraceID: "trace-" + key, Effect: deadletter.EffectUnknown,
		}
		attrs, err := deadletter.EncodeDeadLetter(m, nil)
		require.NoError(t, err)
		out = append(out, triage.Message{MessageID: "eu-" + key, Body: body(key, "email.send", m.Tenant), Attributes: attrs, SentTimestamp: at})
	}
	return out
}

// effectUnknownKey makes key what the worker leaves in the ledger for an
// effect_unknown dead letter: its effect started, no receipt, dead-lettered.
func effectUnknownKey(t testing.TB, led ledger.Ledger, key string) {
	t.Helper()
	ctx := context.Background()
	at := t0.Add(-time.Hour)
	_, err := led.Begin(ctx, key, "m-"+key, "", at, time.Minute)
	require.NoError(t, err)
	require.NoError(t, led.StartEffect(ctx, key, "m-"+key, at))
	_, err = led.DeadLettered(ctx, key, deadletter.ReasonEffectUnknown, at)
	require.NoError(t, err)
}

// memAudit is an in-memory AuditLog that redrive can read back
// (audit.Reader), as FileAudit and S3Audit can.
type memAudit struct {
	mu   sync.Mutex
	recs []audit.Entry
}

func (m *memAudit) Append(_ context.Context, r audit.Entry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recs = append(m.recs, r)
	return nil
}
func (m *memAudit) Records(context.Context) ([]audit.Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]audit.Entry(nil), m.recs...), nil
}

func (m *memAudit) Entries(_ context.Context, pipelineName string, actions ...audit.Action) ([]audit.Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []audit.Entry
	for _, r := range m.recs {
		if r.Pipeline == pipelineName && (len(actions) == 0 || slices.Contains(actions, r.Action)) {
			out = append(out, r)
		}
	}
	return out, nil
}

// all is every record so far.
func (m *memAudit) all() []audit.Entry {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]audit.Entry(nil), m.recs...)
}

// fixture is a console over n synthetic letters, triaged in this process
// (so the letters are in memory), with a fake SQS and ledger.
type fixture struct {
	s     *Server
	audit *memAudit
	led   *ledger.Memory
	p     *pipeline.Pipeline
	r     *triage.Report
}

func newFixture(t testing.TB, n int) *fixture {
	t.Helper()
	return newFixtureOf(t, letters(t, n))
}

// newFixtureOf is newFixture over the given dead letters.
func newFixtureOf(t testing.TB, msgs []triage.Message) *fixture {
	t.Helper()
	n := len(msgs)
	p := testPipeline(t)
	f := &fixture{audit: &memAudit{}, led: ledger.NewMemory(), p: p}
	tags := map[string]string{pipeline.TagOwner: p.Owner, pipeline.TagPipeline: p.Name}
	s, err := New(context.Background(), Config{
		Pipelines: []*pipeline.Pipeline{p}, SQS: newFakeSQS(t, fmt.Sprint(n), tags), Ledger: f.led,
		Reports: store.Folder{Root: t.TempDir()}, Audit: func(string) AuditLog { return f.audit },
		Resolve: func(context.Context, *pipeline.Pipeline) (pipeline.Queues, error) {
			return pipeline.Queues{HotURL: "http://q/hot", HotARN: "arn:aws:sqs:us-east-1:000000000000:hot", DLQURL: "http://q/dlq", DLQARN: "arn:aws:sqs:us-east-1:000000000000:dlq"}, nil
		},
		Token: "test-token", Loopback: true, Now: func() time.Time { return t0 }, Logger: quiet,
	})
	require.NoError(t, err)
	f.r = triage.Build(tagAll(msgs), p, t0)
	hist := []triage.HistoryPoint{
		{GeneratedAt: t0.Add(-2 * time.Hour), Messages: n / 2, ByReason: map[deadletter.Reason]int{deadletter.ReasonBudgetExhausted: n / 2}},
		triage.PointOf(f.r, "agent-tasks/reports/x.json"),
	}
	s.snaps[p.Name] = newSnapshot(f.r, "agent-tasks/reports/x.json", hist)
	f.s = s
	return f
}

// get requests path with the token cookie.
func (f *fixture) get(t testing.TB, path string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8080"+path, nil)
	req.AddCookie(&http.Cookie{Name: CookieName, Value: f.s.Token()})
	w := httptest.NewRecorder()
	f.s.ServeHTTP(w, req)
	return w
}

// post submits a form with the token cookie and the CSRF token.
func (f *fixture) post(t testing.TB, path string, form url.Values) *httptest.ResponseRecorder {
	t.Helper()
	form.Set("csrf", csrfToken(f.s.Token()))
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:8080"+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: CookieName, Value: f.s.Token()})
	w := httptest.NewRecorder()
	f.s.ServeHTTP(w, req)
	return w
}

// postFollow posts a form that succeeds with a redirect (post/redirect/get)
// and gets the page it redirects to.
func (f *fixture) postFollow(t testing.TB, path string, form url.Values) *httptest.ResponseRecorder {
	t.Helper()
	w := f.post(t, path, form)
	require.Equal(t, http.StatusSeeOther, w.Code, w.Body.String())
	return f.get(t, w.Header().Get("Location"))
}

func parseDuration(s string) (time.Duration, error) { return time.ParseDuration(s) }

// tagAll tags msgs as triage.Run does.
func tagAll(msgs []triage.Message) []triage.Tagged {
	out := make([]triage.Tagged, len(msgs))
	for i, m := range msgs {
		out[i] = triage.Tag(m)
	}
	return out
}

// scanning lets f be received from: a test whose code scans the DLQ.
func scanning(f *sqsfake.Fake) *sqsfake.Fake {
	f.NoReceive = false
	return f
}

// inAWS makes f say it is AWS's own endpoint (aws true), not this
// machine's: the caller check runs.
func inAWS(f *sqsfake.Fake, aws bool) *sqsfake.Fake {
	f.InAWS = aws
	return f
}
