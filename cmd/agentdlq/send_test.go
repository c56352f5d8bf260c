package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/local/esm"
	"github.com/agentdlq/agentdlq/local/workload"
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

// A large send on the emulators: 26 bodies of 300 kB, which ten to a
// request would be a 3 MB SendMessageBatch (SQS's limit per request is
// 1 MiB: BatchRequestTooLong after earlier requests went out, and no count),
// go in requests within the limit. A body no request can carry fails the
// send with how many were sent and the --from-line a rerun takes; the rerun
// sends the rest. Not parallel: onEmulators sets the process's environment.
func TestSendLargeBatchesBySize(t *testing.T) {
	cfg, _, q, _ := onEmulators(t, "agent-tasks")
	client := sqs.NewFromConfig(cfg)
	config := filepath.Join("..", "..", pipeline.DefaultFile)
	dir := t.TempDir()
	body := func(i, size int) string {
		head := fmt.Sprintf(`{"task_id":"big-%02d","run_id":"r","tenant":"acme","idempotency_key":"big-%02d","tool":"web.search","tool_version":"2.1.0","trace_id":"tr","created_at":"2026-11-29T00:00:00Z","schema_version":1,"args":{"q":"`, i, i)
		return head + strings.Repeat("x", size-len(head)-3) + `"}}`
	}
	run := func(args ...string) (sendResult, error) {
		root := newRootCmd()
		var out, errOut bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&errOut)
		root.SetArgs(append([]string{"--config", config, "send", "--pipeline", "agent-tasks", "--json"}, args...))
		err := root.ExecuteContext(context.Background())
		var res sendResult
		if err == nil {
			require.NoError(t, json.Unmarshal(out.Bytes(), &res))
		}
		return res, err
	}
	depth := func() int {
		n, err := esm.Depth(context.Background(), client, q.HotURL)
		require.NoError(t, err)
		return n
	}

	var lines []string
	for i := range 26 {
		lines = append(lines, body(i, 300_000))
	}
	file := filepath.Join(dir, "large.jsonl")
	require.NoError(t, os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	res, err := run(file)
	require.NoError(t, err, "26 × 300 kB in requests of at most 1 MiB")
	assert.Equal(t, 26, res.Sent)
	assert.Equal(t, 26, depth())

	// Line 14 is larger than any request may be: the send fails there.
	bad := slices.Clone(lines)
	bad[13] = body(13, workload.MaxBatchBytes+10)
	file = filepath.Join(dir, "bad.jsonl")
	require.NoError(t, os.WriteFile(file, []byte(strings.Join(bad, "\n")+"\n"), 0o644))
	_, err = run(file)
	require.Error(t, err)
	assert.Equal(t, 1, exitCode(err), "a failed send exits 1")
	sf, ok := errors.AsType[*sendFailed](err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, 14, sf.resumeLine)
	assert.Contains(t, err.Error(), "rerun with --from-line 14")
	assert.Contains(t, err.Error(), fmt.Sprintf("%d of 26 messages sent", sf.se.Sent))
	assert.Equal(t, 13+sf.se.SentAfter, sf.se.Sent, "every line before 14 was sent, and SentAfter counts the rest")
	assert.Equal(t, 26+sf.se.Sent, depth(), "the count said is what reached the queue")

	// The rerun, the line fixed, sends line 14 on and nothing before it.
	require.NoError(t, os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	res, err = run("--from-line", "14", file)
	require.NoError(t, err)
	assert.Equal(t, 13, res.Sent)
	assert.Equal(t, 14, res.FromLine)
	assert.Equal(t, 26+sf.se.Sent+13, depth())
}
