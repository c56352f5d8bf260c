package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/functions/batch"
	"github.com/agentdlq/agentdlq/functions/batch/batchtest"
	"github.com/agentdlq/agentdlq/ledger"
)

// fakeTools answers each tool with a status (200 unless set) and counts calls.
type fakeTools struct {
	mu     sync.Mutex
	status map[string]int // by tool
	calls  map[string]int // by idempotency key
}

func (f *fakeTools) Call(_ context.Context, tool, key string, _ json.RawMessage) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[key]++
	if code := f.status[tool]; code != 0 && code != http.StatusOK {
		return "", &StatusError{Code: code}
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
		{name: "lookup throttled", body: task("k", "crm.lookup", "1"), status: map[string]int{"crm.lookup": 429},
			wantRetry: true, wantState: ledger.StateInProgress},
		{name: "lookup down on the last receive", body: task("k", "crm.lookup", "1"), receive: 4, status: map[string]int{"crm.lookup": 503},
			wantReason: deadletter.ReasonBudgetExhausted, wantState: ledger.StateDeadLettered},
		{name: "lookup forbidden", body: task("k", "crm.lookup", "1"), status: map[string]int{"crm.lookup": 403},
			wantRetry: true, wantState: ledger.StateInProgress},
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
				_, ok := w.Entry("k")
				assert.False(t, ok, "poison never reaches the ledger")
				return
			}
			e := batchtest.RequireLedgerState(t, w, "k", tt.wantState)
			if tt.wantState == ledger.StateDone {
				assert.Equal(t, "rcpt-k", e.Receipt)
			}
		})
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
	t.Setenv("AWS_REGION", "eu-west-1") // LoadDefaultConfig needs a region and nothing else offline
	env := map[string]string{
		"AGENTDLQ_PIPELINE_JSON": `{"name":"refunds","owner":"payments-oncall","max_receive_count":4}`,
		"AGENTDLQ_DLQ_URL":       "https://sqs.eu-west-1.amazonaws.com/111122223333/refunds-dlq",
		"AGENTDLQ_LEDGER_TABLE":  "agentdlq-ledger",
	}
	log := slog.New(slog.DiscardHandler)
	p, err := newProcessor(t.Context(), func(k string) string { return env[k] }, log)
	require.NoError(t, err)
	assert.NotNil(t, p)

	delete(env, "AGENTDLQ_DLQ_URL")
	_, err = newProcessor(t.Context(), func(k string) string { return env[k] }, log)
	assert.ErrorContains(t, err, "DLQURL is required")
	_, err = newProcessor(t.Context(), func(string) string { return "" }, log)
	assert.ErrorContains(t, err, "pipeline JSON")
}
