package redrive

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/dlq"
	"github.com/agentdlq/agentdlq/triage/report"
)

// buildPlan is pure: the plan for the groups a triage scan found.
func buildPlan(p *pipeline.Pipeline, groups []Group) *redrivetype.Plan {
	pl := &redrivetype.Plan{Pipeline: p.Name, Owner: p.Owner}
	gs := append([]Group(nil), groups...)
	sort.SliceStable(gs, func(i, j int) bool {
		if order(gs[i].Reason) != order(gs[j].Reason) {
			return order(gs[i].Reason) < order(gs[j].Reason)
		}
		if gs[i].Count != gs[j].Count {
			return gs[i].Count > gs[j].Count
		}
		return gs[i].Fingerprint < gs[j].Fingerprint
	})
	allYes := len(gs) > 0
	for _, g := range gs {
		v := Decide(g.Reason, Ack{})
		pg := redrivetype.PlanGroup{Reason: g.Reason, Fingerprint: g.Fingerprint, Count: g.Count, NextAction: g.Reason.NextAction(),
			Redrivable: g.Reason.Redrivable(), MayRedrive: v.Allowed, Why: v.Why, Needs: v.Needs, Next: policySteps(g.Reason, g.Fingerprint, g.Count)}
		if g.Reason.Redrivable() == deadletter.RedriveYes {
			// Redrivable by policy is not "will succeed": these letters
			// failed on every receive the budget allowed.
			pg.Why = v.Why + "; but these letters failed on every receive the budget allowed: redrive once the cause is gone, a canary first"
		}
		pl.Total += g.Count
		if !v.Allowed {
			allYes = false
		}
		pl.Groups = append(pl.Groups, pg)
	}
	switch {
	case len(gs) == 0:
		pl.StartWhy = "nothing to redrive: the DLQ is empty"
	case allYes:
		pl.Start = &redrivetype.Step{Action: audit.ActionStart}
		pl.StartWhy = "every group may be redriven by policy: a move task of the whole DLQ, or group by group with a canary"
	default:
		pl.StartWhy = "not a move task: the DLQ holds groups that need an acknowledgement or may never be redriven; redrive group by group"
	}
	return pl
}

// groupID names a group in maps: reason/fingerprint.
func groupID(reason deadletter.Reason, fingerprint string) string {
	return string(reason) + "/" + fingerprint
}

// groupInfo is what the triage report says of a group that the plan's
// decisions need.
type groupInfo struct {
	// Keys are the idempotency keys the report lists (effect_unknown groups).
	Keys []string
	// Omitted counts the group's keys the report left out of Keys (it lists
	// at most 1,000): keys nobody can have reconciled from that list.
	Omitted int
	// LastSeen is when the group's latest dead letter was dead-lettered.
	LastSeen time.Time
}

