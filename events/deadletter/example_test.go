package deadletter_test

import (
	"fmt"

	"github.com/agentdlq/agentdlq/events/deadletter"
)

// ParseReason reads a reason as it stands in dlq_reason, a flag or a
// report; each reason carries its failure class, the next action and
// whether a redrive may move it. A name outside the closed set is an error.
func ExampleParseReason() {
	for _, s := range []string{"budget_exhausted", "tool_unknown", "effect_unknown", "timeout"} {
		r, err := deadletter.ParseReason(s)
		if err != nil {
			fmt.Println(s, "is not a reason")
			continue
		}
		fmt.Println(r, r.Class(), r.Class().Retryable(), r.NextAction(), r.Redrivable())
	}
	// Output:
	// budget_exhausted transient true retry yes
	// tool_unknown poison false fix_producer after_fix
	// effect_unknown ambiguous false human_review never_blindly
	// timeout is not a reason
}
