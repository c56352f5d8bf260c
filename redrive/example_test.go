package redrive_test

import (
	"errors"
	"fmt"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive"
	"github.com/agentdlq/agentdlq/redrive/audit"
)

// Decide says, per reason, whether a redrive is allowed and what would allow it.
func ExampleDecide() {
	ack := redrive.Ack{FixDeployed: "worker v1.4.0"}
	for _, r := range []deadletter.Reason{deadletter.ReasonBudgetExhausted, deadletter.ReasonSchemaInvalid, deadletter.ReasonReceiveLimit,
		deadletter.ReasonEffectUnknown, deadletter.ReasonPolicyLimit} {
		v := redrive.Decide(r, ack)
		fmt.Printf("%-16s allowed=%-5v via=%-12s needs=%s\n", r, v.Allowed, v.Via, v.Needs)
	}
	// Output:
	// budget_exhausted allowed=true  via=policy       needs=
	// schema_invalid   allowed=true  via=fix_deployed needs=
	// receive_limit    allowed=false via=             needs=Ack.Reviewed
	// effect_unknown   allowed=false via=             needs=Ack.Overrides
	// policy_limit     allowed=false via=             needs=Ack.Overrides
}

// A refusal is data: a stable code, the request field at fault (which the
// CLI names as its flag and the console as its form field) and words that
// follow the field's name. RequireOwner is the gate's first rule, asked
// before anything is resolved.
func ExampleRequireOwner() {
	p := &pipeline.Pipeline{Name: "agent-tasks", Owner: "platform-oncall"}
	err := redrive.RequireOwner(p, audit.ActionSelect, redrive.Who{Why: "search-api is back"})
	var rf *redrive.Refusal
	if errors.As(err, &rf) {
		fmt.Println(rf.Code, rf.Field)
	}
	fmt.Println(err)
	// Output:
	// owner_missing Owner
	// refused (owner_missing): Owner is required: only the owner of pipeline "agent-tasks" ("platform-oncall") may redrive it
}
