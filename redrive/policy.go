package redrive

import (
	"fmt"
	"sort"
	"strings"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
)

// Ack is what the owner acknowledges on the command line, each item
// unlocking some reasons (see Decide).
type Ack struct {
	// FixDeployed names the deployed fix (a commit, a release, a change id).
	// It unlocks the after_fix reasons: poison, auth_config, unclassified.
	FixDeployed string
	// Reviewed says what a review of receive_limit dead letters found. It
	// unlocks the after_review reason receive_limit.
	Reviewed string
	// Overrides maps a reason that may never be redriven (or never blindly)
	// to the owner's justification.
	Overrides map[deadletter.Reason]string
}

// Decide is the redrive policy for one reason. It is pure.
func Decide(r deadletter.Reason, ack Ack) redrivetype.Verdict {
	info, ok := r.Info()
	if !ok {
		return redrivetype.Verdict{Reason: r, Why: fmt.Sprintf("unknown reason %q", r)}
	}
	v := redrivetype.Verdict{Reason: r, Redrivable: info.Redrivable}
	just := strings.TrimSpace(ack.Overrides[r])
	switch info.Redrivable {
	case deadletter.RedriveYes:
		v.Allowed, v.Via, v.Why = true, "policy", "redrivable: "+info.Summary
	case deadletter.RedriveAfterFix:
		switch {
		case strings.TrimSpace(ack.FixDeployed) != "":
			v.Allowed, v.Via, v.Why = true, "fix_deployed", "fix deployed: "+ack.FixDeployed
		case just != "":
			v.Allowed, v.Via, v.Why = true, "override", "override: "+just
		default:
			v.Needs = "Ack.FixDeployed"
			v.Why = "redrive only after the fix is deployed (" + info.Summary + "); name the deployed fix"
		}
	case deadletter.RedriveAfterReview:
		switch {
		case strings.TrimSpace(ack.Reviewed) != "":
			v.Allowed, v.Via, v.Why = true, "reviewed", "reviewed: "+ack.Reviewed
		case just != "":
			v.Allowed, v.Via, v.Why = true, "override", "override: "+just
		default:
			v.Needs = "Ack.Reviewed"
			v.Why = "the worker never finished these (crash, Lambda timeout or out of memory): review the logs, then say what you found"
		}
	case deadletter.RedriveNeverBlind:
		if just != "" {
			v.Allowed, v.Via, v.Why = true, "override", "override: "+just
		} else {
			v.Needs = "Ack.Overrides"
			v.Why = "a mutating call may have taken effect: reconcile each key first; a selective redrive then moves the keys reconciled as no effect, without an override, and never one whose effect was confirmed"
		}
	default: // deadletter.RedriveNever
		if just != "" {
			v.Allowed, v.Via, v.Why = true, "override", "override: "+just
		} else {
			v.Needs = "Ack.Overrides"
			v.Why = "never redriven as it is (" + info.Summary + "): " + neverWhy(info)
		}
	}
	return v
}

// neverWhy is what to do instead with a reason never redriven as it is, by
// its policy (deadletter.ReasonInfo): patch its args where a patch may
// repair it, or reject it.
func neverWhy(info deadletter.ReasonInfo) string {
	if info.Next == deadletter.NextPatchAndRedrive {
		return "patch its args and send it (redrive repair), or reject it with an audit record"
	}
	return "reject it with an audit record"
}

// checkReasons refuses the first reason (in taxonomy order) that the policy
// does not allow with ack, naming every refused one.
func checkReasons(reasons []deadletter.Reason, ack Ack) error {
	var refused []string
	var next []redrivetype.Step
	rs := append([]deadletter.Reason(nil), reasons...)
	sort.Slice(rs, func(i, j int) bool { return order(rs[i]) < order(rs[j]) })
	for _, r := range rs {
		if v := Decide(r, ack); !v.Allowed {
			refused = append(refused, string(r)+": "+v.Why)
			next = append(next, policySteps(r, "", 0)...)
		}
	}
	if len(refused) > 0 {
		rf := refuse(redrivetype.CodeForbidden, "%s", strings.Join(refused, "; "))
		rf.Next = next
		return rf
	}
	return nil
}

func order(r deadletter.Reason) int {
	for i, x := range deadletter.AllReasons() {
		if x == r {
			return i
		}
	}
	return len(deadletter.AllReasons())
}
