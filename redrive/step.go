package redrive

import (
	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
)

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
func selectStep(reason deadletter.Reason, fingerprint string, n int, needs ...string) redrivetype.Step {
	return redrivetype.Step{Action: audit.ActionSelect, Reason: reason, Fingerprint: fingerprint, Canary: canaryOf(n), Needs: needs}
}

// policySteps are a group's next steps by policy alone (before the owner's
// decisions): a canaried select with the acknowledgement the policy needs;
// for effect_unknown, reconcile each key, then a select (which moves only
// the keys reconciled as no effect); for a reason never redriven, the
// rejection to record.
func policySteps(reason deadletter.Reason, fingerprint string, n int) []redrivetype.Step {
	switch reason.Redrivable() {
	case deadletter.RedriveYes:
		return []redrivetype.Step{selectStep(reason, fingerprint, n)}
	case deadletter.RedriveAfterFix:
		return []redrivetype.Step{selectStep(reason, fingerprint, n, "Ack.FixDeployed")}
	case deadletter.RedriveAfterReview:
		return []redrivetype.Step{selectStep(reason, fingerprint, n, "Ack.Reviewed")}
	case deadletter.RedriveNeverBlind:
		return []redrivetype.Step{{Action: audit.ActionReconcile, Reason: reason, Fingerprint: fingerprint, Needs: []string{"Key", "Outcome"}}, selectStep(reason, fingerprint, n)}
	}
	return []redrivetype.Step{{Action: audit.ActionReject, Reason: reason, Fingerprint: fingerprint}}
}
