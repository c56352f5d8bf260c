package triage

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/pipeline"
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

// TenantTotal is one tenant's dead letters (Report.Tenants). The tenant is
// the letter's Hints.Tenant: dlq_meta's when the worker wrote it, else the
// body's.
type TenantTotal struct {
	// Tenant is the tenant, hashed ("sha256:…") when the pipeline's
	// eval.hash_fields names "tenant"; "" for the letters that name none.
	Tenant string `json:"tenant"`
	Count  int    `json:"count"`
	// SharePercent is Count as a share of the report's messages.
	SharePercent float64 `json:"share_percent"`
	// ByReason counts the tenant's letters by reason, most first.
	ByReason []TenantReason `json:"by_reason"`
	// OldestMessageID is the tenant's letter dead-lettered first;
	// OldestDeadLetteredAt when, and DwellSeconds how long it has waited
	// in the DLQ since, as of the report.
	OldestMessageID      string    `json:"oldest_message_id"`
	OldestDeadLetteredAt time.Time `json:"oldest_dead_lettered_at"`
	DwellSeconds         int64     `json:"dwell_seconds"`
	// OldestAgeSeconds is the age of the tenant's oldest letter by the
	// clock its expiry runs from (as ReasonTotal's).
	OldestAgeSeconds int64 `json:"oldest_age_seconds"`
	// Dominant is true when the tenant holds more than
	// DominantTenantPercent % of the letters and more than
	// DominantTenantMin of them.
	Dominant bool `json:"dominant,omitempty"`
}

// TenantReason is one reason's count within a tenant.
type TenantReason struct {
	Reason deadletter.Reason `json:"reason"`
	Count  int               `json:"count"`
}

// tenantAcc gathers one tenant's letters while Build runs.
type tenantAcc struct {
	t        TenantTotal
	byReason map[deadletter.Reason]int
}

func (a *tenantAcc) add(t *Tagged, age int64) {
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
func tenantTotals(accs map[string]*tenantAcc, total int, now time.Time, hashed bool) ([]TenantTotal, int) {
	out := make([]TenantTotal, 0, len(accs))
	for name, a := range accs {
		t := a.t
		t.Tenant = name
		if hashed && name != "" {
			t.Tenant = HashValue(name)
		}
		t.SharePercent = math.Round(1000*float64(t.Count)/float64(max(total, 1))) / 10
		t.DwellSeconds = max(0, int64(now.Sub(t.OldestDeadLetteredAt)/time.Second))
		for r, n := range a.byReason {
			t.ByReason = append(t.ByReason, TenantReason{Reason: r, Count: n})
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
func dominantAttention(t TenantTotal) string {
	top := ""
	if len(t.ByReason) > 0 {
		top = fmt.Sprintf(", most of them %s (%d)", t.ByReason[0].Reason, t.ByReason[0].Count)
	}
	return fmt.Sprintf("tenant %s holds %s of the dead letters (%d)%s: one tenant's backlog or poison; redrive with a per-tenant budget (redrive select --per-tenant N) so that its replay cannot flood the others",
		t.Tenant, fmt.Sprintf("%.1f %%", t.SharePercent), t.Count, top)
}

// SLOStatus is the report's account of the pipeline's dead-letter SLO
// (pipeline.SLO): the target, the dead letters of the period, and, when
// the caller knows how many tasks the worker processed in the period
// (SpendBudget), the share of the period's error budget they spent.
//
// Triage reads the DLQ, not the worker's metrics: the Processed count
// comes from the caller (`agentdlq triage --processed N`, from the
// worker's Processed metric). Without it the report states the target and
// the period's dead letters only. The period's dead letters are the
// letters still in the DLQ whose dead-letter time falls in the period: a
// lower bound once some were redriven or rejected.
type SLOStatus struct {
	TargetPercent float64   `json:"target_percent"`
	PeriodStart   time.Time `json:"period_start"`
	PeriodSeconds int64     `json:"period_seconds"`
	DeadLettered  int       `json:"dead_lettered"`
	// Processed is the tasks the worker processed in the period, when given.
	Processed *int `json:"processed,omitempty"`
	// BadPercent is DeadLettered / (Processed + DeadLettered) in percent;
	// BudgetSpentPercent is BadPercent over the error budget (100 -
	// target): 100 means the period spent exactly what the target allows,
	// above 100 the period alone breaks the objective. Both need Processed.
	BadPercent         *float64 `json:"bad_percent,omitempty"`
	BudgetSpentPercent *float64 `json:"budget_spent_percent,omitempty"`
}

// sloStatus counts the dead letters of the period ending at now.
func sloStatus(tagged []Tagged, p *pipeline.Pipeline, now time.Time) *SLOStatus {
	period := time.Duration(p.Triage.ScheduleMinutes) * time.Minute
	s := &SLOStatus{TargetPercent: p.SLO.TargetPercent, PeriodStart: now.Add(-period), PeriodSeconds: int64(period / time.Second)}
	for i := range tagged {
		if at := tagged[i].DeadLetteredAt; !at.Before(s.PeriodStart) && !at.After(now) {
			s.DeadLettered++
		}
	}
	return s
}

// SpendBudget states the period's error budget spent, given how many tasks
// the worker processed in the period (its Processed metric). A negative
// count is ignored.
func (s *SLOStatus) SpendBudget(processed int) {
	if s == nil || processed < 0 {
		return
	}
	s.Processed = &processed
	total := processed + s.DeadLettered
	bad := 0.0
	if total > 0 {
		bad = 100 * float64(s.DeadLettered) / float64(total)
	}
	spent := 0.0
	if budget := 100 - s.TargetPercent; budget > 0 {
		spent = 100 * bad / budget
	}
	bad, spent = math.Round(bad*1000)/1000, math.Round(spent*10)/10
	s.BadPercent, s.BudgetSpentPercent = &bad, &spent
}
