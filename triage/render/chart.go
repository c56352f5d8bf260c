package render

import (
	"fmt"
	"slices"
	"time"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/triage"
)

// barChart is the "dead letters by reason over time" chart, laid out for an SVG
// of Width × Height user units: one stacked bar per triage run, oldest on the
// left, one colour per reason. A run whose scan was partial is no count, so
// it is no coloured bar either: it is a dashed outline of what it saw (a
// lower bound), marked "?", with its own legend entry, so that a partial
// run between two full ones never reads as a drop. It is pure data: the
// HTML report and the console draw it with the same template, with no script.
type barChart struct {
	Width, Height float64
	// PlotTop and PlotBottom bound the bars vertically; PlotLeft is the y axis.
	PlotTop, PlotBottom, PlotLeft float64
	Max                           int
	Bars                          []chartBar
	Ticks                         []chartTick
	// Legend's counts are the latest complete run's, LatestLabel its time
	// ("" when no run was complete: the legend then shows no counts).
	Legend      []chartLegend
	LatestLabel string
	// PartialRuns counts the runs drawn as outlines (partial scans).
	PartialRuns int
	// FirstLabel and LastLabel name the first and the last run's time.
	FirstLabel, LastLabel string
}

// chartBar is one run: reason segments for a complete scan; for a partial
// one (Partial) no segments, and an outline from Y of height H.
type chartBar struct {
	X, W     float64
	Title    string // what a hover shows: the time and the counts
	Partial  bool
	Y, H     float64
	Segments []chartSegment
}

// chartSegment is one reason's share of a bar.
type chartSegment struct {
	Y, H   float64
	Color  string
	Reason deadletter.Reason
	Count  int
}

// chartTick is a y-axis line.
type chartTick struct {
	Y     float64
	Label string
}

// chartLegend is one reason's colour.
type chartLegend struct {
	Reason deadletter.Reason
	Color  string
	Latest int // its count in the latest run
}

// reasonColors is one colour per reason, in taxonomy order
// (deadletter.AllReasons), each far enough from the others to tell apart
// in a stacked bar.
var reasonColors = []string{
	"#4e79a7", // budget_exhausted: blue
	"#f28e2b", // json_invalid: orange
	"#e15759", // schema_invalid: red
	"#b07aa1", // tool_unknown: purple
	"#ff9da7", // tool_version_unsupported: pink
	"#9c755f", // signature_invalid: brown
	"#76b7b2", // guardrail_reject: teal
	"#d62728", // idempotency_key_reused: crimson
	"#edc948", // auth_config: yellow
	"#59a14f", // dependency_open: green
	"#2b2b2b", // effect_unknown: near black
	"#8c8c3c", // policy_limit: olive
	"#bab0ac", // unclassified: grey
	"#17becf", // receive_limit: cyan
	"#7b4173", // redrive_loop: plum
}

// reasonColor is the chart colour of a reason.
func reasonColor(r deadletter.Reason) string {
	i := slices.Index(deadletter.AllReasons(), r)
	if i < 0 {
		return "#888888"
	}
	return reasonColors[i%len(reasonColors)]
}

// buildChart lays out the history (oldest first) as a stacked bar chart.
func buildChart(history []triage.HistoryPoint) barChart {
	c := barChart{Width: 960, Height: 190, PlotTop: 10, PlotBottom: 162, PlotLeft: 44}
	if len(history) == 0 {
		return c
	}
	seen := map[deadletter.Reason]bool{}
	for _, p := range history {
		c.Max = max(c.Max, p.Messages, sum(p.ByReason))
		for r, n := range p.ByReason {
			if n > 0 {
				seen[r] = true
			}
		}
	}
	scaleMax := niceCeil(max(c.Max, 1))
	plotH := c.PlotBottom - c.PlotTop
	for i := 0; i <= 4; i++ {
		v := scaleMax * i / 4
		c.Ticks = append(c.Ticks, chartTick{Y: c.PlotBottom - plotH*float64(v)/float64(scaleMax), Label: fmt.Sprint(v)})
	}
	reasons := []deadletter.Reason{}
	for _, r := range deadletter.AllReasons() {
		if seen[r] {
			reasons = append(reasons, r)
		}
	}
	latest := triage.HistoryPoint{}
	for i := len(history) - 1; i >= 0; i-- {
		if !history[i].Partial {
			latest = history[i]
			c.LatestLabel = latest.GeneratedAt.UTC().Format("Jan 2 15:04Z")
			break
		}
	}
	for _, r := range reasons {
		c.Legend = append(c.Legend, chartLegend{Reason: r, Color: reasonColor(r), Latest: latest.ByReason[r]})
	}
	plotW := c.Width - c.PlotLeft - 8
	slot := plotW / float64(len(history))
	w := min(slot*0.7, 48)
	for i, p := range history {
		b := chartBar{X: c.PlotLeft + slot*float64(i) + (slot-w)/2, W: w, Partial: p.Partial}
		b.Title = fmt.Sprintf("%s: %d dead letters", p.GeneratedAt.UTC().Format("2006-01-02 15:04Z"), p.Messages)
		if p.Partial {
			// A lower bound: an outline, no reason colours, and no count.
			c.PartialRuns++
			b.H = plotH * float64(max(p.Messages, sum(p.ByReason))) / float64(scaleMax)
			b.Y = c.PlotBottom - b.H
			b.Title = fmt.Sprintf("%s: partial scan, saw at least %d dead letters (not a count: the scan did not see every letter)",
				p.GeneratedAt.UTC().Format("2006-01-02 15:04Z"), p.Messages)
			c.Bars = append(c.Bars, b)
			continue
		}
		y := c.PlotBottom
		for _, r := range reasons {
			n := p.ByReason[r]
			if n == 0 {
				continue
			}
			h := plotH * float64(n) / float64(scaleMax)
			y -= h
			b.Segments = append(b.Segments, chartSegment{Y: y, H: h, Color: reasonColor(r), Reason: r, Count: n})
			b.Title += fmt.Sprintf("\n%s %d", r, n)
		}
		c.Bars = append(c.Bars, b)
	}
	c.FirstLabel = history[0].GeneratedAt.UTC().Format("Jan 2 15:04Z")
	c.LastLabel = history[len(history)-1].GeneratedAt.UTC().Format("Jan 2 15:04Z")
	return c
}

// niceCeil rounds n up to 1, 2 or 5 times a power of ten, at least 4 (so
// that the four ticks are whole numbers).
func niceCeil(n int) int {
	if n <= 4 {
		return 4
	}
	for p := 1; ; p *= 10 {
		for _, m := range []int{1, 2, 5} {
			if m*p*4 >= n && (m*p*4)%4 == 0 {
				return m * p * 4
			}
		}
	}
}

func sum(m map[deadletter.Reason]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// since is a compact relative time for the templates.
func since(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	if d < 0 {
		return "in " + age(int64(-d/time.Second))
	}
	return age(int64(d/time.Second)) + " ago"
}
