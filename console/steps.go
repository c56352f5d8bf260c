package console

import (
	"fmt"
	"net/url"

	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
)

// stepLink is a next step (redrive.Step) as the console offers it: a link to
// the page whose form takes it, and what the link says.
type stepLink struct {
	Label string
	Href  string
}

// fieldLabel is the form field of each request field a refusal can name
// (redrive.Refusal.Field): the console's words for the CLI's flags.
var fieldLabel = map[string]string{
	"Owner": "Owner", "Why": "Why", "Rate": "Rate", "Canary": "Canary", "Reasons": "Reason", "Fingerprints": "Fingerprint",
	"Ack.FixDeployed": "Fix deployed", "Ack.Reviewed": "Reviewed", "Ack.Overrides": "Override",
	"Key": "Key", "Outcome": "Outcome", "Receipt": "Receipt", "Patch": "Patch", "MessageID": "Letter",
	"Filter": "Filter",
}

// needLabel is what each field a step needs is called on the forms.
var needLabel = map[string]string{
	"Ack.FixDeployed": "the deployed fix",
	"Ack.Reviewed":    "what the review found",
	"Ack.Overrides":   "an owner's override",
	"Key":             "each key",
	"Outcome":         "its outcome",
}

// stepLinks renders a plan group's (or a refusal's) next steps as links on
// pipeline p: a select or a reject opens the group's redrive page (its
// forms), a reconciliation the group's keys; a move task and the other
// actions have no form here and say so.
func stepLinks(p string, steps []redrivetype.Step) []stepLink {
	out := make([]stepLink, 0, len(steps))
	for _, s := range steps {
		q := url.Values{"p": {p}}
		if s.Reason != "" {
			q.Set("r", string(s.Reason))
		}
		if s.Fingerprint != "" {
			q.Set("fp", s.Fingerprint)
		}
		needs := ""
		for i, n := range s.Needs {
			if i > 0 {
				needs += " and "
			}
			needs += needLabel[n]
		}
		switch s.Action {
		case audit.ActionSelect:
			l := "Redrive"
			if s.Canary > 0 {
				l = fmt.Sprintf("Redrive, a canary of %d first", s.Canary)
			}
			if needs != "" {
				l += ", with " + needs
			}
			out = append(out, stepLink{Label: l + "…", Href: "/redrive?" + q.Encode()})
		case audit.ActionReject:
			out = append(out, stepLink{Label: "Reject…", Href: "/redrive?" + q.Encode() + "#reject"})
		case audit.ActionReconcile:
			out = append(out, stepLink{Label: "Reconcile each key first…", Href: "/group?" + q.Encode() + "#keys"})
		case audit.ActionPlan:
			out = append(out, stepLink{Label: "See the plan…", Href: "/redrive?" + q.Encode()})
		default:
			out = append(out, stepLink{Label: string(s.Action) + " (agentdlq redrive " + string(s.Action) + ")"})
		}
	}
	return out
}
