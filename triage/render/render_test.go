package render

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/dlq"
	"github.com/agentdlq/agentdlq/triage/report"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./triage/render -run %s -update to create it", t.Name())
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs from the golden file (-want +got):\n%s", name, diff)
	}
}

// TestReportGolden pins the terminal and Markdown forms of a report (the
// JSON form is triage's TestReportGolden, of the same report).
func TestReportGolden(t *testing.T) {
	t.Parallel()
	r := triage.Build(tagAll(fixture(t)), testPipeline(t, false), t0)
	r.Queue = "http://127.0.0.1:4566/000000000000/agent-tasks-dlq"
	r.Scan = report.ScanStats{Queue: r.Queue, ApproxDepth: 16, Receives: 3, EmptyReceives: 1, Received: 16, Unique: 16, Released: 16,
		Receivers: 1, VisibilityTimeoutSeconds: 30, StartedAt: t0.Add(-2 * time.Second), DurationSeconds: 2, MessagesPerSecond: 8, StopReason: "empty"}

	var text, mdown bytes.Buffer
	require.NoError(t, Text(&text, r))
	golden(t, "report.txt.golden", text.Bytes())
	require.NoError(t, Markdown(&mdown, r))
	golden(t, "report.md.golden", mdown.Bytes())
}

// TestFilteredReport: a narrowed report says in its header which letters
// it counts, of how many.
func TestFilteredReport(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, false)
	r := triage.Build(tagAll(fixture(t)), p, t0)
	n, err := triage.Narrow(r, p, dlq.Filter{Tenant: "acme", Since: t0.Add(-4 * time.Hour)})
	require.NoError(t, err)
	var text, mdown strings.Builder
	require.NoError(t, Text(&text, n))
	require.NoError(t, Markdown(&mdown, n))
	require.True(t, strings.HasPrefix(n.Filter.Summary(), "tenant=acme since=2026-11-29T08:00:00Z: "), n.Filter.Summary())
	assert.Contains(t, text.String(), "FILTERED: "+n.Filter.Summary()+"; the counts below are of those only")
	assert.Contains(t, mdown.String(), "- **filtered**: "+n.Filter.Summary()+"; the counts below are of those only")
}
