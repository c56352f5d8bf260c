package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/agentdlq/agentdlq/internal/textutil"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/triage"
)

// The library returns next steps as data (redrive.Step); this file is where
// they become command lines, with the placeholders an operator fills in.

// placeholderOf is the flag and placeholder of each field a step needs.
var placeholderOf = map[string]string{
	"Ack.FixDeployed": "--fix-deployed '<deployed fix ref>'",
	"Ack.Reviewed":    "--reviewed '<what the review found>'",
}

// stepCommand is the command line that takes step s on pipeline p.
func stepCommand(p *pipeline.Pipeline, s redrive.Step) string {
	return filteredStep(p, s, triage.Filter{})
}

// filteredStep is stepCommand for the letters filter f chose: a select, a
// plan and a triage carry the filter's flags (filterArgs).
func filteredStep(p *pipeline.Pipeline, s redrive.Step, f triage.Filter) string {
	owner := shq(p.Owner)
	fa := filterArgs(f)
	group := ""
	if s.Reason != "" {
		group = " --reason " + string(s.Reason)
	}
	if s.Fingerprint != "" {
		group += " --fingerprint " + s.Fingerprint
	}
	switch s.Action {
	case audit.ActionSelect:
		cmd := fmt.Sprintf("agentdlq redrive select --pipeline %s%s%s --owner %s --why '<why>' --rate %d", p.Name, group, fa, owner, redrive.DefaultRate)
		for _, n := range s.Needs {
			switch n {
			case "Ack.Overrides":
				cmd += fmt.Sprintf(" --override %s=JUSTIFICATION", s.Reason)
			default:
				if ph, ok := placeholderOf[n]; ok {
					cmd += " " + ph
				}
			}
		}
		if s.Canary > 0 {
			cmd += fmt.Sprintf(" --canary %d", s.Canary)
		}
		return cmd
	case audit.ActionReject:
		return fmt.Sprintf("agentdlq redrive reject --pipeline %s%s --owner %s --why '<why>'", p.Name, group, owner)
	case audit.ActionReconcile:
		return fmt.Sprintf("agentdlq triage --pipeline %s%s --keys; agentdlq ledger get --key K; agentdlq ledger reconcile --pipeline %s --key K --no-effect|--effect-confirmed RECEIPT --owner %s --why '<what the external system shows>'",
			p.Name, fa, p.Name, owner)
	case audit.ActionStart:
		return fmt.Sprintf("agentdlq redrive start --pipeline %s --owner %s --why '<why>' --rate %d", p.Name, owner, redrive.DefaultRate)
	case audit.ActionPlan:
		return "agentdlq redrive plan --pipeline " + p.Name + fa
	case audit.ActionStatus:
		return "agentdlq redrive status --pipeline " + p.Name
	case audit.ActionCancel:
		return fmt.Sprintf("agentdlq redrive cancel --pipeline %s --owner %s --why '<why>'", p.Name, owner)
	}
	return fmt.Sprintf("agentdlq redrive %s --pipeline %s%s", s.Action, p.Name, group)
}

// stepsCommand is a group's steps as one line, in order: "nothing to do"
// when there are none; a reconciliation comes first, each key at a time,
// and says so.
func stepsCommand(p *pipeline.Pipeline, steps []redrive.Step, f triage.Filter) string {
	if len(steps) == 0 {
		return "nothing to do: already rejected"
	}
	var b strings.Builder
	for i, s := range steps {
		switch {
		case s.Action == audit.ActionReconcile:
			b.WriteString("reconcile each key first: ")
		case i > 0 && steps[i-1].Action == audit.ActionReconcile:
			b.WriteString("; then (moves only the keys reconciled as no effect): ")
		case i > 0:
			b.WriteString("; or: ")
		}
		b.WriteString(filteredStep(p, s, f))
	}
	return b.String()
}

