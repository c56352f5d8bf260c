package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/internal/esm"
	"github.com/agentdlq/agentdlq/redrive"
)

// pause and resume locally: the switch every local worker reads flips, the
// gate refuses a stranger, and each decision is audited.
func TestPauseResumeCLI(t *testing.T) {
	_, _, q, table := onEmulators(t, "agent-tasks")
	state := t.TempDir()
	t.Setenv("AGENTDLQ_LOCAL_DIR", state)
	sw := esm.Switch{Dir: filepath.Join(state, "esm")}
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	common := []string{"--pipeline", "agent-tasks", "--audit", audit, "--ledger-table", table}

	steps := []struct {
		args    []string
		code    int  // exit code
		enabled bool // want: the local mapping's flag afterwards
	}{
		{args: []string{"pause", "--owner", "mallory", "--why", "x"}, code: exitRefused, enabled: true},
		{args: []string{"pause", "--owner", "platform-oncall"}, code: exitRefused, enabled: true},
		{args: []string{"pause", "--owner", "platform-oncall", "--why", "INC-9: charges twice"}, enabled: false},
		{args: []string{"resume", "--owner", "platform-oncall", "--why", "fix deployed", "--json"}, enabled: true},
	}
	for _, s := range steps {
		out, code := runCLI(t, append(s.args, common...)...)
		assert.Equal(t, s.code, code, "%v: %s", s.args, out)
		assert.Equal(t, s.enabled, sw.Enabled(q.HotARN), s.args)
		if code == 0 && s.args[len(s.args)-1] == "--json" {
			var res redrive.PauseResult
			require.NoError(t, json.Unmarshal([]byte(out), &res), out)
			assert.Equal(t, "Enabled", res.State)
		}
	}
	var got []string
	for _, r := range auditLines(t, audit) {
		got = append(got, string(r.Action)+":"+string(r.Outcome))
	}
	assert.Equal(t, []string{"pause:refused", "pause:refused", "pause:ok", "resume:ok"}, got)
}
