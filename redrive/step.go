package redrive

import (
	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/redrive/audit"
)

// Step is one thing the owner can do next, as data: the plan's next steps
// for each group and a refusal's way out (Plan, PlanGroup.Next,
// Refusal.Next). A library never spells a command line: the CLI renders a
// Step as one command line, the console
// as a link or a form.
type Step struct {
	// Action is what to run: ActionSelect, ActionReject, ActionReconcile
	// (each key of the group, one at a time), ActionStart (a move task of
	// the whole DLQ), ActionPlan (look again), ActionStatus or ActionCancel.
	Action audit.Action `json:"action"`
	// Reason and Fingerprint choose the dead letters: a reason, and one of
	// its groups ("" for every group of the reason).
	Reason      deadletter.Reason `json:"reason,omitempty"`
	Fingerprint string            `json:"fingerprint,omitempty"`
	// Canary is how many a select should move first and wait for (0: no
	// canary).
	Canary int `json:"canary,omitempty"`
	// Needs names what the step takes besides an owner and a why, by the
	// request field that carries it (the vocabulary of Refusal.Field):
	// "Ack.FixDeployed", "Ack.Reviewed", "Ack.Overrides" (an override of
	// Reason), "Key" and "Outcome" (a reconciliation).
	Needs []string `json:"needs,omitempty"`
}

// SuggestedCanary is the canary the plan suggests for a selection of n
// letters — a tenth of them, at least one and at most maxSuggestedCanary,
// and fewer than n when n > 1, so that a canary is never the whole group:
// 1 for 1 to 19 letters, 2 for 20, 10 from 100. The plan's steps carry it
// (and so its printed `--canary N`), and the console's form starts from the
// plan's. The CLI's --canary has no default of its own: without it there
// is no canary.
func SuggestedCanary(n int) int {
	if n <= 1 {
		return 1
	}
	return min(max(1, n/10), maxSuggestedCanary, n-1)
}

// maxSuggestedCanary caps SuggestedCanary: a canary is a sample, not a batch.
const maxSuggestedCanary = 10

func canaryOf(n int) int { return SuggestedCanary(n) }

// selectStep is a canaried select of a group, with what the policy needs.
func selectStep(reason deadletter.Reason, fingerprint string, n int, needs ...string) Step {
	return Step{Action: audit.ActionSelect, Reason: reason, Fingerprint: fingerprint, Canary: canaryOf(n), Needs: needs}
}

// policySteps are a group's next steps by policy alone (before the owner's
// decisions): a canaried select with the acknowledgement the policy needs;
// for effect_unknown, reconcile each key, then a select (which moves only
// the keys reconciled as no effect); for a reason never redriven, the
// rejection to record.
func policySteps(reason deadletter.Reason, fingerprint string, n int) []Step {
	switch reason.Redrivable() {
	case deadletter.RedriveYes:
		return []Step{selectStep(reason, fingerprint, n)}
	case deadletter.RedriveAfterFix:
		return []Step{selectStep(reason, fingerprint, n, "Ack.FixDeployed")}
	case deadletter.RedriveAfterReview:
		return []Step{selectStep(reason, fingerprint, n, "Ack.Reviewed")}
	case deadletter.RedriveNeverBlind:
		return []Step{{Action: audit.ActionReconcile, Reason: reason, Fingerprint: fingerprint, Needs: []string{"Key", "Outcome"}}, selectStep(reason, fingerprint, n)}
	}
	return []Step{{Action: audit.ActionReject, Reason: reason, Fingerprint: fingerprint}}
}
