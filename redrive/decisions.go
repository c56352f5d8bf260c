package redrive

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/redrive/audit"
)

// decision is one decision the owner recorded, as the audit holds it: a
// rejection (PlanGroup.Rejected).
type decision struct {
	Time  time.Time `json:"time"`
	Actor string    `json:"actor"`
	Why   string    `json:"why,omitempty"`
}

// KeyDecision is the owner's reconciliation of one idempotency key, as the
// audit holds it: when, by whom, why, and the outcome (and receipt)
// recorded.
type KeyDecision struct {
	Time    time.Time      `json:"time"`
	Actor   string         `json:"actor"`
	Why     string         `json:"why,omitempty"`
	Key     string         `json:"idempotency_key"`
	Tenant  string         `json:"tenant,omitempty"`
	Outcome ledger.Outcome `json:"outcome"`
	Receipt string         `json:"receipt,omitempty"`
}

// Decisions are the owner's decisions on a pipeline's dead letters that
// the audit holds: the rejections and the reconciliations that succeeded.
type Decisions struct {
	// Rejections are the successful rejections, oldest first.
	Rejections []audit.Entry
	// Reconciled is the latest successful reconciliation of each key.
	Reconciled map[string]KeyDecision
}

// decisionActions are the audit actions Decisions are read from.
func decisionActions() []audit.Action {
	return []audit.Action{audit.ActionReject, audit.ActionReconcile}
}

// decisionsFrom picks the decisions out of audit records.
func decisionsFrom(entries []audit.Entry) Decisions {
	d := Decisions{Reconciled: map[string]KeyDecision{}}
	es := slices.Clone(entries)
	slices.SortStableFunc(es, func(a, b audit.Entry) int { return a.Time.Compare(b.Time) })
	for _, e := range es {
		if e.Outcome != audit.OutcomeOK {
			continue
		}
		switch e.Action {
		case audit.ActionReject:
			d.Rejections = append(d.Rejections, e)
		case audit.ActionReconcile:
			k := e.Detail["idempotency_key"]
			if k == "" {
				continue
			}
			d.Reconciled[k] = KeyDecision{Time: e.Time, Actor: e.Actor, Why: e.Why, Key: k, Tenant: e.Detail["tenant"],
				Outcome: ledger.Outcome(e.Detail["outcome"]), Receipt: e.Detail["receipt"]}
		}
	}
	return d
}

// rejection returns the latest rejection that covers the group of reason
// and fingerprint: one that named the reason and either no fingerprint
// (every group of it) or this one.
func (d Decisions) rejection(reason deadletter.Reason, fingerprint string) (decision, bool) {
	for i := len(d.Rejections) - 1; i >= 0; i-- {
		e := d.Rejections[i]
		if !slices.Contains(e.Reasons, string(reason)) {
			continue
		}
		if len(e.Fingerprints) == 0 || slices.Contains(e.Fingerprints, fingerprint) {
			return decision{Time: e.Time, Actor: e.Actor, Why: e.Why}, true
		}
	}
	return decision{}, false
}

// Decisions reads the pipeline's decisions from the audit store.
func (r *Redriver) Decisions(ctx context.Context) (Decisions, error) {
	es, err := r.cfg.Audit.Entries(ctx, r.cfg.Pipeline.Name, decisionActions()...)
	if err != nil {
		return Decisions{Reconciled: map[string]KeyDecision{}}, err
	}
	return decisionsFrom(es), nil
}

// rejectWarnings says what a rejection of reasons (and fingerprints,
// full ones; none means every group of the reasons) should make the owner
// think twice about: a group already rejected, and a reason the policy
// would let be redriven (now, or after a fix or a review). It is pure.
func rejectWarnings(d Decisions, reasons []deadletter.Reason, fingerprints []string, groups []Group) []string {
	var out []string
	sel := selector{Reasons: reasons, Fingerprints: fingerprints}
	for _, g := range groups {
		if !sel.match(g.Reason, g.Fingerprint) {
			continue
		}
		if prev, ok := d.rejection(g.Reason, g.Fingerprint); ok {
			out = append(out, fmt.Sprintf("%s %s was already rejected by %s at %s (%s): this records the decision again",
				g.Reason, orDash(g.Fingerprint), prev.Actor, prev.Time.UTC().Format(time.RFC3339), prev.Why))
		}
	}
	rs := slices.Clone(reasons)
	sort.Slice(rs, func(i, j int) bool { return order(rs[i]) < order(rs[j]) })
	for _, reason := range rs {
		switch reason.Redrivable() {
		case deadletter.RedriveYes:
			out = append(out, fmt.Sprintf("%s may be redriven by policy (%s): a rejection gives up work a redrive could finish", reason, reason.NextAction()))
		case deadletter.RedriveAfterFix:
			out = append(out, fmt.Sprintf("%s may be redriven once the fix is deployed: a rejection gives up work a redrive could finish", reason))
		case deadletter.RedriveAfterReview:
			out = append(out, fmt.Sprintf("%s may be redriven after a review of the logs: a rejection gives up work a redrive could finish", reason))
		}
	}
	return out
}
