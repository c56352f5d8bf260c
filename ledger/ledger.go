package ledger

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentdlq/agentdlq/events/deadletter"
)

// State is the state of a key.
type State string

const (
	// StateInProgress means a worker holds the key under a lease until LeaseUntil.
	StateInProgress State = "in_progress"
	// StateDone means the task finished; Receipt holds its effect receipt. A
	// redelivery or a redrive of a done key is acknowledged as a no-op.
	StateDone State = "done"
	// StateDeadLettered means the task was dead-lettered with LastReason.
	StateDeadLettered State = "dead_lettered"
)

// Entry is one key's record.
type Entry struct {
	Key   string `json:"idempotency_key" dynamodbav:"pk"`
	State State  `json:"state" dynamodbav:"state"`
	// ArgsDigest is the digest of the task's canonical args the key was
	// first claimed with (see Ledger.Begin), "" for an entry written
	// before digests were kept or by a caller that gives none.
	ArgsDigest string    `json:"args_digest,omitempty" dynamodbav:"args_digest,omitempty"`
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
	// Reconciled is what the owner found out about an effect that was
	// unknown (see Ledger.Reconcile); ReconciledBy and ReconciledAt say who
	// and when.
	Reconciled   Outcome   `json:"reconciled,omitempty" dynamodbav:"reconciled,omitempty"`
	ReconciledBy string    `json:"reconciled_by,omitempty" dynamodbav:"reconciled_by,omitempty"`
	ReconciledAt time.Time `json:"reconciled_at,omitzero" dynamodbav:"reconciled_at,omitempty"`
}

// Outcome is what a reconciliation of an unknown effect found.
type Outcome string

const (
	// OutcomeEffectConfirmed means the mutating call did take effect (the
	// external system shows it). The key is done with the owner's receipt:
	// the task must never run again.
	OutcomeEffectConfirmed Outcome = "effect_confirmed"
	// OutcomeNoEffect means the mutating call did not take effect. The key's
	// effect_started mark is cleared, so that a redrive runs the task
	// afresh, as for any dead-lettered key.
	OutcomeNoEffect Outcome = "no_effect"
)

// AllOutcomes lists the reconciliation outcomes.
func AllOutcomes() []Outcome { return []Outcome{OutcomeEffectConfirmed, OutcomeNoEffect} }

// Reconciliation is what the owner records with Ledger.Reconcile.
type Reconciliation struct {
	Outcome Outcome
	// Receipt is the external system's proof of the effect (an id, a
	// reference): required with OutcomeEffectConfirmed, empty otherwise.
	Receipt string
	// By is who reconciled (the pipeline's owner): required.
	By string
}

// Validate says what is wrong with rc, or nil.
func (rc Reconciliation) Validate() error {
	switch rc.Outcome {
	case OutcomeEffectConfirmed:
		if strings.TrimSpace(rc.Receipt) == "" {
			return fmt.Errorf("%w: %s needs the effect's receipt (the external system's id of it)", ErrInvalid, rc.Outcome)
		}
	case OutcomeNoEffect:
		if rc.Receipt != "" {
			return fmt.Errorf("%w: %s takes no receipt", ErrInvalid, rc.Outcome)
		}
	default:
		return fmt.Errorf("%w: unknown outcome %q (want %s or %s)", ErrInvalid, rc.Outcome, OutcomeEffectConfirmed, OutcomeNoEffect)
	}
	if strings.TrimSpace(rc.By) == "" {
		return fmt.Errorf("%w: say who reconciles", ErrInvalid)
	}
	return nil
}

// EffectUnknown reports whether the entry is what Reconcile accepts at
// now: a mutating call was started, no receipt was recorded, the key is not
// done, and no delivery holds an unexpired lease on it.
func (e Entry) EffectUnknown(now time.Time) bool {
	if !e.EffectStarted || e.Receipt != "" || e.State == StateDone {
		return false
	}
	return e.State != StateInProgress || e.LeaseUntil.IsZero() || !now.Before(e.LeaseUntil)
}

// ReconciledAs reports whether the entry already records rc's outcome (and,
// for a confirmed effect, its receipt): then Reconcile with rc is a no-op.
func (e Entry) ReconciledAs(rc Reconciliation) bool {
	switch rc.Outcome {
	case OutcomeEffectConfirmed:
		return e.Reconciled == OutcomeEffectConfirmed && e.State == StateDone && e.Receipt == rc.Receipt
	case OutcomeNoEffect:
		return e.NoEffect()
	}
	return false
}

