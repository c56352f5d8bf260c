package ledger

import (
	"context"
	"errors"
	"time"

	"github.com/agentdlq/agentdlq/events/deadletter"
)

// State is the state of a key.
type State string

const (
	// StateInProgress: a worker holds the key under a lease until LeaseUntil.
	StateInProgress State = "in_progress"
	// StateDone: the task finished; Receipt holds its effect receipt. A
	// redelivery or a redrive of a done key is acknowledged as a no-op.
	StateDone State = "done"
	// StateDeadLettered: the task was dead-lettered with LastReason.
	StateDeadLettered State = "dead_lettered"
)

// AllStates lists the states.
func AllStates() []State { return []State{StateInProgress, StateDone, StateDeadLettered} }

// Entry is one key's record.
type Entry struct {
	Key        string    `json:"idempotency_key" dynamodbav:"pk"`
	State      State     `json:"state" dynamodbav:"state"`
	LeaseUntil time.Time `json:"lease_until,omitzero" dynamodbav:"lease_until,omitempty"`
	// Owner identifies the holder of the lease (the message id that claimed it).
	Owner string `json:"owner,omitempty" dynamodbav:"owner,omitempty"`
	// EffectStarted is set before a mutating tool call starts; with no
	// Receipt it means the effect is unknown.
	EffectStarted   bool              `json:"effect_started,omitempty" dynamodbav:"effect_started,omitempty"`
	Receipt         string            `json:"receipt,omitempty" dynamodbav:"receipt,omitempty"`
	DeadLetterCount int               `json:"dead_letter_count" dynamodbav:"dead_letter_count"`
	RedriveCount    int               `json:"redrive_count" dynamodbav:"redrive_count"`
	LastReason      deadletter.Reason `json:"last_reason,omitempty" dynamodbav:"last_reason,omitempty"`
	UpdatedAt       time.Time         `json:"updated_at" dynamodbav:"updated_at"`
	// ExpiresAt is when the entry may be forgotten (DynamoDB TTL, epoch seconds there).
	ExpiresAt time.Time `json:"expires_at" dynamodbav:"-"`
}

// Errors of Begin; test with errors.Is.
var (
	// ErrDone: the key is done; acknowledge the message as a no-op.
	ErrDone = errors.New("ledger: idempotency key is already done")
	// ErrLeased: another delivery holds an unexpired lease on the key.
	ErrLeased = errors.New("ledger: idempotency key is leased by another delivery")
	// ErrUnavailable wraps a ledger outage (throttling, network): retry later.
	ErrUnavailable = errors.New("ledger: unavailable")
)

// Ledger is what the worker, triage and redrive need of the ledger.
type Ledger interface {
	// Begin claims key for owner until now+lease and returns the entry as it
	// was before the claim (zero Entry for a new key). It fails with ErrDone
	// when the key is done (the returned entry holds the receipt) and with
	// ErrLeased when another owner holds an unexpired lease. A dead-lettered
	// key may be claimed again (that is what a redrive does).
	Begin(ctx context.Context, key, owner string, now time.Time, lease time.Duration) (Entry, error)
	// StartEffect records, before a mutating call, that its effect may happen.
	StartEffect(ctx context.Context, key, owner string, now time.Time) error
	// Complete marks key done with its effect receipt.
	Complete(ctx context.Context, key, owner, receipt string, now time.Time) error
	// Release gives up the lease after a failure that will be retried.
	Release(ctx context.Context, key, owner string, now time.Time) error
	// DeadLettered records that the key was dead-lettered with reason,
	// incrementing its dead-letter count, and returns the new entry.
	DeadLettered(ctx context.Context, key string, reason deadletter.Reason, now time.Time) (Entry, error)
	// Redriven increments the key's redrive count and returns the new entry.
	Redriven(ctx context.Context, key string, now time.Time) (Entry, error)
	// Get returns the key's entry; ok is false when there is none.
	Get(ctx context.Context, key string) (e Entry, ok bool, err error)
}

// DefaultTTL is how long an entry is kept after its last update: longer than
// the DLQ's 14-day retention, so that a redrive of the oldest dead letter
// still finds its key.
const DefaultTTL = 30 * 24 * time.Hour
