package console

import (
	"context"
	"fmt"
	"time"

	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/triage"
)

// snapshot is what the pages of one pipeline render from: the latest kept
// report, the history of reports for the chart and, after a refresh in this
// process, the tagged letters themselves. It is replaced whole, never
// changed, so a page reads it without a lock.
type snapshot struct {
	report  *triage.Report // nil: never triaged
	key     string         // the report's JSON key in Reports
	history []triage.HistoryPoint
	// letters by message id; nil when the report was read from Reports.
	letters map[string]*triage.Tagged
	loadErr string
}

func newSnapshot(r *triage.Report, key string, history []triage.HistoryPoint) *snapshot {
	s := &snapshot{report: r, key: key, history: history}
	if r == nil {
		return s
	}
	for i := range r.Groups {
		for _, t := range r.Groups[i].Letters() {
			if s.letters == nil {
				s.letters = make(map[string]*triage.Tagged, r.Totals.Messages)
			}
			s.letters[t.MessageID] = t
		}
	}
	return s
}

// loadSnapshot reads the latest report and the history from Reports.
func (s *Server) loadSnapshot(ctx context.Context, p *pipeline.Pipeline) (*snapshot, error) {
	r, key, err := triage.LatestReport(ctx, s.cfg.Reports, p.Name)
	if err != nil {
		return &snapshot{loadErr: err.Error()}, err
	}
	hist, herr := triage.History(ctx, s.cfg.Reports, p.Name, triage.HistoryLimit)
	snap := newSnapshot(r, key, hist)
	if herr != nil {
		snap.loadErr = herr.Error()
	}
	return snap, herr
}

// group finds a group of the snapshot's report.
func (sn *snapshot) group(reason, fp string) *triage.Group {
	if sn == nil || sn.report == nil {
		return nil
	}
	for i := range sn.report.Groups {
		g := &sn.report.Groups[i]
		if string(g.Reason) == reason && g.Fingerprint == fp {
			return g
		}
	}
	return nil
}

// countdown is the time left until t, for the letter page.
func countdown(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := t.Sub(now)
	if d <= 0 {
		return "due now"
	}
	days := int(d / (24 * time.Hour))
	hours := int(d%(24*time.Hour)) / int(time.Hour)
	mins := int(d%time.Hour) / int(time.Minute)
	switch {
	case days > 0:
		return fmt.Sprintf("%dd %dh %dm", days, hours, mins)
	case hours > 0:
		return fmt.Sprintf("%dh %dm", hours, mins)
	default:
		return fmt.Sprintf("%dm", max(mins, 1))
	}
}

// tenantOf is the tenant of the first letter (by message id) that carries
// idempotency key key, "" when the snapshot holds no such letter (or no
// letters: a report read from Reports). With the pipeline it scopes the key
// in the ledger; "" finds only an entry written before keys were scoped.
func (sn *snapshot) tenantOf(key string) string {
	if sn == nil {
		return ""
	}
	best, tenant := "", ""
	for id, t := range sn.letters {
		if t.Hints.IdempotencyKey == key && (best == "" || id < best) {
			best, tenant = id, t.Hints.Tenant
		}
	}
	return tenant
}