// shq quotes a word for a POSIX shell when it needs quoting.
func shq(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:/@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// planPipeline is the pipeline a plan speaks of, for its commands.
func planPipeline(pl *redrive.Plan) *pipeline.Pipeline {
	return &pipeline.Pipeline{Name: pl.Pipeline, Owner: pl.Owner}
}

// startLine is the plan's "Whole DLQ" line: the move task's command, or why
// it is not the tool.
func startLine(pl *redrive.Plan) string {
	if pl.Start == nil {
		return pl.StartWhy
	}
	return stepCommand(planPipeline(pl), *pl.Start)
}

// mayText is the plan's REDRIVE column.
func mayText(g redrive.PlanGroup) string {
	switch {
	case g.MayRedrive:
		return "yes, canary first"
	case g.Rejected == nil && g.Reconciled[ledger.OutcomeNoEffect] > 0:
		return "reconciled keys"
	case g.Needs != "" && g.Needs != "Ack.Overrides":
		return "after " + flagOf[g.Needs]
	}
	return "no"
}

// decisionText is the plan's DECISION column.
func decisionText(g redrive.PlanGroup) string {
	switch {
	case g.Rejected != nil:
		return "rejected " + g.Rejected.Time.UTC().Format("2006-01-02")
	case g.Keys > 0 || len(g.Reconciled) > 0:
		return fmt.Sprintf("%d/%d keys reconciled", g.Reconciled[ledger.OutcomeEffectConfirmed]+g.Reconciled[ledger.OutcomeNoEffect], g.Keys)
	}
	return "-"
}

// writePlanText renders a plan for a terminal: the groups, then each
// group's command, then the whole DLQ's.
func writePlanText(w io.Writer, pl *redrive.Plan) error {
	if pl.Filter != nil {
		fmt.Fprintf(w, "FILTERED: %s; the plan and its commands are of those only\n", filterLine(pl.Filter))
	}
	if len(pl.Partial) > 0 {
		fmt.Fprintf(w, "note: the triage scan was partial (%s): counts may be low\n", strings.Join(pl.Partial, "; "))
	}
	if pl.DecisionsUnread != "" {
		fmt.Fprintf(w, "note: past decisions not shown, the audit could not be read (%s)\n", pl.DecisionsUnread)
	}
	fmt.Fprintf(w, "Redrive plan for %s (owner %s): %s in %s\n\n", pl.Pipeline, pl.Owner, textutil.Count(pl.Total, "dead letter", "dead letters"), textutil.Count(len(pl.Groups), "group", "groups"))
	if pl.Copies > 0 {
		fmt.Fprintf(w, "note: %s\n\n", copiesLine(pl))
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REASON\tFINGERPRINT\tCOUNT\tREDRIVE\tDECISION\tWHY")
	for _, g := range pl.Groups {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", g.Reason, orDash(g.Fingerprint), g.Count, mayText(g), decisionText(g), g.Why)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	p := planPipeline(pl)
	fmt.Fprintln(w, "\nCommands:")
	for _, g := range pl.Groups {
		fmt.Fprintf(w, "  # %s %s (%d)\n  %s\n", g.Reason, orDash(g.Fingerprint), g.Count, stepsCommand(p, g.Next, planFilter(pl)))
	}
	_, err := fmt.Fprintf(w, "\nWhole DLQ: %s\n", startLine(pl))
	return err
}

// planJSON is `redrive plan -o json`: the plan's data, and beside each
// group's steps the command line that takes them ("command"), and the
// whole DLQ's line ("start_command").
type planJSON struct {
	*redrive.Plan
	Groups       []planGroupJSON `json:"groups"`
	StartCommand string          `json:"start_command"`
}

type planGroupJSON struct {
	redrive.PlanGroup
	Command string `json:"command"`
}

func planView(pl *redrive.Plan) planJSON {
	v := planJSON{Plan: pl, Groups: make([]planGroupJSON, 0, len(pl.Groups)), StartCommand: startLine(pl)}
	p := planPipeline(pl)
	for _, g := range pl.Groups {
		v.Groups = append(v.Groups, planGroupJSON{PlanGroup: g, Command: stepsCommand(p, g.Next, planFilter(pl))})
	}
	return v
}

// nextLines are a refusal's next steps as command lines, one a line.
func nextLines(p *pipeline.Pipeline, steps []redrive.Step) string {
	var b strings.Builder
	for _, s := range steps {
		fmt.Fprintf(&b, "\n  next: %s", stepCommand(p, s))
	}
	return b.String()
}
