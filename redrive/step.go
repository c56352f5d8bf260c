package redrive

import (
	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
)

// canaryOf is the canary the plan suggests for a group of n letters: up to
// five, at least one.
func canaryOf(n int) int { return max(1, min(5, n)) }

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
