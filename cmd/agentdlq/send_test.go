package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/local/esm"
	"github.com/agentdlq/agentdlq/pipeline"
)

// send in its three input shapes, from a file and from stdin, onto the
// pipeline's hot queue on the emulators. Not parallel: onEmulators sets the
// process's environment.
func TestSendShapes(t *testing.T) {
	cfg, _, q, _ := onEmulators(t, "agent-tasks")
	config := filepath.Join("..", "..", pipeline.DefaultFile)
	dir := t.TempDir()
	task := `{"task_id":"t-1","run_id":"r-1","tenant":"acme","idempotency_key":"k-<1>&","tool":"web.search","tool_version":"2.1.0","trace_id":"tr","created_at":"2026-11-29T00:00:00Z","schema_version":1,"args":{"q":"go"}}`
	lines := filepath.Join(dir, "tasks.jsonl")
	require.NoError(t, os.WriteFile(lines, []byte(task+"\n\n"+task+"\nnot json\n"), 0o644))
	array := filepath.Join(dir, "tasks.json")
	require.NoError(t, os.WriteFile(array, []byte("["+task+", \"a string body\"]"), 0o644))
	total := 0
	tests := []struct {
		name  string
		args  []string
		stdin string
		sent  int // messages sent, 0 when refused
		code  int // exit code of a refusal
	}{
		{name: "JSON Lines", args: []string{lines}, sent: 3},
		{name: "JSON array", args: []string{array}, sent: 2},
		{name: "Lambda SQS event", args: []string{filepath.Join("..", "..", "events", "testdata", "sqs-mixed.json")}, sent: 18},
		{name: "stdin", args: []string{"-"}, stdin: task + "\n", sent: 1},
		{name: "empty stdin", args: []string{"-"}, stdin: "\n", code: 2},
		{name: "missing file", args: []string{filepath.Join(dir, "nope.jsonl")}, code: 2},
		{name: "unknown pipeline", args: []string{"--pipeline", "nope", lines}, code: 2},
	}
	for _, tt := range tests {
		root := newRootCmd()
		var out, errOut bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&errOut)
		root.SetIn(bytes.NewBufferString(tt.stdin))
		args := append([]string{"--config", config, "send", "--pipeline", "agent-tasks", "--json"}, tt.args...)
		root.SetArgs(args)
		err := root.ExecuteContext(context.Background())
		if tt.code != 0 {
			require.Error(t, err, tt.name)
			assert.Equal(t, tt.code, exitCode(err), tt.name)
			continue
		}
		require.NoError(t, err, tt.name)
		var res sendResult
		require.NoError(t, json.Unmarshal(out.Bytes(), &res), tt.name)
		assert.Equal(t, tt.sent, res.Sent, tt.name)
		assert.Equal(t, q.HotURL, res.QueueURL, tt.name)
		total += tt.sent
	}
	depth, err := esm.Depth(context.Background(), sqs.NewFromConfig(cfg), q.HotURL)
	require.NoError(t, err)
	assert.Equal(t, total, depth, "every message sent is on the hot queue")
}

func TestWriteJSONDoesNotEscapeHTML(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	require.NoError(t, writeJSON(&b, map[string]string{"k": "a<b>&c"}))
	assert.Contains(t, b.String(), `"a<b>&c"`)
}
