package report

import (
	"math"
	"time"

	"github.com/agentdlq/agentdlq/events/deadletter"
)

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
	// triage.DominantTenantPercent % of the letters and more than
	// triage.DominantTenantMin of them.
	Dominant bool `json:"dominant,omitempty"`
}

// TenantLabel is how a tenant reads for people (a report, a redrive's
// result): "(no tenant)" for "", the tenant of the letters that name none;
// any other tenant as it is given (hashed already where the pipeline
// hashes tenants).
func TenantLabel(t string) string {
	if t == "" {
		return "(no tenant)"
	}
	return t
}

// TenantReason is one reason's count within a tenant.
type TenantReason struct {
	Reason deadletter.Reason `json:"reason"`
	Count  int               `json:"count"`
}

// SLOStatus is the report's account of the pipeline's dead-letter SLO
// (pipeline.SLO): the target, the dead letters of the period, and, when
// the caller knows how many tasks the worker processed in the period
// (SpendBudget), the share of the period's error budget they spent.
//
// Triage reads the DLQ; the Processed count comes from the caller, given
// as a number or read from a source of the worker's Processed metric
// (triage.Config.ProcessedFrom: CloudWatch, or a local worker's EMF
// lines). Without it, or when the read failed (BudgetUnknown says why),
// the report states the target and the period's dead letters only. The
// period's dead letters are the
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
	// ProcessedSource says where Processed was read from (the source's
	// own words, e.g. the CloudWatch metric), when it was read rather than given.
	ProcessedSource string `json:"processed_source,omitempty"`
	// BudgetUnknown says why the budget spent is not stated although a
	// source was given: its read failed (a reason without secrets).
	BudgetUnknown string `json:"budget_unknown,omitempty"`
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
