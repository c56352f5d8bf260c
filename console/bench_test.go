package console

import (
	"net/http"
	"testing"

	"github.com/agentdlq/agentdlq/redrive/audit"
)

// BenchmarkPages100k serves each page of a console whose pipeline's report
// holds 100,000 dead letters (letters in memory, as after a refresh) and
// 10,000 audit records. It prints the time per page; nothing is asserted.
//
//	go test ./console -run '^$' -bench Pages100k -benchtime 20x
func BenchmarkPages100k(b *testing.B) {
	f := newFixture(b, 100_000)
	for i := range 10_000 {
		f.audit.recs = append(f.audit.recs, audit.Entry{Time: t0, Actor: "platform-oncall", Pipeline: "agent-tasks", Action: audit.ActionPlan, Outcome: audit.OutcomeShown,
			Reasons: []string{"budget_exhausted"}, Counts: map[string]int{"total": i}})
	}
	g := f.r.Groups[0]
	pages := []struct{ name, path string }{
		{"overview", "/"},
		{"pipeline", "/pipeline?p=agent-tasks"},
		{"group", "/group?p=agent-tasks&r=" + string(g.Reason) + "&fp=" + g.Fingerprint},
		{"letter", "/letter?p=agent-tasks&id=m-054321"},
		{"redrive", "/redrive?p=agent-tasks&r=budget_exhausted"},
		{"plan", "/redrive?p=agent-tasks"},
		{"reconcile", "/reconcile?p=agent-tasks&key=key-054321"},
		{"audit", "/audit?p=agent-tasks"},
		{"audit_filtered", "/audit?p=agent-tasks&action=plan&outcome=shown"},
	}
	for _, pg := range pages {
		b.Run(pg.name, func(b *testing.B) {
			size := 0
			for b.Loop() {
				w := f.get(b, pg.path)
				if w.Code != http.StatusOK {
					b.Fatalf("%s: %d %s", pg.path, w.Code, w.Body.String())
				}
				size = w.Body.Len()
			}
			b.ReportMetric(float64(size)/1024, "KB/page")
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/page")
		})
	}
}
