package console

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/report"
)

// TestPartialReportPages: a report whose scan did not see every letter is
// marked on the overview, bannered on the pipeline and group pages, and
// drawn in the chart as an outline between two full runs, not as a drop.
func TestPartialReportPages(t *testing.T) {
	t.Parallel()
	f := newFixtureOf(t, effectUnknownLetters(t, "k-1", "k-2"))
	f.r.Complete, f.r.Partial = false, true
	f.r.Scan = report.ScanStats{Unique: 2, ApproxDepth: 2, ApproxInFlight: 13, Partial: true, PartialCause: triage.CauseInFlight, RetryAfterSeconds: 30,
		PartialReason: "13 messages in flight when the scan started could not be read"}
	f.r.PartialReasons = []string{"scan: " + f.r.Scan.PartialReason}
	eu := func(at time.Duration, n int) triage.HistoryPoint {
		return triage.HistoryPoint{GeneratedAt: t0.Add(at), Messages: n, ByReason: map[deadletter.Reason]int{deadletter.ReasonEffectUnknown: n}}
	}
	hist := []triage.HistoryPoint{eu(-2*time.Hour, 15), triage.PointOf(f.r, "agent-tasks/reports/x.json")}
	f.s.snaps[f.p.Name] = newSnapshot(f.r, "agent-tasks/reports/x.json", hist)

	page := func(path string) string {
		w := f.get(t, path)
		require.Equal(t, http.StatusOK, w.Code, w.Body.String())
		return w.Body.String()
	}
	assert.Contains(t, page("/"), ">partial scan</span>")

	pl := page("/pipeline?p=agent-tasks")
	assert.Contains(t, pl, `id="partial-scan"`)
	assert.Contains(t, pl, "PARTIAL SCAN: saw 2 of about 15 dead letters (2 visible and 13 in flight when it started); the counts are a lower bound")
	assert.Contains(t, pl, "Rerun in about 30s")
	assert.Equal(t, 1, strings.Count(pl, `<g class="partial">`), "the partial run is an outline")
	assert.Contains(t, pl, "partial scan (1): saw at least this many, not a count")
	assert.Contains(t, pl, "<b>15</b>", "the legend counts the latest complete run")
	assert.NotContains(t, pl, "style=", "no inline style (the CSP forbids it)")

	g := f.r.Groups[0]
	gp := page("/group?p=agent-tasks&r=" + string(g.Reason) + "&fp=" + g.Fingerprint)
	assert.Contains(t, gp, "keys may be missing here")

	// A complete report has none of it.
	c := newFixtureOf(t, effectUnknownLetters(t, "k-1"))
	w := c.get(t, "/pipeline?p=agent-tasks")
	assert.NotContains(t, w.Body.String(), `id="partial-scan"`)
	assert.NotContains(t, c.get(t, "/").Body.String(), "partial scan")
}