// NoEffect reports whether the owner reconciled the key as no effect and no
// mutating call started since: a redrive of its dead letter needs no
// override.
func (e Entry) NoEffect() bool {
	return e.Reconciled == OutcomeNoEffect && !e.EffectStarted && e.State != StateDone
}

// EffectConfirmed reports whether the owner confirmed the key's effect: its
// dead letter must never run again.
func (e Entry) EffectConfirmed() bool {
	return e.Reconciled == OutcomeEffectConfirmed && e.State == StateDone
}

// reconcileRefusal is Reconcile's answer when the entry (found or not) is
// not effect unknown at now: nil with the entry when it already records rc,
// else ErrReconciled or ErrNotEffectUnknown (ErrLeased while a delivery
// holds the key).
func reconcileRefusal(key string, e Entry, found bool, rc Reconciliation, now time.Time) (Entry, error) {
	switch {
	case !found:
		return Entry{}, fmt.Errorf("%w: the ledger holds no entry for %q", ErrNotEffectUnknown, key)
	case e.ReconciledAs(rc):
		return e, nil
	case e.Reconciled != "" && !e.EffectStarted || e.EffectConfirmed():
		return e, fmt.Errorf("%w: %q was reconciled as %s by %s at %s", ErrReconciled, key, e.Reconciled, e.ReconciledBy, e.ReconciledAt.UTC().Format(time.RFC3339))
	case e.State == StateDone:
		return e, fmt.Errorf("%w: %q is done with receipt %q", ErrNotEffectUnknown, key, e.Receipt)
	case !e.EffectStarted:
		return e, fmt.Errorf("%w: no mutating call was started for %q (state %s)", ErrNotEffectUnknown, key, e.State)
	case e.State == StateInProgress && now.Before(e.LeaseUntil):
		return e, fmt.Errorf("%w: a delivery holds %q until %s: reconcile after it ends", ErrLeased, key, e.LeaseUntil.UTC().Format(time.RFC3339))
	}
	return e, fmt.Errorf("%w: %q (state %s)", ErrNotEffectUnknown, key, e.State)
}

// Errors of Begin; test with errors.Is.
var (
	// ErrDone: the key is done; acknowledge the message as a no-op.
	ErrDone = errors.New("ledger: idempotency key is already done")
	// ErrLeased: another delivery holds an unexpired lease on the key.
	ErrLeased = errors.New("ledger: idempotency key is leased by another delivery")
	// ErrUnavailable wraps a ledger outage (throttling, network): retry later.
	ErrUnavailable = errors.New("ledger: unavailable")
	// ErrKeyReused: the key is known with another args digest. The task
	// is not the one the key was claimed for (a producer that reuses keys,
	// or args changed after the key was issued): it must not run, and it
	// must not be taken for done. The worker dead-letters it as
	// idempotency_key_reused; the entry is left as it was.
	ErrKeyReused = errors.New("ledger: idempotency key reused with other args")
)

// KeyReused reports whether a Begin with digest on an entry holding e would
// fail with ErrKeyReused: both digests are known and they differ. An entry
// without a digest (older, or written only by Redriven or DeadLettered)
// takes the first digest a Begin brings; a Begin without one checks
// nothing.
func (e Entry) KeyReused(digest string) bool {
	return digest != "" && e.ArgsDigest != "" && e.ArgsDigest != digest
}

// ShortDigest is an args digest as messages and tables show it: its prefix
// and 12 hex digits, enough to tell two apart, not the whole hash.
func ShortDigest(d string) string {
	if n := strings.LastIndexByte(d, ':') + 1 + 12; len(d) > n {
		return d[:n] + "…"
	}
	return d
}

// Errors of Reconcile; test with errors.Is.
var (
	// ErrNotEffectUnknown: the key's effect is not unknown (no entry, no
	// mutating call started, or done): there is nothing to reconcile.
	ErrNotEffectUnknown = errors.New("ledger: the key's effect is not unknown")
	// ErrReconciled: the key was reconciled with another outcome (or
	// another receipt); a reconciliation is not changed.
	ErrReconciled = errors.New("ledger: the key was reconciled otherwise")
	// ErrInvalid: the Reconciliation is malformed.
	ErrInvalid = errors.New("ledger: invalid reconciliation")
)

