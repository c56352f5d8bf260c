package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/functions/batch"
	"github.com/agentdlq/agentdlq/functions/batch/batchtest"
	"github.com/agentdlq/agentdlq/ledger"
)

// fakeTools answers each tool with a status (200 unless set) and counts calls.
type fakeTools struct {
	mu         sync.Mutex
	status     map[string]int // by tool
	retryAfter time.Duration  // with a status
	calls      map[string]int // by idempotency key
}

func (f *fakeTools) Call(_ context.Context, tool, key string, _ json.RawMessage) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[key]++
	if code := f.status[tool]; code != 0 && code != http.StatusOK {
		return "", &StatusError{Code: code, RetryAfter: f.retryAfter}
	}
	return "rcpt-" + key, nil
}

func task(key, tool, version string) string {
	return `{"task_id":"t-` + key + `","run_id":"run-1","tenant":"acme","idempotency_key":"` + key + `","tool":"` + tool +
		`","tool_version":"` + version + `","trace_id":"tr-1","created_at":"2026-11-29T12:00:00Z","schema_version":1,"args":{"order":"o-1"}}`
}

// newWorker runs the handler through the real processor, with the memory
// ledger and a recording DLQ (batchtest), configured as main configures it.
func newWorker(t *testing.T, tools Tools) *batchtest.Worker {
	return batchtest.NewWorker(t, batch.Config{Handler: handler(tools), Classify: classify, MaxReceiveCount: 4})
}

func TestHandler(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		body       string
		receive    int
		status     map[string]int    // the tool API's answers
		wantReason deadletter.Reason // "" when not dead-lettered
		wantRetry  bool
		wantState  ledger.State // the key's ledger state afterwards ("" when none)
	}{
		{name: "lookup", body: task("k", "crm.lookup", "1.2.0"), wantState: ledger.StateDone},
		{name: "refund", body: task("k", "payments.refund", "2.0.1"), wantState: ledger.StateDone},
		{name: "not JSON", body: `{"task_id":`, wantReason: deadletter.ReasonJSONInvalid},
		{name: "a tool the team does not have", body: task("k", "web.search", "1"), wantReason: deadletter.ReasonToolUnknown},
		{name: "a refund of version 1", body: task("k", "payments.refund", "1.0.0"), wantReason: deadletter.ReasonToolVersionUnsupported},
		// crm.lookup is read-only: it takes no claim, and a retry writes
		// nothing to the ledger (one write when it succeeds).
		{name: "lookup throttled", body: task("k", "crm.lookup", "1"), status: map[string]int{"crm.lookup": 429},
			wantRetry: true},
		{name: "lookup down on the last receive", body: task("k", "crm.lookup", "1"), receive: 4, status: map[string]int{"crm.lookup": 503},
			wantReason: deadletter.ReasonBudgetExhausted, wantState: ledger.StateDeadLettered},
		{name: "lookup forbidden", body: task("k", "crm.lookup", "1"), status: map[string]int{"crm.lookup": 403},
			wantRetry: true},
		{name: "lookup args refused", body: task("k", "crm.lookup", "1"), status: map[string]int{"crm.lookup": 422},
			wantReason: deadletter.ReasonSchemaInvalid, wantState: ledger.StateDeadLettered},
		{name: "refund failed after the call started", body: task("k", "payments.refund", "2"), status: map[string]int{"payments.refund": 503},
			wantReason: deadletter.ReasonEffectUnknown, wantState: ledger.StateDeadLettered},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newWorker(t, &fakeTools{status: tt.status, calls: map[string]int{}})
			res := w.Run(batchtest.Event(batchtest.Msg{ID: "m1", Body: tt.body, ReceiveCount: tt.receive}))
			switch {
			case tt.wantReason != "":
				dl := batchtest.RequireDeadLettered(t, res, "m1", tt.wantReason)
				assert.Equal(t, tt.body, dl.Body, "the original body, byte for byte")
			case tt.wantRetry:
				batchtest.RequireRetried(t, res, "m1")
			default:
				batchtest.RequireAcked(t, res, "m1")
			}
			if tt.wantState == "" {
				_, ok := w.Entry(w.Key("acme", "k"))
				assert.False(t, ok, "no entry: poison never reaches the ledger, and a read-only tool's retry writes nothing")
				return
			}
			e := batchtest.RequireLedgerState(t, w, w.Key("acme", "k"), tt.wantState)
			if tt.wantState == ledger.StateDone {
				assert.Equal(t, "rcpt-k", e.Receipt)
			}
		})
	}
}

// TestRetryAfter: a 429 with a Retry-After hides the task for that long
// instead of the backoff (HotQueueURL set, as main sets it).
func TestRetryAfter(t *testing.T) {
	t.Parallel()
	tools := &fakeTools{status: map[string]int{"crm.lookup": 429}, retryAfter: 90 * time.Second, calls: map[string]int{}}
	w := batchtest.NewWorker(t, batch.Config{Handler: handler(tools), Classify: classify, MaxReceiveCount: 4,
		HotQueueURL: "http://127.0.0.1:1/000000000000/hot"})
	batchtest.RequireRetried(t, w.Run(batchtest.Bodies(task("k", "crm.lookup", "1"))), "m1")
	vis := w.DLQ.VisibilityChanges()
	require.Len(t, vis, 1)
	assert.Equal(t, int32(90), vis[0].VisibilityTimeout)
}

