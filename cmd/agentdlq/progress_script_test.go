package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scripts/progress.sh, through which make demo's first build and npm ci
// run: it says what it runs, that it is still at it while it runs, how it
// ended, and exits as the command did.
func TestProgressScript(t *testing.T) {
	script, err := filepath.Abs(filepath.Join("..", "..", "scripts", "progress.sh"))
	require.NoError(t, err)
	release := filepath.Join(t.TempDir(), "release")
	// The command runs until the test has seen a heartbeat: no timing.
	c := exec.Command(script, "building agentdlq (a first build: 1-2 min)", "sh", "-c", `while [ ! -e "$0" ]; do sleep 0.1; done; echo built`, release)
	c.Env = append(os.Environ(), "AGENTDLQ_PROGRESS_EVERY=1")
	stderr, err := c.StderrPipe()
	require.NoError(t, err)
	var stdout strings.Builder
	c.Stdout = &stdout
	require.NoError(t, c.Start())
	sc := bufio.NewScanner(stderr)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if strings.Contains(sc.Text(), "still at it") {
			require.NoError(t, os.WriteFile(release, nil, 0o600))
		}
	}
	require.NoError(t, c.Wait())
	require.GreaterOrEqual(t, len(lines), 3, "%q", lines)
	assert.Equal(t, "building agentdlq (a first build: 1-2 min)…", lines[0])
	assert.Regexp(t, `^building agentdlq: still at it \(\d+ s\)$`, lines[1])
	assert.Regexp(t, `^building agentdlq: done in \d+ s$`, lines[len(lines)-1])
	assert.Equal(t, "built\n", stdout.String(), "the command's own output passes through")

	out, err := exec.Command(script, "failing", "sh", "-c", "exit 7").CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 7, ee.ExitCode(), "the command's exit status")
	assert.Contains(t, string(out), "failing: failed after")
}