// Ledger is what the worker, triage and redrive need of the ledger.
type Ledger interface {
	// Begin claims key for owner (the SQS message id) until now+lease and
	// returns the entry as it was before the claim (the zero Entry for a new
	// key). digest is the digest of the task's canonical args (optional:
	// "" checks nothing); the first Begin that brings one records it as
	// ArgsDigest. Begin fails with ErrKeyReused, before any other check,
	// when the entry holds another digest (Entry.KeyReused: the returned
	// entry is the key's, untouched); with ErrDone when the key is done (the
	// returned entry holds the receipt); and with ErrLeased when another
	// owner holds a lease that has not expired (it holds while now <
	// LeaseUntil; the entry names the holder). The same owner may Begin again (a redelivery of the same
	// message); anyone may Begin a dead-lettered key (that is what a redrive
	// does), a released key, a key whose lease expired and a key with no
	// state. Of concurrent Begins on one key exactly one wins. A refused
	// Begin changes nothing, so a redelivery of done work is a no-op.
	Begin(ctx context.Context, key, owner, digest string, now time.Time, lease time.Duration) (Entry, error)
	// StartEffect records, before a mutating call, that its effect may happen
	// (EffectStarted). Only the holder of an in_progress key may; anyone else
	// gets ErrLeased and must not make the call.
	StartEffect(ctx context.Context, key, owner string, now time.Time) error
	// Complete marks key done with its effect receipt and clears the lease.
	// It is unconditional: the effect happened, and its receipt must not be
	// lost because a lease ran out.
	Complete(ctx context.Context, key, owner, receipt string, now time.Time) error
	// CompleteReadOnly settles, in one conditional write and with no Begin
	// before it, a task whose tool declares that it changes nothing: it
	// marks key done with receipt and owner, records digest where the
	// entry has none (as Begin does), clears the lease and returns the
	// entry as it was before (the zero Entry for a new key). It is refused,
	// changing nothing, with the errors of Begin in Begin's precedence:
	// ErrKeyReused when the entry holds another digest (Entry.KeyReused);
	// ErrDone when the key is done (so that a redelivery of done work is
	// acknowledged as a no-op, and of concurrent calls on one key exactly
	// one succeeds); ErrLeased when another owner holds an unexpired lease
	// (a Begin's claim). It keeps the counts, and anyone may complete a
	// dead-lettered, released, expired or stateless key. Unlike Begin it
	// does not consult the entry the version before scoping wrote (see
	// Key): the task it settles had no effect to repeat.
	CompleteReadOnly(ctx context.Context, key, owner, digest, receipt string, now time.Time) (Entry, error)
	// Release gives up the lease after a failure that will be retried, so
	// that the next delivery need not wait for it to expire. It does nothing
	// (and returns nil) when the caller does not hold the key, or the key is
	// unknown or done.
	Release(ctx context.Context, key, owner string, now time.Time) error
	// DeadLettered records that the key was dead-lettered with reason: it
	// sets dead_lettered and the reason, clears the lease and adds one to
	// DeadLetterCount (creating the entry if need be), and returns the new
	// entry. The worker calls it after the DLQ accepted the letter.
	DeadLettered(ctx context.Context, key string, reason deadletter.Reason, now time.Time) (Entry, error)
	// Redriven adds one to the key's redrive count and returns the new entry;
	// it does not change the state (creating an entry with no state if need
	// be). redrive calls it for each letter it moves back; the worker
	// dead-letters a key as redrive_loop once its count reaches the limit.
	Redriven(ctx context.Context, key string, now time.Time) (Entry, error)
	// Get returns the key's entry (strongly consistent in Dynamo); ok is
	// false when there is none. triage and redrive only read.
	Get(ctx context.Context, key string) (e Entry, ok bool, err error)
	// Reconcile records what the owner found out about a key whose effect
	// is unknown (Entry.EffectUnknown at now: EffectStarted, no receipt, not
	// done, no unexpired lease), in one conditional write, and returns the
	// entry after it. OutcomeEffectConfirmed marks the key done with
	// rc.Receipt: a redelivery is acknowledged as a no-op, the task never
	// runs again. OutcomeNoEffect clears EffectStarted: a redrive runs the
	// task afresh. Both set Reconciled, ReconciledBy and ReconciledAt and
	// keep the counts. The same reconciliation again is a no-op that
	// returns the entry; a different one fails with ErrReconciled; a key
	// whose effect is not unknown fails with ErrNotEffectUnknown (ErrLeased
	// while a delivery holds it); a malformed rc with ErrInvalid; none
	// changes anything. Of concurrent reconciliations with different
	// outcomes exactly one wins. An effect started again after no effect is
	// unknown again: a new incident, reconciled on its own.
	Reconcile(ctx context.Context, key string, rc Reconciliation, now time.Time) (Entry, error)
}

// DefaultTTL is how long after its last write an entry expires (doc.go says
// why 30 days).
const DefaultTTL = 30 * 24 * time.Hour
