package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A definition that cannot be used is refused (exit 2) with one message on
// stderr that names the file or the flag at fault and what to do, and the
// command writes nothing.
func TestConfigRefusals(t *testing.T) {
	repo, err := filepath.Abs(filepath.Join("..", "..", "pipelines.json"))
	require.NoError(t, err)
	tests := []struct {
		name string
		env  string   // $AGENTDLQ_CONFIG
		args []string // before the command
		want []string // parts of stderr
	}{
		{name: "none here or above", want: []string{"no pipelines.json in ", " or any folder above it", "name one with --config FILE or $AGENTDLQ_CONFIG"}},
		{name: "--config missing", args: []string{"--config", "missing.json"}, want: []string{"--config missing.json: no such file"}},
		{name: "$AGENTDLQ_CONFIG missing", env: "gone.json", want: []string{"$AGENTDLQ_CONFIG=gone.json: no such file", "unset it"}},
		{name: "an array", args: []string{"--config", "arr.json"}, want: []string{`arr.json: pipeline definition: line 1, column 2: the definition is an array; it must be an object {"version": 1, "pipelines": [...]}`}},
		{name: "unknown pipeline", args: []string{"--config", repo}, want: []string{`--pipeline: unknown pipeline "agent-task" (known: agent-tasks, agent-steps)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Chdir(dir)
			t.Setenv("AGENTDLQ_CONFIG", tt.env)
			require.NoError(t, os.WriteFile("arr.json", []byte("[]\n"), 0o600))
			require.NoError(t, os.WriteFile("tasks.jsonl", []byte("{}\n"), 0o600))
			var stdout, stderr bytes.Buffer
			args := append(append([]string{}, tt.args...), "send", "--pipeline", "agent-task", "tasks.jsonl")
			code := run(context.Background(), args, &stdout, &stderr)
			assert.Equal(t, 2, code, "stderr %q", stderr.String())
			for _, w := range tt.want {
				assert.Contains(t, stderr.String(), w)
			}
			assert.Equal(t, 1, bytes.Count(stderr.Bytes(), []byte("\n")), "one line: %q", stderr.String())
			assert.NotContains(t, stderr.String(), "Go value")
			assert.Empty(t, stdout.String())
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			assert.Len(t, entries, 2, "nothing written beside the inputs")
		})
	}
}

// Bad input to the commands this file's helpers serve says which flag or
// value is at fault and what to give instead, in words on stderr, also
// where JSON is only the default output (work): JSON errors are for a
// command line that asked for JSON.
func TestBadInputNamesTheFlag(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		stderr string
		json   bool // the error is JSON on stdout instead
	}{
		{name: "work --log-level", args: []string{"work", "--pipeline", "agent-tasks", "--log-level", "loud"}, stderr: `agentdlq: --log-level "loud": use debug, info, warn or error` + "\n"},
		{name: "work --log-level -o json", args: []string{"work", "--pipeline", "agent-tasks", "--log-level", "loud", "-o", "json"}, json: true},
		{name: "send a missing file", args: []string{"send", "--pipeline", "agent-tasks", "nofile.jsonl"}, stderr: "agentdlq: nofile.jsonl: no such file: give a file of tasks (JSON Lines, a JSON array or a Lambda SQS event), or - for stdin\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo, err := filepath.Abs(filepath.Join("..", "..", "pipelines.json"))
			require.NoError(t, err)
			t.Chdir(t.TempDir())
			var out, errb bytes.Buffer
			code := run(context.Background(), append([]string{"--config", repo}, tt.args...), &out, &errb)
			stdout, stderr := out.String(), errb.String()
			assert.Equal(t, 2, code)
			if tt.json {
				assert.Contains(t, stdout, `"code": "bad_input"`)
				assert.Empty(t, stderr)
				return
			}
			assert.Equal(t, tt.stderr, stderr)
			assert.Empty(t, stdout)
		})
	}
}
