package redrivetype

import (
	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/redrive/audit"
)

// Step is one thing the owner can do next, as data: the plan's next steps
// for each group and a refusal's way out (Plan, PlanGroup.Next,
// redrive.Refusal.Next). A library never spells a command line: the CLI renders a
// Step as one command line, the console
// as a link or a form.
type Step struct {
	// Action is what to run: audit.ActionSelect, audit.ActionReject, audit.ActionReconcile
	// (each key of the group, one at a time), audit.ActionStart (a move task of
	// the whole DLQ), audit.ActionPlan (look again), audit.ActionStatus or audit.ActionCancel.
	Action audit.Action `json:"action"`
	// Reason and Fingerprint choose the dead letters: a reason, and one of
	// its groups ("" for every group of the reason).
	Reason      deadletter.Reason `json:"reason,omitempty"`
	Fingerprint string            `json:"fingerprint,omitempty"`
	// Canary is how many a select should move first and wait for (0: no
	// canary).
	Canary int `json:"canary,omitempty"`
	// Needs names what the step takes besides an owner and a why, by the
	// request field that carries it (the vocabulary of redrive.Refusal.Field):
	// "Ack.FixDeployed", "Ack.Reviewed", "Ack.Overrides" (an override of
	// Reason), "Key" and "Outcome" (a reconciliation).
	Needs []string `json:"needs,omitempty"`
}
