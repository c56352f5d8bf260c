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
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive"
	"github.com/agentdlq/agentdlq/triage"
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

// fakeSQS answers GetQueueAttributes only (the overview); a page that
// called anything else would panic on the nil interface: pages never scan.
type fakeSQS struct {
	SQSAPI
	depth string
}

func (f *fakeSQS) GetQueueAttributes(_ context.Context, in *sqs.GetQueueAttributesInput, _ ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	return &sqs.GetQueueAttributesOutput{Attributes: map[string]string{"ApproximateNumberOfMessages": f.depth, "ApproximateNumberOfMessagesNotVisible": "0"}}, nil
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

// memAudit is an in-memory AuditLog.
type memAudit struct{ recs []redrive.AuditEntry }

func (m *memAudit) Append(_ context.Context, r redrive.AuditEntry) error {
	m.recs = append(m.recs, r)
	return nil
}
func (m *memAudit) Records(context.Context) ([]redrive.AuditEntry, error) {
	return append([]redrive.AuditEntry(nil), m.recs...), nil
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
	p := testPipeline(t)
	f := &fixture{audit: &memAudit{}, led: ledger.NewMemory(), p: p}
	s, err := New(context.Background(), Config{
		Pipelines: []*pipeline.Pipeline{p}, SQS: &fakeSQS{depth: fmt.Sprint(n)}, Local: true, Ledger: f.led,
		Reports: triage.Folder{Root: t.TempDir()}, Audit: func(string) AuditLog { return f.audit },
		Resolve: func(context.Context, *pipeline.Pipeline) (redrive.Queues, error) {
			return redrive.Queues{HotURL: "http://q/hot", HotARN: "arn:aws:sqs:us-east-1:000000000000:hot", DLQURL: "http://q/dlq", DLQARN: "arn:aws:sqs:us-east-1:000000000000:dlq"}, nil
		},
		Token: "test-token", Loopback: true, Now: func() time.Time { return t0 }, Logger: quiet,
	})
	require.NoError(t, err)
	f.r = triage.Build(triage.TagAll(letters(t, n)), p, t0)
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

func parseDuration(s string) (time.Duration, error) { return time.ParseDuration(s) }