// markDecisions marks the plan's groups with the owner's past decisions (infos:
// by groupID, from the triage report, groupInfos): a group already rejected
// (nothing to do, unless dead letters arrived after the rejection), and, in
// an effect_unknown group, how many of its keys were reconciled, and what to
// run next: a reject when every key's effect was confirmed, a select
// without an override when some were reconciled as no effect.
func markDecisions(pl *redrivetype.Plan, d redrivetype.Decisions, infos map[string]groupInfo) {
	for i := range pl.Groups {
		g := &pl.Groups[i]
		info := infos[groupID(g.Reason, g.Fingerprint)]
		if prev, ok := rejection(d, g.Reason, g.Fingerprint); ok {
			g.Rejected = &prev
			at := prev.Time.UTC().Format(time.RFC3339)
			if info.LastSeen.After(prev.Time) {
				g.Why = fmt.Sprintf("rejected by %s at %s (%s), but dead letters arrived since (the last at %s): decide again", prev.Actor, at, prev.Why, info.LastSeen.UTC().Format(time.RFC3339))
				continue // the policy's steps stand
			}
			g.Why = fmt.Sprintf("rejected by %s at %s (%s): the dead letters stay until retention deletes them", prev.Actor, at, prev.Why)
			g.Next = nil // nothing to do
			continue
		}
		if g.Reason.Redrivable() != deadletter.RedriveNeverBlind {
			continue
		}
		ks := info.Keys
		g.Keys = len(ks) + info.Omitted
		for _, k := range ks {
			if kd, ok := d.Reconciled[k]; ok {
				if g.Reconciled == nil {
					g.Reconciled = map[ledger.Outcome]int{}
				}
				g.Reconciled[kd.Outcome]++
			}
		}
		conf, none := g.Reconciled[ledger.OutcomeEffectConfirmed], g.Reconciled[ledger.OutcomeNoEffect]
		open := g.Keys - conf - none
		switch {
		case g.Keys > 0 && conf == g.Keys:
			g.Why = "reconciled: effect confirmed, reject or let retention drop it (select never moves these)"
			g.Next = []redrivetype.Step{{Action: audit.ActionReject, Reason: g.Reason, Fingerprint: g.Fingerprint}}
		case none > 0:
			parts := []string{fmt.Sprintf("%d of %d keys no effect (select moves them without an override)", none, g.Keys)}
			if conf > 0 {
				parts = append(parts, fmt.Sprintf("%d effect confirmed (never moved)", conf))
			}
			if open > 0 {
				parts = append(parts, fmt.Sprintf("%d not reconciled yet (left in the DLQ)", open))
			}
			g.Why = "reconciled: " + strings.Join(parts, ", ")
			g.Next = []redrivetype.Step{selectStep(g.Reason, g.Fingerprint, none)}
		case conf > 0:
			g.Why = fmt.Sprintf("reconciled: %d of %d keys effect confirmed (never moved); reconcile the other %d first", conf, g.Keys, open)
		}
	}
}

// PlanRequest asks for the plan of a DLQ.
type PlanRequest struct {
	// Actor is who looks: recorded in the audit (a plan is not gated).
	Actor string
	// Report is optional: a triage report the caller holds (the console's
	// kept report). With it (or with Groups), Plan neither scans the DLQ
	// nor audits, a refusal (a bad Filter) included: a page view. Without
	// both, Plan scans the DLQ read-only (Config.Scan) and audits that the
	// plan was shown, or why it was refused.
	Report *report.Report
	// Groups is optional: the groups to plan (by default every group of
	// Report, or of the scan).
	Groups []Group
	// Filter is optional: plan only the dead letters it chooses (the
	// report's or the scan's letters, narrowed with triage.Narrow). A
	// Report read back from storage holds no letters: refused.
	Filter dlq.Filter
}

