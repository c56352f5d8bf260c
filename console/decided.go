package console

import (
	"html/template"
	"strings"

	"github.com/agentdlq/agentdlq/redrive"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
	"github.com/agentdlq/agentdlq/triage/report"
)

// planGroups are every group of a report, as redrive plans them.
func planGroups(rep *report.Report) []redrive.Group {
	gs := []redrive.Group{}
	if rep == nil {
		return gs
	}
	for _, g := range rep.Groups {
		gs = append(gs, redrive.Group{Reason: g.Reason, Fingerprint: g.Fingerprint, Count: g.Count})
	}
	return gs
}

// closed is true when the owner rejected the group and nothing is left to
// do (PlanGroup.Rejected with no next step: no dead letter arrived since):
// the console offers no redrive of it, as `agentdlq redrive plan` says
// "nothing to do".
func closed(g redrivetype.PlanGroup) bool { return g.Rejected != nil && len(g.Next) == 0 }

// groupNotes are the words the pipeline page shows beside a group the
// owner rejected (render.HTMLView.Notes), by "reason/fingerprint".
func groupNotes(pl *redrivetype.Plan) map[string]string {
	if pl == nil {
		return nil
	}
	notes := map[string]string{}
	for _, g := range pl.Groups {
		switch {
		case closed(g):
			notes[string(g.Reason)+"/"+g.Fingerprint] = "rejected"
		case g.Rejected != nil:
			notes[string(g.Reason)+"/"+g.Fingerprint] = "rejected, new letters since"
		}
	}
	return notes
}

// policyWhy is what the policy says of a plan group, without the owner's
// decision (which the page shows on its own line): the plan's Why when it
// is the policy's sentence (with the plan's caveat after it), else the
// policy's alone.
func policyWhy(g redrivetype.PlanGroup) string {
	pol := redrive.Decide(g.Reason, redrive.Ack{}).Why
	if strings.HasPrefix(g.Why, pol) {
		return g.Why
	}
	return pol
}

// decisionWhy is what the plan says of the owner's decisions on a group
// (its keys reconciled) when it is not the policy's sentence: "" when the
// plan's Why is the policy's (policyWhy shows it).
func decisionWhy(g redrivetype.PlanGroup) string {
	if strings.HasPrefix(g.Why, redrive.Decide(g.Reason, redrive.Ack{}).Why) {
		return ""
	}
	return g.Why
}

// wordBreaks is s escaped, with a break opportunity (<wbr>) after each
// underscore, dot, slash and colon: a long reason or tool name
// (tool_version_unsupported) wraps between its words on a narrow card,
// never inside one.
func wordBreaks(s string) template.HTML {
	var b strings.Builder
	for _, part := range strings.SplitAfter(s, "") {
		b.WriteString(template.HTMLEscapeString(part))
		if part == "_" || part == "." || part == "/" || part == ":" {
			b.WriteString("<wbr>")
		}
	}
	return template.HTML(b.String()) //nolint:gosec // escaped above
}

// clockWords says in words what a dead letter's retention clock runs from
// (report.ClockBasis), for the letter page's "deleted by retention".
func clockWords(b report.ClockBasis) string {
	switch b {
	case report.ClockWorkerSend:
		return "counted from when the worker sent it to the DLQ (a new message there)"
	case report.ClockOriginalSend:
		return "counted from when it was first sent to the hot queue: SQS keeps that time when its redrive policy moves a message, so its time there is already spent"
	case report.ClockFIFOReset:
		return "counted from its move to the DLQ (a FIFO queue starts the clock again)"
	case report.ClockUnknown:
		return "SQS gave no send time: counted from the scan, so it may come sooner"
	}
	return string(b)
}
