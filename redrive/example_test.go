package redrive_test

import (
	"errors"
	"fmt"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/redrive"
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
// follow the field's name.
func ExampleParseOverrides() {
	_, err := redrive.ParseOverrides([]string{"policy_limit="})
	var rf *redrive.Refusal
	if errors.As(err, &rf) {
		fmt.Println(rf.Code, rf.Field)
	}
	fmt.Println(err)
	// Output:
	// bad_input Ack.Overrides
	// refused (bad_input): Ack.Overrides "policy_limit=": want reason=justification, with a justification
}
