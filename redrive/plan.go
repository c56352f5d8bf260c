package redrive

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/pipeline"
)

// Plan says, for each group of dead letters in a DLQ, whether it may be
// redriven, why or why not, and the exact command to run next.
type Plan struct {
	Pipeline string      `json:"pipeline"`
	Owner    string      `json:"owner"`
	Total    int         `json:"total"`
	Groups   []PlanGroup `json:"groups"`
	// Start is the `redrive start` command when every group may be redriven
	// by policy alone; otherwise it says why a move task is not the tool.
	Start string `json:"start"`
	// Partial says why the triage scan behind the plan may have missed dead
	// letters (counts may be low); empty when it saw the whole DLQ.
	Partial []string `json:"partial,omitempty"`
}

// PlanGroup is one group and its decision.
type PlanGroup struct {
	Reason      deadletter.Reason     `json:"reason"`
	Fingerprint string                `json:"fingerprint"`
	Count       int                   `json:"count"`
	NextAction  deadletter.NextAction `json:"next_action"`
	Redrivable  deadletter.Redrivable `json:"redrivable"`
	// MayRedrive is true when policy alone allows it; false when it needs an
	// acknowledgement (Needs) or may never be redriven.
	MayRedrive bool   `json:"may_redrive"`
	Why        string `json:"why"`
	Needs      string `json:"needs,omitempty"`
	// Command is the exact command to run for this group.
	Command string `json:"command"`
}

// BuildPlan is pure: the plan for the groups a triage scan found.
func BuildPlan(p *pipeline.Pipeline, groups []Group) *Plan {
	pl := &Plan{Pipeline: p.Name, Owner: p.Owner}
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
		pg := PlanGroup{Reason: g.Reason, Fingerprint: g.Fingerprint, Count: g.Count, NextAction: g.Reason.NextAction(),
			Redrivable: g.Reason.Redrivable(), MayRedrive: v.Allowed, Why: v.Why, Needs: v.Needs}
		pg.Command = GroupCommand(p, g, v)
		pl.Total += g.Count
		if !v.Allowed {
			allYes = false
		}
		pl.Groups = append(pl.Groups, pg)
	}
	switch {
	case len(gs) == 0:
		pl.Start = "nothing to redrive: the DLQ is empty"
	case allYes:
		pl.Start = fmt.Sprintf("agentdlq redrive start --pipeline %s --owner %s --why %s --rate %d", p.Name, shq(p.Owner), "'<why>'", DefaultRate)
	default:
		pl.Start = "not a move task: the DLQ holds groups that need an acknowledgement or may never be redriven; redrive group by group with the commands above"
	}
	return pl
}

// GroupCommand is the command for one group: a canaried selective redrive
// with the acknowledgement the policy needs, or, for a group that may never
// be redriven, the rejection to record.
func GroupCommand(p *pipeline.Pipeline, g Group, v Verdict) string {
	base := fmt.Sprintf("agentdlq redrive select --pipeline %s --reason %s", p.Name, g.Reason)
	if g.Fingerprint != "" {
		base += " --fingerprint " + g.Fingerprint
	}
	base += fmt.Sprintf(" --owner %s --why %s --rate %d", shq(p.Owner), "'<why>'", DefaultRate)
	canary := min(5, g.Count)
	if canary < 1 {
		canary = 1
	}
	switch g.Reason.Redrivable() {
	case deadletter.RedriveYes:
		return fmt.Sprintf("%s --canary %d", base, canary)
	case deadletter.RedriveAfterFix:
		return fmt.Sprintf("%s --fix-deployed '<deployed fix ref>' --canary %d", base, canary)
	case deadletter.RedriveAfterReview:
		return fmt.Sprintf("%s --reviewed '<what the review found>' --canary %d", base, canary)
	case deadletter.RedriveNeverBlind:
		return fmt.Sprintf("reconcile each key first (agentdlq ledger get --key K, or the external system); redrive only what did not happen: %s --override %s='<reconciliation>' --canary %d", base, g.Reason, canary)
	default:
		return fmt.Sprintf("agentdlq redrive reject --pipeline %s --reason %s%s --owner %s --why '<why>'", p.Name, g.Reason, fpFlag(g.Fingerprint), shq(p.Owner))
	}
}

func fpFlag(fp string) string {
	if fp == "" {
		return ""
	}
	return " --fingerprint " + fp
}

