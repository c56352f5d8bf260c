package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
)

// A gated command without --owner is refused before anything is resolved:
// no AWS configuration is read (a profile that does not exist is never
// noticed), no endpoint is called (the queues' lookup included), and the
// refusal is the gate's own, audited with the caller not checked.
func TestMissingOwnerRefusedBeforeResolving(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(srv.Close)
	for _, k := range []string{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_STS"} {
		t.Setenv(k, srv.URL)
	}
	for _, k := range []string{"AGENTDLQ_HOT_QUEUE_URL", "AGENTDLQ_HOT_QUEUE_ARN", "AGENTDLQ_DLQ_URL", "AGENTDLQ_DLQ_ARN"} {
		t.Setenv(k, "")
	}
	// Loading this configuration fails: a command that got as far as the
	// AWS configuration would say so instead of owner_missing.
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_PROFILE", "no-such-profile")

	for _, args := range [][]string{
		{"redrive", "select", "--reason", "budget_exhausted", "--why", "503s over"},
		{"redrive", "start", "--why", "x"},
		{"redrive", "cancel", "--why", "x"},
		{"redrive", "reject", "--reason", "policy_limit", "--why", "x"},
		{"pause", "--why", "x"},
		{"ledger", "reconcile", "--key", "k1", "--no-effect", "--why", "x"},
	} {
		t.Run(args[0]+" "+args[1], func(t *testing.T) {
			auditFile := filepath.Join(t.TempDir(), "audit.jsonl")
			full := append(append([]string{}, args...), "--pipeline", "agent-tasks", "--audit", auditFile, "--ledger-table", "t", "-o", "json")
			stdout, _, code := runArgs(t, full...)
			assert.Equal(t, exitRefused, code, stdout)
			var je jsonError
			require.NoError(t, json.Unmarshal([]byte(stdout), &je), stdout)
			assert.Equal(t, string(redrivetype.CodeOwnerMissing), je.Code)
			assert.Contains(t, je.Error, "--owner is required")
			assert.Zero(t, calls.Load(), "no AWS call before the refusal")

			data, err := os.ReadFile(auditFile)
			require.NoError(t, err, "the refusal is audited")
			var rec audit.Entry
			require.NoError(t, json.Unmarshal(data, &rec))
			assert.Equal(t, audit.OutcomeRefused, rec.Outcome)
			assert.Contains(t, rec.Error, "--owner is required", "the audit says what the terminal said")
			require.NotNil(t, rec.Caller)
			assert.Equal(t, audit.CallerNotChecked, rec.Caller.Check)
		})
	}
}

// A misspelt reason is refused and audited in the flag's words, as the
// terminal shows it, never the request's Go field ("Reasons").
func TestUnknownReasonAuditedAsItsFlag(t *testing.T) {
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_PROFILE", "no-such-profile")
	for _, args := range [][]string{
		{"redrive", "select", "--reason", "budget_exhaustd"},
		{"redrive", "select", "--reason", "budget_exhausted", "--override", "budget_exhaustd=x"},
	} {
		auditFile := filepath.Join(t.TempDir(), "audit.jsonl")
		full := append(append([]string{}, args...), "--owner", "team-agents", "--why", "503s over", "--pipeline", "agent-tasks", "--audit", auditFile, "--ledger-table", "t", "-o", "json")
		stdout, _, code := runArgs(t, full...)
		assert.Equal(t, exitRefused, code, stdout)
		var je jsonError
		require.NoError(t, json.Unmarshal([]byte(stdout), &je), stdout)
		data, err := os.ReadFile(auditFile)
		require.NoError(t, err, "the refusal is audited")
		var rec audit.Entry
		require.NoError(t, json.Unmarshal(data, &rec))
		flag := map[bool]string{true: "--override", false: "--reason"}[len(args) > 4]
		assert.Contains(t, je.Error, flag+` "budget_exhaustd`)
		assert.Contains(t, rec.Error, flag+` "budget_exhaustd`, "the audit says what the terminal said")
		assert.NotContains(t, rec.Error, "Reasons")
		assert.NotContains(t, rec.Error, "Ack.Overrides")
	}
}
