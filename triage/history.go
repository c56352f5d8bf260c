package triage

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/triage/report"
	"github.com/agentdlq/agentdlq/triage/store"
)

// HistoryLimit is how many of a pipeline's latest reports History reads for
// the chart of dead letters by reason over time.
const HistoryLimit = 48

// reportsPrefix is where a pipeline's reports are kept, one set per triage
// run: "<pipeline>/reports/" in a folder or the eval bucket.
func reportsPrefix(pipelineName string) string { return pipelineName + "/reports/" }

// ReportBase is the key of one run's report files without the extension
// ("<pipeline>/reports/<yyyymmddThhmmssZ>-<hash>", so that keys sort by
// time): a keeper (package triage/render's) writes the report's forms
// beside one another under it, and History and LatestReport read the
// ".json" one back.
func ReportBase(r *report.Report, now time.Time) string {
	return reportsPrefix(r.Pipeline) + now.UTC().Format("20060102T150405Z") + "-" + r.SHA256()[:8]
}

// HistoryPoint is one triage run as the chart shows it.
type HistoryPoint struct {
	// Key is the report's JSON key ("" for a report not written yet).
	Key         string
	GeneratedAt time.Time
	Messages    int
	// Partial is true when the run's scan did not see every dead letter
	// (the report is not Complete): Messages and ByReason are then a lower
	// bound, never a count, and the chart does not draw them as one. A run
	// whose scan was complete but whose export failed is a count.
	Partial  bool
	ByReason map[deadletter.Reason]int
}

// PointOf is a report's point in the history.
func PointOf(r *report.Report, key string) HistoryPoint {
	p := HistoryPoint{Key: key, GeneratedAt: r.GeneratedAt, Messages: r.Totals.Messages, Partial: !r.Complete, ByReason: map[deadletter.Reason]int{}}
	for _, rt := range r.Totals.ByReason {
		p.ByReason[rt.Reason] = rt.Count
	}
	return p
}

// History reads the latest limit reports of a pipeline from dest (oldest
// first). A report that cannot be read is left out of the chart and named in
// the error, after the others were read: a chart with a gap beats none.
func History(ctx context.Context, dest store.Destination, pipelineName string, limit int) ([]HistoryPoint, error) {
	keys, err := reportKeys(ctx, dest, pipelineName)
	if err != nil {
		return nil, err
	}
	if limit > 0 && len(keys) > limit {
		keys = keys[len(keys)-limit:]
	}
	out := make([]HistoryPoint, 0, len(keys))
	var bad []string
	for _, k := range keys {
		data, err := dest.Get(ctx, k)
		if err != nil {
			bad = append(bad, k+": "+err.Error())
			continue
		}
		p, err := decodePoint(data)
		if err != nil {
			bad = append(bad, k+": "+err.Error())
			continue
		}
		p.Key = k
		out = append(out, p)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].GeneratedAt.Before(out[j].GeneratedAt) })
	if len(bad) > 0 {
		return out, fmt.Errorf("triage: %d reports unreadable: %s", len(bad), strings.Join(bad, "; "))
	}
	return out, nil
}

// reportKeys lists the JSON report keys of a pipeline, oldest first.
func reportKeys(ctx context.Context, dest store.Destination, pipelineName string) ([]string, error) {
	all, err := dest.List(ctx, reportsPrefix(pipelineName))
	if err != nil {
		return nil, fmt.Errorf("triage: list reports in %s: %w", dest, err)
	}
	keys := all[:0:0]
	for _, k := range all {
		if strings.HasSuffix(k, ".json") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys, nil
}

// LatestReport reads a pipeline's newest report from dest; nil without error
// when there is none yet.
func LatestReport(ctx context.Context, dest store.Destination, pipelineName string) (*report.Report, string, error) {
	keys, err := reportKeys(ctx, dest, pipelineName)
	if err != nil || len(keys) == 0 {
		return nil, "", err
	}
	k := keys[len(keys)-1]
	data, err := dest.Get(ctx, k)
	if err != nil {
		return nil, k, fmt.Errorf("triage: read report %s: %w", k, err)
	}
	var r report.Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, k, fmt.Errorf("triage: report %s: %w", k, err)
	}
	if r.ReportVersion != reportVersion {
		return nil, k, fmt.Errorf("triage: report %s has report_version %d, want %d", k, r.ReportVersion, reportVersion)
	}
	var has struct {
		Complete *bool `json:"complete"`
	}
	if err := json.Unmarshal(data, &has); err == nil && has.Complete == nil {
		r.Complete = !r.Scan.Partial // a report written before "complete" was added
	}
	return &r, k, nil
}

// decodePoint reads only what the chart needs of a report's JSON.
func decodePoint(data []byte) (HistoryPoint, error) {
	var doc struct {
		ReportVersion int       `json:"report_version"`
		GeneratedAt   time.Time `json:"generated_at"`
		Complete      *bool     `json:"complete"` // absent before it was added: scan.partial says
		Scan          struct {
			Partial bool `json:"partial"`
		} `json:"scan"`
		Totals struct {
			Messages int `json:"messages"`
			ByReason []struct {
				Reason deadletter.Reason `json:"reason"`
				Count  int               `json:"count"`
			} `json:"by_reason"`
		} `json:"totals"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return HistoryPoint{}, err
	}
	if doc.ReportVersion != reportVersion {
		return HistoryPoint{}, fmt.Errorf("report_version %d, want %d", doc.ReportVersion, reportVersion)
	}
	partial := doc.Scan.Partial
	if doc.Complete != nil {
		partial = !*doc.Complete
	}
	p := HistoryPoint{GeneratedAt: doc.GeneratedAt, Messages: doc.Totals.Messages, Partial: partial, ByReason: map[deadletter.Reason]int{}}
	for _, rt := range doc.Totals.ByReason {
		p.ByReason[rt.Reason] += rt.Count
	}
	return p, nil
}
