package chaos

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// make bench-chaos (scripts/bench-chaos.sh) with a fake agentdlq whose
// reset runs fail the way issue 33's did: every pair still runs, each
// one's result is in the table, failed ones with the bench's last word and
// the emulator log it kept, and the exit status is 1.
func TestBenchChaosRunsEveryToxicAndReportsEach(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	calls := filepath.Join(dir, "calls")
	fake := filepath.Join(dir, "agentdlq")
	require.NoError(t, os.WriteFile(fake, []byte(`#!/usr/bin/env bash
echo "$*" >>`+calls+`
logs=""; toxic=""
while (($#)); do
  case "$1" in --emulator-logs) logs="$2"; shift ;; --chaos) toxic="$2"; shift ;; esac
  shift
done
if [[ "$toxic" == reset ]]; then
  echo "fake fauxqs: the end" >"$logs.1.sqs.log"
  echo "local: sqs exited during start" >&2
  echo "Error: starting the emulators (sqs) failed 2 time(s)" >&2
  exit 1
fi
echo "lost 0 (must be 0); duplicate side effects 0 (must be 0, per the ledger)"
echo "SDK 2026/12/07 WARN a line the summary skips" >&2
`), 0o755))
	out := filepath.Join(dir, "bench")
	// A kept log of an earlier run is not this run's.
	require.NoError(t, os.MkdirAll(out, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(out, "chaos-none-sqs.1.sqs.log"), []byte("old"), 0o644))

	cmd := exec.Command(filepath.Join("..", "..", "scripts", "bench-chaos.sh"))
	cmd.Env = append(os.Environ(), "CHAOS=none reset truncate", "CHAOS_PATHS=sqs dynamodb", "TASKS=10", "OUT="+out, "AGENTDLQ_BIN="+fake)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "exit status 1: %v\n%s\n%s", err, &stdout, &stderr)
	assert.Equal(t, 1, exit.ExitCode())

	ran, err := os.ReadFile(calls)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(ran)), "\n")
	require.Len(t, lines, 6, "every toxic on every path, after the failed ones too")
	assert.Contains(t, lines[1], "--chaos reset --chaos-path sqs --emulator-logs "+out+"/chaos-reset-sqs")
	assert.Contains(t, lines[5], "--chaos truncate --chaos-path dynamodb")

	table := stdout.String()[strings.Index(stdout.String(), "== make bench-chaos"):]
	rows := map[string]string{}
	for _, line := range strings.Split(table, "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 {
			rows[f[0]+" "+f[1]] = line
		}
	}
	for _, path := range []string{"sqs", "dynamodb"} {
		for _, toxic := range []string{"none", "truncate"} {
			assert.Regexp(t, `^`+toxic+` +`+path+` +ok +`+out+`/chaos-`+toxic+`-`+path+`.txt `, rows[toxic+" "+path])
			assert.FileExists(t, filepath.Join(out, "chaos-"+toxic+"-"+path+".txt"))
		}
		reset := rows["reset "+path]
		assert.Contains(t, reset, "FAILED (exit 1)")
		assert.Contains(t, table, "\n  reset on "+path+": Error: starting the emulators (sqs) failed 2 time(s)\n", "and why")
		assert.Contains(t, reset, out+"/chaos-reset-"+path+".err "+out+"/chaos-reset-"+path+".1.sqs.log")
		errText, err := os.ReadFile(filepath.Join(out, "chaos-reset-"+path+".err"))
		require.NoError(t, err)
		assert.Contains(t, string(errText), "local: sqs exited during start", "stderr is kept")
	}
	assert.NotContains(t, rows["none sqs"], ".1.sqs.log", "the earlier run's kept log was removed")
	assert.NoFileExists(t, filepath.Join(out, "chaos-none-sqs.1.sqs.log"))
	assert.Contains(t, table, "2 of 6 failed:\n")
	assert.Contains(t, stderr.String(), "local: sqs exited during start", "stderr still reaches the terminal")
}
