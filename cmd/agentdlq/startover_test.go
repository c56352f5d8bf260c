package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// outTree makes an output root as a run and an operator leave it: a run's
// audit, eval export, worker log and a pipeline's reports, beside
// screenshots, an earlier set-aside and a file of the operator's.
func outTree(t *testing.T, root string) {
	t.Helper()
	for _, d := range []string{"audit", "evals/agent-tasks", "agent-tasks/reports", "screenshots", "notes", "previous/20200101T000000Z"} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	for _, f := range []string{"audit/agent-tasks.jsonl", "worker.log", "agent-tasks/reports/r.json", "mine.txt"} {
		require.NoError(t, os.WriteFile(filepath.Join(root, f), []byte("x\n"), 0o600))
	}
}

// entries lists root's entries, sorted.
func entries(t *testing.T, root string) []string {
	t.Helper()
	es, err := os.ReadDir(root)
	require.NoError(t, err)
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

// Start over sets a run's outputs aside under previous/<UTC time>/ and
// leaves everything else; a second start over in the same second gets its
// own folder; nothing is deleted.
func TestSetAside(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "out")
	outTree(t, root)
	now := time.Date(2026, 12, 2, 1, 2, 3, 0, time.UTC)
	dest, moved, err := setAside(root, now)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(root, "previous", "20261202T010203Z"), dest)
	assert.Equal(t, []string{"agent-tasks", "audit", "evals", "worker.log"}, moved)
	assert.Equal(t, []string{"mine.txt", "notes", "previous", "screenshots"}, entries(t, root), "only a run's outputs move")
	b, err := os.ReadFile(filepath.Join(dest, "audit", "agent-tasks.jsonl"))
	require.NoError(t, err)
	assert.Equal(t, "x\n", string(b), "moved whole")
	assert.FileExists(t, filepath.Join(dest, "agent-tasks", "reports", "r.json"))

	dest, moved, err = setAside(root, now)
	require.NoError(t, err)
	assert.Empty(t, moved, "nothing of a run left")
	assert.Empty(t, dest)

	require.NoError(t, os.MkdirAll(filepath.Join(root, "audit"), 0o755))
	dest, moved, err = setAside(root, now)
	require.NoError(t, err)
	assert.Equal(t, []string{"audit"}, moved)
	assert.Equal(t, filepath.Join(root, "previous", "20261202T010203Z-2"), dest, "an earlier set-aside is never merged into")

	dest, moved, err = setAside(filepath.Join(root, "absent"), now)
	require.NoError(t, err)
	assert.Empty(t, moved)
	assert.Empty(t, dest)
}

// The demo's start over says where the old outputs went, once for a root
// given twice (the output root and --out alike).
func TestStartOverSaysWhere(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "out")
	outTree(t, root)
	var b bytes.Buffer
	require.NoError(t, startOver(&b, time.Date(2026, 12, 2, 1, 2, 3, 0, time.UTC), root, root+string(filepath.Separator)))
	want := "start over: an earlier run's agent-tasks, audit, evals, worker.log moved from " + root + " to " + filepath.Join(root, "previous", "20261202T010203Z") + "\n"
	assert.Equal(t, want, b.String())
	b.Reset()
	require.NoError(t, startOver(&b, time.Now(), root))
	assert.Empty(t, b.String(), "nothing to say when there was nothing to move")
}

// scripts/local.sh down (make local-down) sets the checkout's out/ aside as
// the demo does, but not with a private state directory (a test run's
// emulators) nor with AGENTDLQ_KEEP_OUT=1 (the demo's --stop-emulators).
func TestLocalDownSetsOutAside(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile(filepath.Join("..", "..", "scripts", "local.sh"))
	require.NoError(t, err)
	for _, tt := range []struct {
		name  string
		env   []string
		moved bool
	}{
		{name: "make local-down", moved: true},
		{name: "a private state directory", env: []string{"AGENTDLQ_LOCAL_DIR=private"}},
		{name: "AGENTDLQ_KEEP_OUT=1", env: []string{"AGENTDLQ_KEEP_OUT=1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// A checkout of one script: local.sh finds its root from where it is.
			root := t.TempDir()
			require.NoError(t, os.MkdirAll(filepath.Join(root, "scripts"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(root, "scripts", "local.sh"), src, 0o755))
			out := filepath.Join(root, "out")
			outTree(t, out)
			c := exec.Command(filepath.Join(root, "scripts", "local.sh"), "down")
			c.Env = append(os.Environ(), "AGENTDLQ_LOCAL_DIR=", "AGENTDLQ_KEEP_OUT=")
			c.Env = append(c.Env, tt.env...)
			msg, err := c.CombinedOutput()
			require.NoError(t, err, "%s", msg)
			if !tt.moved {
				assert.Contains(t, entries(t, out), "audit")
				assert.NotContains(t, string(msg), "start over")
				return
			}
			assert.Equal(t, []string{"mine.txt", "notes", "previous", "screenshots"}, entries(t, out))
			prev := entries(t, filepath.Join(out, "previous"))
			require.Len(t, prev, 2, "the earlier set-aside and this one")
			dest := filepath.Join(out, "previous", prev[1])
			assert.Equal(t, []string{"agent-tasks", "audit", "evals", "worker.log"}, entries(t, dest))
			lines := strings.Split(strings.TrimSpace(string(msg)), "\n")
			assert.Equal(t, "local: start over: an earlier run's audit, evals, worker.log, agent-tasks moved from out to out/previous/"+prev[1], lines[len(lines)-1])
		})
	}
}
