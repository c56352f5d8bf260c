package redrivetype

import (
	"github.com/agentdlq/agentdlq/events/deadletter"
)

// Verdict is the policy's answer for one reason.
type Verdict struct {
	Reason     deadletter.Reason
	Redrivable deadletter.Redrivable
	// Allowed is true when the reason may be redriven with the given redrive.Ack.
	Allowed bool
	// Via says what allowed it: "policy", "fix_deployed", "reviewed" or "override".
	Via string
	// Why is one line: why it may not be redriven (when !Allowed), or what allowed it.
	Why string
	// Needs is the redrive.Ack field that would allow it ("Ack.FixDeployed",
	// "Ack.Reviewed", "Ack.Overrides"; "" when allowed), by the name
	// redrive.Refusal.Field and Step.Needs use.
	Needs string
}
