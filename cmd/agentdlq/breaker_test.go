package main

import (
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/breaker"
	"github.com/agentdlq/agentdlq/breaker/dynamostore"
	"github.com/agentdlq/agentdlq/pipeline"
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

// breaker status without --dependency lists every dependency's breaker, in
// words when none is stored, open first, with a name from a producer
// escaped; -o json carries every state.
func TestBreakerStatusListsEveryDependency(t *testing.T) {
	cfg, _, _, table := onEmulators(t, "agent-tasks")
	store := dynamostore.New(dynamodb.NewFromConfig(cfg), table)
	list := []string{"breaker", "status", "--pipeline", "agent-tasks", "--ledger-table", table}

	out, code := runCLI(t, list...)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "no dependency of agent-tasks has a stored breaker state")
	out, code = runCLI(t, append(list, "-o", "json")...)
	require.Equal(t, 0, code, out)
	assert.JSONEq(t, `{"pipeline":"agent-tasks","enabled":false,"breakers":[]}`, out)

	// A real breaker opens search-api; a failure of another dependency (its
	// name a producer's, with an escape sequence) leaves it closed; the
	// owner holds crm open.
	b, err := breaker.New(breaker.Config{Pipeline: "agent-tasks", Store: store, Metrics: io.Discard,
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), Settings: breaker.Settings{Threshold: 2}})
	require.NoError(t, err)
	for _, tenant := range []string{"acme", "globex"} { // two tenants: min_tenants 2
		require.NoError(t, b.Record(t.Context(), "search-api", tenant, true, 0))
	}
	require.NoError(t, b.Record(t.Context(), "evil\x1b[2J", "acme", true, 0))
	out, code = runCLI(t, "breaker", "open", "--pipeline", "agent-tasks", "--dependency", "crm", "--ledger-table", table,
		"--owner", "platform-oncall", "--why", "INC-77 provider down", "--audit", filepath.Join(t.TempDir(), "audit.jsonl"))
	require.Equal(t, 0, code, out)

	out, code = runCLI(t, list...)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "3 dependencies, 2 not closed")
	assert.Contains(t, out, `evil\x1b[2J`)
	assert.NotContains(t, out, "\x1b")
	assert.Contains(t, out, "platform-oncall: INC-77 provider down")
	assert.Contains(t, out, "held: until the owner closes it")
	lines := strings.Split(out, "\n")
	require.Greater(t, len(lines), 4, out)
	assert.True(t, strings.HasPrefix(lines[2], "crm ") || strings.HasPrefix(lines[2], "search-api "), "open first: %s", out)
	assert.True(t, strings.HasPrefix(lines[4], "evil"), "closed last: %s", out)

	out, code = runCLI(t, append(list, "-o", "json")...)
	require.Equal(t, 0, code, out)
	var res struct {
		Enabled  bool            `json:"enabled"`
		Breakers []breaker.Entry `json:"breakers"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	got := map[string]breaker.State{}
	for _, e := range res.Breakers {
		got[e.Dependency] = e.State
	}
	require.Len(t, got, 3, out)
	assert.Equal(t, breaker.Open, got["search-api"].Mode)
	assert.Equal(t, breaker.CauseThreshold, got["search-api"].Cause)
	assert.True(t, got["crm"].Held)
	assert.Equal(t, 1, got["evil\x1b[2J"].Failures)
}

// One dependency is said in the singular, and its failures are those of
// the last window at the time of the listing.
func TestPrintBreakersOne(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 7, 6, 0, 30, 0, time.UTC)
	var s breaker.State
	s, _, _ = breaker.Fail(s, breaker.Settings{}.WithDefaults(), now.Add(-10*time.Second), "acme", 0)
	var b strings.Builder
	printBreakers(&b, "agent-tasks", pipeline.Breaker{Enabled: true}, []breaker.Entry{{Dependency: "search-api", State: s}}, now)
	assert.Contains(t, b.String(), "1 dependency, 0 not closed")
	assert.Contains(t, b.String(), "1 in the last 1m0s, 1 tenant")
	b.Reset()
	printBreakers(&b, "agent-tasks", pipeline.Breaker{Enabled: true}, []breaker.Entry{{Dependency: "search-api", State: s}}, now.Add(2*time.Minute))
	assert.NotContains(t, b.String(), "in the last", "a failure older than the window is not shown")
	b.Reset()
	printBreaker(&b, "agent-tasks", "search-api", pipeline.Breaker{Enabled: true}, s, now)
	assert.Contains(t, b.String(), "1 failures in the last 1m0s, 1 tenant (it opens at 5 of at least 2 tenants)")
}

// A stored state is text from the table: its mode and cause reach the
// terminal escaped, as its owner and why do.
func TestPrintBreakerEscapesStoredText(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 7, 6, 0, 30, 0, time.UTC)
	s := breaker.State{Mode: "open\x1b[2J", Cause: "threshold\x1b]0;pwned\x07", Changed: now, Version: 3}
	var b strings.Builder
	printBreaker(&b, "agent-tasks", "search-api", pipeline.Breaker{Enabled: true}, s, now)
	printBreakers(&b, "agent-tasks", pipeline.Breaker{Enabled: true}, []breaker.Entry{{Dependency: "search-api", State: s}}, now)
	assert.NotContains(t, b.String(), "\x1b")
	assert.NotContains(t, b.String(), "\x07")
}