// Plan is the one plan entry point: for each group of the DLQ, whether it
// may be redriven, why or why not, and the next steps, marked with the
// owner's past decisions read from the audit (a group already rejected;
// for effect_unknown, how many keys were reconciled, counting a key
// reconciled as no effect only while the ledger still holds it so).
//
// A scan that saw only part of the DLQ returns the plan of what it saw
// and a *PartialError; a scan that failed is audited too.
func (r *Redriver) Plan(ctx context.Context, req PlanRequest) (*redrivetype.Plan, error) {
	badFilter := checkFilter(req.Filter)
	if badFilter != nil && (req.Report != nil || req.Groups != nil) {
		// A page view audits nothing, its refusal included.
		return nil, badFilter
	}
	if req.Report != nil && !req.Filter.IsZero() {
		rep, err := triage.Narrow(req.Report, r.cfg.Pipeline, req.Filter)
		if err != nil {
			return nil, refuseField(redrivetype.CodeBadInput, "Filter", "%v", err)
		}
		req.Report = rep
	}
	if req.Report != nil || req.Groups != nil {
		groups := req.Groups
		if groups == nil {
			groups = groupsFromReport(req.Report)
		}
		pl := buildPlan(r.cfg.Pipeline, groups)
		if req.Report != nil && req.Report.Partial {
			pl.Partial = req.Report.PartialReasons
		}
		if req.Report != nil {
			narrowPlan(pl, req.Report.Filter)
			pl.Copies, pl.CopiedLetters, pl.CopiesDiffering = req.Report.Totals.Copies, req.Report.Totals.CopiedLetters, req.Report.Totals.CopiesDiffering
		}
		r.annotatePlan(ctx, pl, req.Report)
		return pl, nil
	}
	rec := audit.Entry{Actor: req.Actor, Action: audit.ActionPlan}
	if !req.Filter.IsZero() {
		rec.Detail = map[string]string{"filter": r.filterText(req.Filter)}
	}
	if badFilter != nil {
		// Refused before the caller is asked or the DLQ scanned, and
		// audited: as every refusal of a command that reached a pipeline.
		return nil, r.record(ctx, rec, badFilter)
	}
	// Not gated, but its record says who looked: in AWS the STS caller (a
	// failure to ask is recorded, and does not hide the plan).
	_, _ = r.identify(ctx)
	groups, rep, err := r.scan(ctx)
	if err == nil && !req.Filter.IsZero() {
		if rep, err = triage.Narrow(rep, r.cfg.Pipeline, req.Filter); err == nil {
			groups = groupsFromReport(rep)
		}
	}
	if err != nil {
		return nil, r.record(ctx, rec, err)
	}
	if req.Groups != nil {
		groups = req.Groups
	}
	var partial *redrivetype.PartialError
	if rep != nil && rep.Scan.Partial {
		partial = scanPartial(rep)
	}
	pl := buildPlan(r.cfg.Pipeline, groups)
	if rep != nil && rep.Partial {
		pl.Partial = rep.PartialReasons
	}
	if rep != nil {
		narrowPlan(pl, rep.Filter)
		pl.Copies, pl.CopiedLetters, pl.CopiesDiffering = rep.Totals.Copies, rep.Totals.CopiedLetters, rep.Totals.CopiesDiffering
	}
	r.annotatePlan(ctx, pl, rep)
	reasons, fps, counts := groupFacts(groups)
	counts["total"] = pl.Total
	if pl.Copies > 0 {
		counts["copies"] = pl.Copies
	}
	rec.Reasons, rec.Fingerprints, rec.Counts, rec.Outcome = reasons, fps, counts, audit.OutcomeShown
	if partial != nil {
		// Shown, but it cannot vouch for the letters the scan missed: the
		// caller exits non-zero and says when to look again.
		rec.Outcome = audit.OutcomePartial
		return pl, r.record(ctx, rec, partial)
	}
	return pl, r.record(ctx, rec, nil)
}

// scanPartial is the outcome of a triage scan that saw part of the DLQ.
func scanPartial(rep *report.Report) *redrivetype.PartialError {
	st := rep.Scan
	return &redrivetype.PartialError{Seen: st.Unique, Depth: st.ApproxDepth + st.ApproxInFlight, Why: st.PartialReason, FIFO: st.FIFO,
		RetryAfter: time.Duration(st.VisibilityTimeoutSeconds) * time.Second}
}

// annotatePlan marks pl with the owner's past decisions: it reads them from
// the audit (pl.DecisionsUnread says why it could not) and counts a key
// reconciled as no effect only while the ledger still holds it so.
func (r *Redriver) annotatePlan(ctx context.Context, pl *redrivetype.Plan, rep *report.Report) {
	d, derr := r.Decisions(ctx)
	if derr != nil {
		pl.DecisionsUnread = derr.Error()
	}
	infos := groupInfos(rep)
	markDecisions(pl, r.stillReconciled(ctx, d, infos), infos)
}

// stillReconciled is d without the no-effect reconciliations the ledger no
// longer holds (ledger.Entry.NoEffect, what select moves by): a key redriven
// after its reconciliation whose call started again is effect_unknown anew,
// and select refuses to move it until it is reconciled again, so the plan
// must not count it as reconciled nor offer a select for it. A key the
// ledger cannot be read for is not counted either: select would not move it.
func (r *Redriver) stillReconciled(ctx context.Context, d redrivetype.Decisions, infos map[string]groupInfo) redrivetype.Decisions {
	if len(d.Reconciled) == 0 {
		return d
	}
	out := d
	out.Reconciled = make(map[string]redrivetype.KeyDecision, len(d.Reconciled))
	for _, info := range infos {
		for _, k := range info.Keys {
			kd, ok := d.Reconciled[k]
			if !ok {
				continue
			}
			if kd.Outcome == ledger.OutcomeNoEffect {
				if e, found, err := r.cfg.Ledger.Get(ctx, r.ledgerKey(kd.Tenant, k)); err != nil || !found || !e.NoEffect() {
					continue
				}
			}
			out.Reconciled[k] = kd
		}
	}
	return out
}

