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
