package redrivetype

import (
	"github.com/agentdlq/agentdlq/events/deadletter"
)

// Unrestored is a chosen dead letter that a selective redrive left in the
// DLQ because its claim check restored nothing.
type Unrestored struct {
	DLQMessageID      string            `json:"dlq_message_id"`
	OriginalMessageID string            `json:"original_message_id,omitempty"`
	Reason            deadletter.Reason `json:"reason"`
	ClaimCheck        string            `json:"claim_check"`
	Cause             ClaimCheckCause   `json:"cause"`
	Error             string            `json:"error"`
}