func TestRetryAfterHeader(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"120": 2 * time.Minute, "": 0, "0": 0, "-5": 0, "soon": 0,
		"Wed, 02 Dec 2026 12:00:30 GMT": 30 * time.Second, "Wed, 02 Dec 2026 11:00:00 GMT": 0,
	} {
		assert.Equal(t, want, retryAfter(v, now), "Retry-After: %q", v)
	}
}

// TestRefundOnce: a redelivered refund that is done is acknowledged without
// calling the payment API again.
func TestRefundOnce(t *testing.T) {
	t.Parallel()
	tools := &fakeTools{calls: map[string]int{}}
	w := newWorker(t, tools)
	ev := batchtest.Bodies(task("r-1", "payments.refund", "2"))
	batchtest.RequireAcked(t, w.Run(ev), "m1")
	batchtest.RequireAcked(t, w.Run(ev), "m1")
	assert.Equal(t, 1, tools.calls["r-1"])
}

func TestHTTPTools(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case r.URL.Path == "/payments.refund" && r.Header.Get("Idempotency-Key") == "r-1" && string(body) == `{"order":"o-1"}`:
			w.Header().Set("Receipt-Id", "pay-123")
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(srv.Close)
	tools := httpTools{base: srv.URL}
	receipt, err := tools.Call(t.Context(), "payments.refund", "r-1", json.RawMessage(`{"order":"o-1"}`))
	require.NoError(t, err)
	assert.Equal(t, "pay-123", receipt)
	_, err = tools.Call(t.Context(), "crm.lookup", "k", json.RawMessage(`{}`))
	var se *StatusError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, http.StatusServiceUnavailable, se.Code)
}

func TestNewProcessor(t *testing.T) {
	t.Parallel()
	lambdaEnv := func() map[string]string { // what the runtime and the construct set
		return map[string]string{
			"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "AKIAEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_SESSION_TOKEN": "token",
			"AGENTDLQ_PIPELINE_JSON":         `{"name":"refunds","owner":"payments-oncall","max_receive_count":4}`,
			"AGENTDLQ_DLQ_URL":               "https://sqs.eu-west-1.amazonaws.com/111122223333/refunds-dlq",
			"AGENTDLQ_DLQ_MAX_MESSAGE_BYTES": "1048576",
			"AGENTDLQ_LEDGER_TABLE":          "agentdlq-ledger",
		}
	}
	tests := []struct {
		name    string
		change  func(env map[string]string)
		wantErr string // "" when the processor is built
	}{
		{name: "the Lambda environment", change: func(map[string]string) {}},
		{name: "a DLQ of 256 KiB", change: func(env map[string]string) { env["AGENTDLQ_DLQ_MAX_MESSAGE_BYTES"] = "262144" }},
		{name: "the DLQ's size unset: the definition's", change: func(env map[string]string) { delete(env, "AGENTDLQ_DLQ_MAX_MESSAGE_BYTES") }},
		{name: "the DLQ's size over SQS's 1 MiB", change: func(env map[string]string) { env["AGENTDLQ_DLQ_MAX_MESSAGE_BYTES"] = "2097152" },
			wantErr: `AGENTDLQ_DLQ_MAX_MESSAGE_BYTES "2097152" is not a message size`},
		{name: "no DLQ", change: func(env map[string]string) { delete(env, "AGENTDLQ_DLQ_URL") }, wantErr: "DLQURL is required"},
		{name: "no pipeline", change: func(env map[string]string) { delete(env, "AGENTDLQ_PIPELINE_JSON") }, wantErr: "pipeline JSON"},
		{name: "no credentials", change: func(env map[string]string) { delete(env, "AWS_SECRET_ACCESS_KEY") }, wantErr: "the Lambda runtime sets them"},
		{name: "no region", change: func(env map[string]string) { delete(env, "AWS_REGION") }, wantErr: "AWS_REGION"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := lambdaEnv()
			tt.change(env)
			p, err := newProcessor(func(k string) string { return env[k] }, slog.New(slog.DiscardHandler))
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.NotNil(t, p)
		})
	}
}

func TestAWSConfig(t *testing.T) {
	t.Parallel()
	env := map[string]string{"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "AKIAEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_SESSION_TOKEN": "token"}
	cfg, err := awsConfig(func(k string) string { return env[k] })
	require.NoError(t, err)
	assert.Equal(t, "eu-west-1", cfg.Region)
	creds, err := cfg.Credentials.Retrieve(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "AKIAEXAMPLE", creds.AccessKeyID)
	assert.Equal(t, "secret", creds.SecretAccessKey)
	assert.Equal(t, "token", creds.SessionToken)
}

// TestBootstrapWithinBudget builds this worker as docs/deploying.md says
// and holds it to the 10,000,000-byte budget stated there (and in
// scripts/build.sh for agentdlq's own worker).
func TestBootstrapWithinBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the arm64 bootstrap")
	}
	t.Parallel()
	const budget = 10_000_000
	out := filepath.Join(t.TempDir(), "bootstrap")
	cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w", "-o", out, ".")
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", b)
	st, err := os.Stat(out)
	require.NoError(t, err)
	t.Logf("arm64 bootstrap: %d bytes", st.Size())
	assert.Less(t, st.Size(), int64(budget), "the worker's bootstrap is over the %d-byte budget of docs/deploying.md", budget)
}
