package redrivetype

import (
	"encoding/json"

	"github.com/agentdlq/agentdlq/events/deadletter"
)

// RepairResult is what a repair did (or, in a preview, would do). Before
// and After are the task's args: shown to the owner who asked, never
// written to the audit (which holds their digests and the patch).
type RepairResult struct {
	Pipeline          string            `json:"pipeline"`
	DLQMessageID      string            `json:"dlq_message_id"`
	OriginalMessageID string            `json:"original_message_id,omitempty"`
	Reason            deadletter.Reason `json:"reason"`
	Tool              string            `json:"tool"`
	IdempotencyKey    string            `json:"idempotency_key"`
	// RepairedKey is the repaired task's idempotency key (repairedKey):
	// the repaired task is another task, so it has a key of its own.
	RepairedKey      string          `json:"repaired_idempotency_key"`
	Patch            json.RawMessage `json:"patch"`
	Before           json.RawMessage `json:"args_before"`
	After            json.RawMessage `json:"args_after"`
	ArgsBeforeSHA256 string          `json:"args_before_sha256"`
	ArgsAfterSHA256  string          `json:"args_after_sha256"`
	BodyBeforeSHA256 string          `json:"body_before_sha256"`
	BodyAfterSHA256  string          `json:"body_after_sha256"`
	// Evidence is where the original was kept (s3://<eval bucket>/<pipeline>/repairs/<date>/<dlq message id>.json).
	Evidence string `json:"evidence,omitempty"`
	// HotMessageID is the repaired task's message id on the hot queue.
	HotMessageID string `json:"hot_message_id,omitempty"`
	Preview      bool   `json:"preview"`
	// Seen counts the dead letters received while looking for this one
	// (and, after a repair, for its copies).
	Seen int `json:"seen"`
	// CopiesDeleted are the DLQ message ids of the copies of the dead
	// letter (identical to it: a dead-letter send retried after SQS took
	// it) deleted after the repaired task was sent and the letter deleted;
	// CopiesLeft says why some may stay (a receive or delete failed).
	CopiesDeleted []string `json:"copies_deleted,omitempty"`
	CopiesLeft    string   `json:"copies_left,omitempty"`
}
