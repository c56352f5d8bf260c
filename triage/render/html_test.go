package render

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/store"
)

// TestHTMLSelfContained: report.html needs no server and runs no script.
func TestHTMLSelfContained(t *testing.T) {
	t.Parallel()
	r := triage.Build(tagAll(fixture(t)), testPipeline(t, false), t0)
	hist := []triage.HistoryPoint{
		{GeneratedAt: t0.Add(-2 * time.Hour), Messages: 3, ByReason: map[deadletter.Reason]int{deadletter.ReasonSchemaInvalid: 3}},
		triage.PointOf(r, ""),
	}
	var b bytes.Buffer
	require.NoError(t, HTML(&b, r, hist))
	page := b.String()
	for _, want := range []string{
		"<style>", "<svg", "agent-tasks", "schema_invalid", "after the fix is deployed", "Attention",
		"Dead letters by reason, last 2 triage runs",
	} {
		assert.Contains(t, page, want)
	}
	assert.NotContains(t, page, "<script")
	assert.NotRegexp(t, regexp.MustCompile(`(?i)(src|href)="(https?:)?//`), page, "nothing fetched from elsewhere")
	assert.NotContains(t, page, `href="/group`, "no console links in the report")
	assert.Equal(t, 2, strings.Count(page, "<title>")-1, "one hover title per bar")
}

// TestHistoryKeepsEveryRun: one report per run under <pipeline>/reports/,
// read back oldest first for the chart.
func TestHistoryKeepsEveryRun(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dest := store.Folder{Root: t.TempDir()}
	p := testPipeline(t, false)
	for i := range 3 {
		now := t0.Add(time.Duration(i) * time.Hour)
		keys, err := WriteReport(ctx, dest, triage.Build(tagAll(fixture(t)[:5+i]), p, now), now)
		require.NoError(t, err)
		require.Len(t, keys, 3)
	}
	require.NoError(t, dest.Put(ctx, "agent-tasks/reports/broken.json", []byte("{"), "application/json"))

	hist, err := triage.History(ctx, dest, "agent-tasks", 0)
	require.Error(t, err, "the broken report is named")
	assert.Contains(t, err.Error(), "broken.json")
	require.Len(t, hist, 3, "the readable ones are kept")
	for i, h := range hist {
		assert.Equal(t, t0.Add(time.Duration(i)*time.Hour), h.GeneratedAt)
		assert.Equal(t, 5+i, h.Messages)
		assert.Equal(t, 5+i, sum(h.ByReason))
	}
	last, err := triage.History(ctx, dest, "agent-tasks", 2)
	require.Error(t, err)
	assert.Len(t, last, 1, "the limit counts the latest keys, the broken one included")

	latest, key, err := triage.LatestReport(ctx, store.Folder{Root: dest.Root}, "other")
	require.NoError(t, err)
	assert.Nil(t, latest, "no report yet is not an error")
	assert.Empty(t, key)
}

func TestBuildChart(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		history []triage.HistoryPoint
		bars    int // want: bars drawn
		legend  []deadletter.Reason
		max     string // want: the top tick's label
	}{
		{name: "empty", history: nil, bars: 0},
		{name: "one run", bars: 1, legend: []deadletter.Reason{deadletter.ReasonBudgetExhausted}, max: "4",
			history: []triage.HistoryPoint{{GeneratedAt: t0, Messages: 3, ByReason: map[deadletter.Reason]int{deadletter.ReasonBudgetExhausted: 3}}}},
		{name: "reasons in taxonomy order", bars: 2, max: "200",
			legend: []deadletter.Reason{deadletter.ReasonBudgetExhausted, deadletter.ReasonSchemaInvalid},
			history: []triage.HistoryPoint{
				{GeneratedAt: t0, Messages: 150, ByReason: map[deadletter.Reason]int{deadletter.ReasonSchemaInvalid: 100, deadletter.ReasonBudgetExhausted: 50}},
				{GeneratedAt: t0.Add(time.Hour), Messages: 0, ByReason: map[deadletter.Reason]int{}},
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := buildChart(tc.history)
			assert.Len(t, c.Bars, tc.bars)
			var legend []deadletter.Reason
			for _, l := range c.Legend {
				legend = append(legend, l.Reason)
			}
			assert.Equal(t, tc.legend, legend)
			if tc.max != "" {
				assert.Equal(t, tc.max, c.Ticks[len(c.Ticks)-1].Label)
			}
			for _, b := range c.Bars {
				for _, s := range b.Segments {
					assert.GreaterOrEqual(t, s.Y, c.PlotTop-0.001, "inside the plot")
					assert.LessOrEqual(t, s.Y+s.H, c.PlotBottom+0.001)
				}
			}
		})
	}
}
