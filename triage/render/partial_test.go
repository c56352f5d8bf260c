package render

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/report"
	"github.com/agentdlq/agentdlq/triage/store"
)

// TestChartPartialIsNotADrop: a partial run between two full ones is drawn
// as an outline without reason colours, never as a coloured bar that
// drops; the legend's counts are the latest complete run's.
func TestChartPartialIsNotADrop(t *testing.T) {
	t.Parallel()
	full := func(at time.Duration, n int) triage.HistoryPoint {
		return triage.HistoryPoint{GeneratedAt: t0.Add(at), Messages: n, ByReason: map[deadletter.Reason]int{deadletter.ReasonEffectUnknown: n}}
	}
	partial := full(time.Hour, 5)
	partial.Partial = true

	tests := []struct {
		name        string
		history     []triage.HistoryPoint
		colored     []int  // want: the count each coloured bar draws, oldest first
		latest      int    // want: the legend's count of effect_unknown
		latestLabel string // want: the run the legend counts
	}{
		{name: "partial between two full runs", history: []triage.HistoryPoint{full(0, 15), partial, full(2*time.Hour, 15)},
			colored: []int{15, 15}, latest: 15, latestLabel: "Nov 29 14:00Z"},
		{name: "the latest run partial: the legend keeps the last count", history: []triage.HistoryPoint{full(0, 15), partial},
			colored: []int{15}, latest: 15, latestLabel: "Nov 29 12:00Z"},
		{name: "only partial runs: no counts", history: []triage.HistoryPoint{partial}, colored: nil, latest: 0, latestLabel: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := buildChart(tc.history)
			require.Len(t, c.Bars, len(tc.history), "every run has its place on the time axis")
			var colored []int
			partials := 0
			for i, b := range c.Bars {
				assert.Equal(t, tc.history[i].Partial, b.Partial)
				if b.Partial {
					partials++
					assert.Empty(t, b.Segments, "a partial run has no reason colours")
					assert.Contains(t, b.Title, "partial scan, saw at least 5 dead letters (not a count")
					assert.InDelta(t, c.PlotBottom, b.Y+b.H, 0.001, "the outline stands on the axis")
					assert.Positive(t, b.H)
					continue
				}
				n := 0
				for _, s := range b.Segments {
					n += s.Count
				}
				colored = append(colored, n)
			}
			assert.Equal(t, tc.colored, colored, "no coloured bar drops")
			assert.Equal(t, partials, c.PartialRuns)
			require.Len(t, c.Legend, 1)
			assert.Equal(t, tc.latest, c.Legend[0].Latest)
			assert.Equal(t, tc.latestLabel, c.LatestLabel)

			var b bytes.Buffer
			r := triage.Build(nil, testPipeline(t, false), t0)
			require.NoError(t, HTML(&b, r, tc.history))
			page := b.String()
			assert.Equal(t, partials, strings.Count(page, `<g class="partial">`))
			assert.Equal(t, partials, strings.Count(page, `fill="none" stroke="#6b7785" stroke-width="1.5" stroke-dasharray="4 3"`))
			assert.Contains(t, page, "partial scan (1): saw at least this many, not a count")
			assert.Equal(t, len(tc.colored), strings.Count(page, `fill="`+reasonColor(deadletter.ReasonEffectUnknown)+`"/>`)-1, "coloured rects: one a full run, plus the legend's")
		})
	}
}

// TestHistoryPartial: the chart's Partial is the scan's, from the report's
// "complete" or, for a report written before it, from scan.partial; a
// report whose export failed after a complete scan is a count.
func TestHistoryPartial(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dest := store.Folder{Root: t.TempDir()}
	p := testPipeline(t, false)

	complete := triage.Build(tagAll(fixture(t)), p, t0)
	exportFailed := triage.Build(tagAll(fixture(t)), p, t0.Add(time.Hour))
	exportFailed.Partial, exportFailed.PartialReasons = true, []string{"eval export failed: disk full"}
	scanPartial := triage.Build(tagAll(fixture(t)[:4]), p, t0.Add(2*time.Hour))
	scanPartial.Complete, scanPartial.Partial = false, true
	scanPartial.Scan.Partial, scanPartial.Scan.PartialReason = true, "saw 4 of about 16 messages"
	for _, r := range []*report.Report{complete, exportFailed, scanPartial} {
		_, err := WriteReport(ctx, dest, r, r.GeneratedAt)
		require.NoError(t, err)
	}
	// A report written before "complete" was added: scan.partial says.
	old := triage.Build(tagAll(fixture(t)[:3]), p, t0.Add(3*time.Hour))
	old.Partial, old.Scan.Partial = true, true
	data, err := json.Marshal(old)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	delete(m, "complete")
	data, err = json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, dest.Put(ctx, triage.ReportBase(old, old.GeneratedAt)+".json", data, "application/json"))

	hist, err := triage.History(ctx, dest, p.Name, 0)
	require.NoError(t, err)
	var got []bool
	for _, h := range hist {
		got = append(got, h.Partial)
	}
	assert.Equal(t, []bool{false, false, true, true}, got, "complete, export failed (a count), scan partial, old partial")
	assert.False(t, triage.PointOf(exportFailed, "").Partial)
	assert.True(t, triage.PointOf(scanPartial, "").Partial)

	latest, _, err := triage.LatestReport(ctx, dest, p.Name)
	require.NoError(t, err)
	assert.False(t, latest.Complete, "an old partial report reads as incomplete")
	require.NoError(t, dest.Put(ctx, triage.ReportBase(old, old.GeneratedAt.Add(time.Hour))+".json", bytes.ReplaceAll(data, []byte(`"partial":true`), []byte(`"partial":false`)), "application/json"))
	latest, _, err = triage.LatestReport(ctx, dest, p.Name)
	require.NoError(t, err)
	assert.True(t, latest.Complete, "an old complete report reads as complete")
}
