package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/breaker"
	"github.com/agentdlq/agentdlq/breaker/dynamostore"
)

// breaker open, status and close locally: the item in the ledger table the
// workers read changes, a stranger is refused, each decision is audited,
// and status reads it back.
func TestBreakerCLI(t *testing.T) {
	cfg, _, _, table := onEmulators(t, "agent-tasks")
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	common := []string{"--pipeline", "agent-tasks", "--dependency", "search-api", "--ledger-table", table}
	store := dynamostore.New(dynamodb.NewFromConfig(cfg), table)
	steps := []struct {
		args []string
		code int          // exit code
		mode breaker.Mode // want: the stored mode afterwards ("" for no item)
	}{
		{args: []string{"breaker", "open", "--owner", "mallory", "--why", "x", "--audit", audit}, code: exitRefused},
		{args: []string{"breaker", "open", "--owner", "platform-oncall", "--audit", audit}, code: exitRefused},
		{args: []string{"breaker", "open", "--owner", "platform-oncall", "--why", "INC-77 provider down", "--audit", audit}, mode: breaker.Open},
		{args: []string{"breaker", "close", "--owner", "platform-oncall", "--why", "provider back", "--audit", audit}, mode: breaker.Closed},
	}
	for _, s := range steps {
		out, code := runCLI(t, append(s.args, common...)...)
		assert.Equal(t, s.code, code, "%v: %s", s.args, out)
		st, err := store.Get(t.Context(), "agent-tasks", "search-api")
		require.NoError(t, err)
		assert.Equal(t, s.mode, st.Mode, "%v", s.args)
	}
	out, code := runCLI(t, append([]string{"breaker", "status", "-o", "json"}, common...)...)
	require.Equal(t, 0, code, out)
	var res struct {
		State breaker.State `json:"state"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	assert.Equal(t, breaker.Closed, res.State.Mode)
	assert.Equal(t, "platform-oncall", res.State.Owner)
	assert.Equal(t, "provider back", res.State.Why)
	var got []string
	for _, r := range auditLines(t, audit) {
		got = append(got, string(r.Action)+":"+string(r.Outcome))
	}
	assert.Contains(t, got, "breaker_open:refused")
	assert.Contains(t, got, "breaker_open:ok")
	assert.Contains(t, got, "breaker_close:ok")
}
