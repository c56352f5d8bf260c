package redrive_test

import (
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

// Gate refuses with a one-line reason and a stable code.
func ExampleGate() {
	err := redrive.CheckCaller("arn:aws:sts::123456789012:assumed-role/Developer/bob",
		"arn:aws:iam::123456789012:role/agentdlq/AgentTasksRedrive")
	fmt.Println(redrive.RefusalCode(err))
	fmt.Println(redrive.IsLocalEndpoint("http://127.0.0.1:4566"), redrive.IsLocalEndpoint("https://sqs.us-east-1.amazonaws.com"))
	// Output:
	// identity_not_redrive_role
	// true false
}
