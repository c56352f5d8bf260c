package redrivetype

import (
	"github.com/agentdlq/agentdlq/events/agenttask"
	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/ledger"
)

// VerifyResult is Verify's answer.
type VerifyResult struct {
	Pipeline string            `json:"pipeline"`
	Reason   deadletter.Reason `json:"reason"`
	Applied  bool              `json:"applied"`
	// Seen counts the distinct dead letters the scan saw (of every reason).
	Seen int `json:"seen"`
	// Keys are the keys of the reason's dead letters, sorted.
	Keys []Verified `json:"keys"`
	// Counts are the keys by verdict (confirmed, no_effect, unknown), and
	// skipped, reconciled and refused.
	Counts map[string]int `json:"counts"`
}

// Verified is what Verify found for one idempotency key.
type Verified struct {
	Key string `json:"idempotency_key"`
	// Tenant is the task's tenant: with the pipeline it scopes Key in the
	// ledger, so two tenants' same key are two rows.
	Tenant string `json:"tenant,omitempty"`
	// Tool is the task's tool; MessageID the id of (the first of) the key's
	// dead letters, and Letters how many the scan saw with the reason.
	Tool      string `json:"tool,omitempty"`
	MessageID string `json:"message_id"`
	Letters   int    `json:"letters"`
	// Verdict, Receipt and Evidence are the verifier's answer (evidence
	// redacted, at most 512 characters); Verdict is empty when the key was
	// not verified, and Skipped says why: its effect is not unknown in the
	// ledger (reconciled, done, no call started, a delivery holds it), the
	// ledger holds no entry, or the dead letter is not an agent task.
	Verdict  agenttask.Verdict `json:"verdict,omitempty"`
	Receipt  string            `json:"receipt,omitempty"`
	Evidence string            `json:"evidence,omitempty"`
	Skipped  string            `json:"skipped,omitempty"`
	// Reconciled is the outcome Apply recorded for the key; Refused is why
	// its reconciliation was refused (nothing was written for it).
	Reconciled ledger.Outcome `json:"reconciled,omitempty"`
	Refused    string         `json:"refused,omitempty"`
}
