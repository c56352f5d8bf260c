package render

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/report"
	"github.com/agentdlq/agentdlq/triage/store"
)

// KeepIn is the triage.Keeper that keeps each run's report in dest with
// WriteReport (triage.Config.Keep).
func KeepIn(dest store.Destination) triage.Keeper { return keeper{dest} }

type keeper struct{ dest store.Destination }

func (k keeper) Keep(ctx context.Context, r *report.Report, now time.Time) ([]string, error) {
	return WriteReport(ctx, k.dest, r, now)
}

// WriteReport keeps one triage run's report in dest under
// triage.ReportBase: ".json", ".md" and ".html" (the self-contained
// page, whose chart shows this run and the HistoryLimit-1 before it). It
// returns the keys in that order. An earlier report that cannot be read only
// leaves a gap in the chart.
func WriteReport(ctx context.Context, dest store.Destination, r *report.Report, now time.Time) ([]string, error) {
	base := triage.ReportBase(r, now)
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	var md, page bytes.Buffer
	if err := Markdown(&md, r); err != nil {
		return nil, err
	}
	history, _ := triage.History(ctx, dest, r.Pipeline, triage.HistoryLimit-1) // a gap in the chart at worst
	history = append(history, triage.PointOf(r, base+".json"))
	if err := HTML(&page, r, history); err != nil {
		return nil, err
	}
	files := []struct {
		key, ct string
		data    []byte
	}{
		{base + ".json", "application/json", append(data, '\n')},
		{base + ".md", "text/markdown; charset=utf-8", md.Bytes()},
		{base + ".html", "text/html; charset=utf-8", page.Bytes()},
	}
	keys := make([]string, 0, len(files))
	for _, o := range files {
		if err := dest.Put(ctx, o.key, o.data, o.ct); err != nil {
			return nil, fmt.Errorf("triage: eval export failed: to %s: write report %s: %w", dest, o.key, err) // the message it always had
		}
		keys = append(keys, o.key)
	}
	return keys, nil
}