// shq quotes a word for a POSIX shell when it needs quoting.
func shq(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:/@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// WriteText renders the plan for a terminal.
func (pl *Plan) WriteText(w io.Writer) error {
	if len(pl.Partial) > 0 {
		fmt.Fprintf(w, "note: the triage scan was partial (%s): counts may be low\n", strings.Join(pl.Partial, "; "))
	}
	fmt.Fprintf(w, "Redrive plan for %s (owner %s): %d dead letters in %d groups\n\n", pl.Pipeline, pl.Owner, pl.Total, len(pl.Groups))
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REASON\tFINGERPRINT\tCOUNT\tREDRIVE\tWHY")
	for _, g := range pl.Groups {
		may := "yes"
		if !g.MayRedrive {
			may = "no"
			if g.Needs != "" && g.Redrivable != deadletter.RedriveNever && g.Redrivable != deadletter.RedriveNeverBlind {
				may = "after " + g.Needs
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", g.Reason, orDash(g.Fingerprint), g.Count, may, g.Why)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nCommands:")
	for _, g := range pl.Groups {
		fmt.Fprintf(w, "  # %s %s (%d)\n  %s\n", g.Reason, orDash(g.Fingerprint), g.Count, g.Command)
	}
	_, err := fmt.Fprintf(w, "\nWhole DLQ: %s\n", pl.Start)
	return err
}

// Plan scans the DLQ read-only (Config.Scan), builds the plan of its groups
// and audits that it was shown. A scan that failed is audited too.
func (r *Redriver) Plan(ctx context.Context, actor string) (*Plan, error) {
	// Not gated, but its record says who looked: in AWS the STS caller (a
	// failure to ask is recorded, and does not hide the plan).
	_, _ = r.identify(ctx)
	groups, rep, err := r.scan(ctx)
	if err != nil {
		return nil, r.record(ctx, AuditEntry{Actor: actor, Action: ActionPlan}, err)
	}
	pl, err := r.ShowPlan(ctx, actor, groups)
	if rep != nil && rep.Partial {
		pl.Partial = rep.PartialReasons
	}
	return pl, err
}

// ShowPlan builds the plan of groups a caller scanned itself and audits
// that it was shown.
func (r *Redriver) ShowPlan(ctx context.Context, actor string, groups []Group) (*Plan, error) {
	_, _ = r.identify(ctx) // as Plan: the record says who looked
	pl := BuildPlan(r.cfg.Pipeline, groups)
	reasons, fps, counts := groupFacts(groups)
	counts["total"] = pl.Total
	return pl, r.record(ctx, AuditEntry{Actor: actor, Action: ActionPlan, Reasons: reasons, Fingerprints: fps, Counts: counts, Outcome: OutcomeShown}, nil)
}

// Reject records that the owner rejects a group that must not be redriven:
// an audit entry only; the dead letters stay until retention deletes them
// (or the owner deletes them after archiving). groups is what the DLQ
// holds; when nil, Reject scans the DLQ itself (Config.Scan) after the
// checks that need no AWS call. A fingerprint may be any unique prefix of
// 8 characters or more (ResolveFingerprints).
func (r *Redriver) Reject(ctx context.Context, who Who, reasons []deadletter.Reason, fingerprints []string, groups []Group) error {
	rs := make([]string, len(reasons))
	for i, x := range reasons {
		rs[i] = string(x)
	}
	rec := AuditEntry{Actor: who.Owner, Action: ActionReject, Why: who.Why, Reasons: rs, Fingerprints: fingerprints}
	err := func() error {
		if len(reasons) == 0 {
			return refuse(CodeUnknownReason, "--reason is required")
		}
		if groups == nil {
			if err := r.pureGateAs(ActionReject, who, MinRate); err != nil {
				return err
			}
			var err error
			if groups, _, err = r.scan(ctx); err != nil {
				return err
			}
		}
		if err := r.authorizeAs(ctx, ActionReject, who, MinRate); err != nil {
			return err
		}
		if len(fingerprints) > 0 {
			full, err := ResolveFingerprints(fingerprints, reasons, groups)
			if err != nil {
				return err
			}
			rec.Fingerprints = full
		}
		sel := Selector{Reasons: reasons, Fingerprints: rec.Fingerprints}
		rec.Counts = map[string]int{}
		for _, g := range groups {
			l := Letter{Reason: g.Reason, Fingerprint: g.Fingerprint}
			if sel.Match(&l) {
				rec.Counts[string(g.Reason)] += g.Count
			}
		}
		if len(rec.Counts) == 0 {
			return refuse(CodeNothingSelected, "the DLQ holds no dead letter of reason %s", joinReasons(reasons))
		}
		return nil
	}()
	return r.record(ctx, rec, err)
}
