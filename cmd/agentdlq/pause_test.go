package main

import (
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/local/esm"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
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
		code    int    // exit code
		says    string // want: in the refusal, the flag at fault and the action's words
		enabled bool   // want: the local mapping's flag afterwards
	}{
		{args: []string{"pause", "--owner", "mallory", "--why", "x"}, code: exitRefused, enabled: true,
			says: `refused (owner_mismatch): --owner "mallory" may not pause the worker of pipeline "agent-tasks"`},
		{args: []string{"pause", "--why", "x"}, code: exitRefused, enabled: true,
			says: `refused (owner_missing): --owner is required`},
		{args: []string{"pause", "--owner", "platform-oncall"}, code: exitRefused, enabled: true,
			says: "refused (why_missing): --why is required: say why the worker must stop now"},
		{args: []string{"pause", "--owner", "platform-oncall", "--why", "INC-9: charges twice"}, enabled: false},
		{args: []string{"resume", "--owner", "platform-oncall", "--why", "fix deployed", "--json"}, enabled: true},
	}
	for _, s := range steps {
		out, code := runCLI(t, append(s.args, common...)...)
		assert.Equal(t, s.code, code, "%v: %s", s.args, out)
		if s.says != "" {
			msg := cliErr(t, append(s.args, common...)...)
			assert.Contains(t, msg, s.says)
			assert.NotContains(t, msg, "redrive", "pause is not a redrive")
		}
		assert.Equal(t, s.enabled, sw.Enabled(q.HotARN), s.args)
		if code == 0 && s.args[len(s.args)-1] == "--json" {
			var res redrivetype.PauseResult
			require.NoError(t, json.Unmarshal([]byte(out), &res), out)
			assert.Equal(t, "Enabled", res.State)
		}
	}
	var got []string
	for _, r := range auditLines(t, audit) {
		got = append(got, string(r.Action)+":"+string(r.Outcome))
	}
	assert.Equal(t, []string{"pause:refused", "pause:refused", "pause:refused", "pause:refused", "pause:refused", "pause:refused", "pause:ok", "resume:ok"}, got)
}

// cliErr runs agentdlq with args and returns its error's message.
func cliErr(t *testing.T, args ...string) string {
	t.Helper()
	root := newRootCmd()
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	root.SetArgs(append([]string{"--config", filepath.Join("..", "..", pipeline.DefaultFile)}, args...))
	err := root.ExecuteContext(context.Background())
	if err == nil {
		return ""
	}
	return err.Error()
}
