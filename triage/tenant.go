package triage

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/triage/dlq"
	"github.com/agentdlq/agentdlq/triage/report"
)

// A tenant dominates the DLQ when it holds more than DominantTenantPercent
// of the dead letters and more than DominantTenantMin of them: its runaway
// agent (or its poison) is the DLQ, and a redrive of everything would be a
// replay of its backlog. Attention names it.
const (
	DominantTenantPercent = 50
	DominantTenantMin     = 10
)

// maxTenantRows bounds the report's tenant breakdown; TenantsOmitted counts
// the rest (the smallest).
const maxTenantRows = 50

// tenantAcc gathers one tenant's letters while Build runs.
type tenantAcc struct {
	t        report.TenantTotal
	byReason map[deadletter.Reason]int
}

func (a *tenantAcc) add(t *dlq.Tagged, age int64) {
	a.t.Count++
	a.byReason[t.Reason]++
	at := t.DeadLetteredAt.UTC()
	if a.t.OldestMessageID == "" || at.Before(a.t.OldestDeadLetteredAt) ||
		(at.Equal(a.t.OldestDeadLetteredAt) && t.MessageID < a.t.OldestMessageID) {
		a.t.OldestMessageID, a.t.OldestDeadLetteredAt = t.MessageID, at
	}
	a.t.OldestAgeSeconds = max(a.t.OldestAgeSeconds, age)
}

// tenantTotals turns the accumulated tenants into the report's rows: most
// letters first (the tenant's name breaks ties), at most maxTenantRows, and
// how many were left out.
func tenantTotals(accs map[string]*tenantAcc, total int, now time.Time, hashed bool) ([]report.TenantTotal, int) {
	out := make([]report.TenantTotal, 0, len(accs))
	for name, a := range accs {
		t := a.t
		t.Tenant = name
		if hashed && name != "" {
			t.Tenant = HashValue(name)
		}
		t.SharePercent = math.Round(1000*float64(t.Count)/float64(max(total, 1))) / 10
		t.DwellSeconds = max(0, int64(now.Sub(t.OldestDeadLetteredAt)/time.Second))
		for r, n := range a.byReason {
			t.ByReason = append(t.ByReason, report.TenantReason{Reason: r, Count: n})
		}
		sort.Slice(t.ByReason, func(i, j int) bool {
			if t.ByReason[i].Count != t.ByReason[j].Count {
				return t.ByReason[i].Count > t.ByReason[j].Count
			}
			return t.ByReason[i].Reason < t.ByReason[j].Reason
		})
		t.Dominant = name != "" && 100*t.Count > DominantTenantPercent*total && t.Count > DominantTenantMin
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Tenant < out[j].Tenant
	})
	if len(out) > maxTenantRows {
		return out[:maxTenantRows], len(out) - maxTenantRows
	}
	return out, 0
}

// dominantAttention is Attention's line for a tenant that dominates the DLQ.
func dominantAttention(t report.TenantTotal) string {
	top := ""
	if len(t.ByReason) > 0 {
		top = fmt.Sprintf(", most of them %s (%d)", t.ByReason[0].Reason, t.ByReason[0].Count)
	}
	return fmt.Sprintf("tenant %s holds %s of the dead letters (%d)%s: one tenant's backlog or poison; redrive with a per-tenant budget (redrive select --per-tenant N) so that its replay cannot flood the others",
		t.Tenant, fmt.Sprintf("%.1f %%", t.SharePercent), t.Count, top)
}

// sloStatus counts the dead letters of the period ending at now.
func sloStatus(tagged []dlq.Tagged, p *pipeline.Pipeline, now time.Time) *report.SLOStatus {
	period := time.Duration(p.Triage.ScheduleMinutes) * time.Minute
	s := &report.SLOStatus{TargetPercent: p.SLO.TargetPercent, PeriodStart: now.Add(-period), PeriodSeconds: int64(period / time.Second)}
	for i := range tagged {
		if at := tagged[i].DeadLetteredAt; !at.Before(s.PeriodStart) && !at.After(now) {
			s.DeadLettered++
		}
	}
	return s
}