// groupInfos maps each group of a triage report (by groupID) to what
// annotate needs of it.
func groupInfos(rep *report.Report) map[string]groupInfo {
	out := map[string]groupInfo{}
	if rep == nil {
		return out
	}
	for _, g := range rep.Groups {
		out[groupID(g.Reason, g.Fingerprint)] = groupInfo{Keys: g.IdempotencyKeys, Omitted: g.IdempotencyKeysOmitted, LastSeen: g.LastSeen}
	}
	return out
}

// RejectRequest asks to record that the owner rejects the dead letters of
// reasons (and fingerprints): never redriven.
type RejectRequest struct {
	Who
	// Reasons is required; Fingerprints optional (every group of the
	// reasons when empty), each any unique prefix of at least 8 characters.
	Reasons      []deadletter.Reason
	Fingerprints []string
	// Groups is optional: what the DLQ holds; when nil, Reject scans the
	// DLQ itself (Config.Scan) after the checks that need no AWS call.
	Groups []Group
}

// Reject records that the owner rejects a group that must not be redriven:
// an audit entry only; the dead letters stay until retention deletes them
// (or the owner deletes them after archiving). It returns what was
// recorded and its warnings (a group rejected before, a reason the policy
// would let be redriven), which refuse nothing and are audited too.
func (r *Redriver) Reject(ctx context.Context, req RejectRequest) (*redrivetype.RejectResult, error) {
	who, reasons, fingerprints, groups := req.Who, req.Reasons, req.Fingerprints, req.Groups
	res := &redrivetype.RejectResult{Pipeline: r.cfg.Pipeline.Name}
	rs := make([]string, len(reasons))
	for i, x := range reasons {
		rs[i] = string(x)
	}
	rec := audit.Entry{Actor: who.Owner, Action: audit.ActionReject, Why: who.Why, Reasons: rs, Fingerprints: fingerprints}
	var partial *redrivetype.PartialError
	err := func() error {
		if len(reasons) == 0 {
			return refuseField(redrivetype.CodeUnknownReason, "Reasons", "is required: reject one class of cause at a time")
		}
		if groups == nil {
			if err := r.pureGateAs(audit.ActionReject, who, minRate); err != nil {
				return err
			}
			var err error
			var rep *report.Report
			if groups, rep, err = r.scan(ctx); err != nil {
				return err
			}
			if rep != nil && rep.Scan.Partial {
				partial = scanPartial(rep)
			}
		}
		if err := r.authorizeAs(ctx, audit.ActionReject, who, minRate); err != nil {
			return err
		}
		if len(fingerprints) > 0 {
			full, err := resolveFingerprints(fingerprints, reasons, groups)
			if err != nil {
				return err
			}
			rec.Fingerprints = full
		}
		sel := selector{Reasons: reasons, Fingerprints: rec.Fingerprints}
		rec.Counts = map[string]int{}
		for _, g := range groups {
			if sel.match(g.Reason, g.Fingerprint) {
				rec.Counts[string(g.Reason)] += g.Count
			}
		}
		if len(rec.Counts) == 0 {
			if partial != nil {
				return partial // the letters of the reason may be among those not seen
			}
			return refuse(redrivetype.CodeNothingSelected, "the DLQ holds no dead letter of reason %s", joinReasons(reasons))
		}
		d, derr := r.Decisions(ctx)
		if derr != nil {
			res.Warnings = append(res.Warnings, "past rejections not checked: "+derr.Error())
		}
		res.Warnings = append(res.Warnings, rejectWarnings(d, reasons, rec.Fingerprints, groups)...)
		if len(res.Warnings) > 0 {
			rec.Detail = map[string]string{"warnings": strings.Join(res.Warnings, "; ")}
		}
		return nil
	}()
	res.Reasons, res.Fingerprints, res.Counts = rec.Reasons, rec.Fingerprints, rec.Counts
	return res, r.record(ctx, rec, err)
}
