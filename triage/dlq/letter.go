package dlq

import (
	"time"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/ledger"
)

// Message is one dead letter as a scan saw it, independent of any SDK.
type Message struct {
	MessageID     string
	ReceiptHandle string
	Body          string
	// Attributes are the message attributes (dlq_reason, dlq_meta and the
	// original ones the worker kept).
	Attributes map[string]deadletter.Attribute
	// SentTimestamp is the SentTimestamp system attribute SQS reports for the
	// message in the DLQ. See Expiry for what it means in each case.
	SentTimestamp time.Time
	// ReceiveCount is ApproximateReceiveCount (after the scan's own receive).
	ReceiveCount int
	// MessageGroupID is set in FIFO queues.
	MessageGroupID string
	// System holds the other system attributes as SQS returned them
	// (ApproximateFirstReceiveTimestamp, DeadLetterQueueSourceArn, ...).
	System map[string]string
}

// Tagged is a message with its reason and fingerprint.
type Tagged struct {
	Message
	// Reason is dlq_reason where the worker wrote readable metadata, else inferred.
	Reason deadletter.Reason
	// Inferred is true when the reason did not come from readable worker metadata.
	Inferred bool
	// Fingerprint groups dead letters of the same cause; see fingerprintOf.
	Fingerprint string
	// Meta is the decoded dlq_meta (nil without metadata or when it is unreadable,
	// except on a reason mismatch, where it holds what was decoded).
	Meta *deadletter.Meta
	// MetaErr says why the metadata could not be read (wraps deadletter.ErrMeta*).
	MetaErr error

	// Hints are the task fields read from the metadata or, without it, from
	// the body when it is a JSON object.
	Hints Hints
	// Signature is the normalised error signature in the fingerprint.
	Signature string
	// BodyErr is set when the body is not valid UTF-8 (errBodyNotUTF8).
	BodyErr error
	// DeadLetteredAt is when the message became a dead letter, as far as it is
	// known: dlq_meta's dead_lettered_at, else the DLQ SentTimestamp.
	DeadLetteredAt time.Time
	// Ledger is the ledger entry of the idempotency key, when lookupLedger found one.
	Ledger *ledger.Entry
	// Untrusted says why the letter's dlq_reason/dlq_meta attributes were not
	// taken as evidence ("" when they were, or when it has none): the broker
	// moved the letter (DeadLetterQueueSourceArn), so whoever sent the task
	// wrote them, or a principal other than the worker sent it (SenderId
	// against triage.Senders). Such a letter is tagged receive_limit, inferred, as
	// SQS knows it, and Meta is nil: a producer's word never makes a letter
	// redrivable.
	Untrusted string
	// StaleMeta is set when the dlq_meta predates the message's own enqueue
	// time: most likely an earlier dead letter, redriven with its attributes
	// (a native move task keeps them) and moved back by the broker after a
	// crash. The reason stays the metadata's (it is what the worker wrote);
	// the report counts these under "Attention".
	StaleMeta bool
}

// Hints are the fields of an agent task that triage groups by. All optional.
type Hints struct {
	Tool           string `json:"tool,omitempty"`
	ToolVersion    string `json:"tool_version,omitempty"`
	SchemaVersion  int    `json:"schema_version,omitempty"`
	Tenant         string `json:"tenant,omitempty"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	TaskID         string `json:"task_id,omitempty"`
}
