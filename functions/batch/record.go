package batch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/functions/batch/internal/sqsevent"
	"github.com/agentdlq/agentdlq/ledger"
)

// Handler handles one record. Return nil when the record is done (it is
// acknowledged), one of the outcome constructors (Transient, Poison, ...)
// to say what the failure does to the message, or any other error (it is
// classified; see Classify). A panic is recovered and is that record's
// failure only.
type Handler func(ctx context.Context, r Record) error

// Record is one SQS message as a handler sees it, with its SQS system
// attributes decoded. It is the same on every entry (Handle, Invoke,
// HandleEvent), and everything its methods return is the record's own: a
// handler may keep any of it after the call, and nothing it does to a value
// it was given changes the dead letter, which carries the message as it was
// received.
type Record struct {
	// ReceiveCount is ApproximateReceiveCount: 1 on the first delivery. A
	// missing or unreadable value counts as 1 (and is logged). A message
	// the processor requeued after a Retry-After (Config.RetryAfterRequeues)
	// adds the receives it had spent before (AttrRequeued): the count the
	// budget is held to.
	ReceiveCount int
	// GroupID is MessageGroupId (FIFO queues only).
	GroupID string

	p    *Processor
	st   *recordState
	m    *sqsevent.Message // the message as decoded: views of the event's copy of the payload, never written
	body []byte            // the handler's copy of the body
}

// recordState is what the handler tells the processor about a record.
type recordState struct {
	fields        deadletter.TaskFields // what Describe named
	described     bool
	key           string // the task's idempotency key, as the task gives it
	tenant        string // the tenant Begin scoped the key to
	ledgerKey     string // ledger.Key(pipeline, tenant, key): the ledger's key
	begun         bool
	readOnly      bool   // the tool changes nothing: no claim; settled by one write (settleReadOnly)
	digest        string // the args digest Begin was given
	released      bool   // the lease was given back (release): not twice
	mutates       bool
	effectStarted bool
	redriveCount  int
	receipt       string
	now           time.Time // the record's clock reading: the ledger's "now"
	badCount      bool      // ApproximateReceiveCount was missing or unreadable
	requeues      int       // requeues after a Retry-After so far (AttrRequeued)
	result        result    // what happened to the record
	notStarted    bool      // not handled: the invocation was out of time
}

// SentAt returns SentTimestamp (zero when missing), read on demand: only
// dead letters need it.
func (r Record) SentAt() time.Time {
	return r.m.SentAt()
}

// FirstReceivedAt returns ApproximateFirstReceiveTimestamp (zero when
// missing), read on demand: only dead letters need it.
func (r Record) FirstReceivedAt() time.Time {
	return r.m.FirstReceiveAt()
}

// Body returns the message body (nil when it is empty). The slice is the
// record's own copy, made for this handler call: keep it or modify it as
// you like; the dead letter carries the body as it was received.
func (r Record) Body() []byte { return r.body }

// MessageID returns the SQS message id.
func (r Record) MessageID() string { return r.m.ID() }

// EventSourceARN returns the ARN of the queue the message came from.
func (r Record) EventSourceARN() string { return r.m.ARN() }

// ReceiptHandle returns the message's receipt handle.
func (r Record) ReceiptHandle() string { return r.m.Receipt() }

// Attribute returns the SQS system attribute name (SentTimestamp,
// AWSTraceHeader, ...), "" when the message has none.
func (r Record) Attribute(name string) string {
	v, _ := r.m.Attribute(name)
	return v
}

// MessageAttributes returns the message attributes, nil when there are
// none: a new map on each call, decoded when called.
func (r Record) MessageAttributes() map[string]events.SQSMessageAttribute {
	return r.m.MessageAttributes()
}

// SQSMessage returns the message as aws-lambda-go's type, decoded when
// called (a new value on each call: the attribute maps cost what the
// processor otherwise spares; call it only where a library needs the type).
func (r Record) SQSMessage() events.SQSMessage {
	return r.m.SQSMessage()
}

// Describer is a decoded message that names what its dead letter's
// dlq_meta and the processor's log lines say of it: an agenttask.Task, or a
// type of the handler's own.
type Describer interface {
	DeadLetterFields() deadletter.TaskFields
}

// Describe attaches what the handler decoded, so that a dead letter's
// dlq_meta carries the task, run, tenant, tool, idempotency key and trace
// id, and the log lines its trace_id. The fields are read at once.
func (r Record) Describe(d Describer) {
	if r.st == nil || d == nil {
		return
	}
	r.st.fields = d.DeadLetterFields()
	r.st.described = true
}

// Begin takes the task's idempotency key in the ledger for this delivery
// (owner: the message id) with a lease, before any work. The ledger's key
// is ledger.Key(Config.Pipeline, tenant, key): a key is the producer's
// only within its pipeline and tenant, so that no task of another tenant
// or pipeline with the same key makes this one a duplicate or a reused
// key (docs/worker.md, "Whose key it is"). digest is the
// digest of the task's canonical args (agenttask.ArgsDigest; "" checks
// nothing): the ledger keeps the first one a key is claimed with, and a
// task that brings another is not the task the key was issued for. Return
// Begin's error unchanged from the handler:
//
//   - nil: go on; on success the processor marks the key done with the
//     receipt given to SetReceipt;
//   - ErrAlreadyDone: the key is done; the message is acknowledged as a no-op;
//   - a Security outcome, idempotency_key_reused: the ledger holds the key
//     with another digest; the message is dead-lettered at once, the task
//     never runs and the key's entry is left as it was (neither marked done
//     nor counted as dead-lettered: the entry is the other task's);
//   - a Transient outcome: another delivery holds the lease; retried;
//   - an EffectUnknown outcome: mutates is true and an earlier delivery
//     started the mutating call without leaving a receipt;
//   - a ledger outage: retried, never dead-lettered.
//
// With mutates false (the tool declares that it changes nothing) Begin
// makes no ledger call: the record is settled after the handler in one
// conditional write (ledger.Ledger.CompleteReadOnly), which checks the
// digest and a done key as the claim would, and a failed record reads its
// entry before it is retried or dead-lettered, so that a done key is still
// acknowledged as a no-op and a reused one dead-lettered as
// idempotency_key_reused. Two deliveries of one key at once may then both
// run the read-only call (docs/worker.md, "One write for a read-only
// tool"). A handler that calls StartEffect on such a record claims the key
// there, as Begin with mutates true would have.
//
// Without a ledger in the Config, Begin only records the key and returns nil.
func (r Record) Begin(ctx context.Context, tenant, key, digest string, mutates bool) error {
	if r.st == nil {
		return nil
	}
	r.st.key, r.st.tenant, r.st.mutates, r.st.digest = key, tenant, mutates, digest
	if r.p == nil || r.p.ledger == nil {
		return nil
	}
	r.st.ledgerKey = ledger.Key(r.p.pipeline, tenant, key)
	if !mutates {
		r.st.readOnly = true
		return nil
	}
	return r.claim(ctx)
}

// claim takes the record's key in the ledger (Begin's claim path).
func (r Record) claim(ctx context.Context) error {
	digest := r.st.digest
	prev, err := r.p.ledger.Begin(ctx, r.st.ledgerKey, r.MessageID(), digest, r.st.now, r.p.lease)
	switch {
	case err == nil:
	case errors.Is(err, ledger.ErrKeyReused):
		return keyReused(err, prev, digest)
	case errors.Is(err, ledger.ErrDone):
		return ErrAlreadyDone
	case errors.Is(err, ledger.ErrLeased):
		return Transient(err)
	default:
		return fmt.Errorf("%w: begin: %w", errLedger, err)
	}
	r.st.begun = true
	r.st.redriveCount = prev.RedriveCount
	if r.st.mutates && prev.State == ledger.StateInProgress && prev.EffectStarted && prev.Receipt == "" {
		r.st.effectStarted = true
		return EffectUnknown(errors.New("an earlier delivery started the mutating call and left no receipt"))
	}
	return nil
}

// keyReused is the outcome of a key the ledger holds with another digest.
func keyReused(err error, prev ledger.Entry, digest string) error {
	return Security(deadletter.ReasonIdempotencyKeyReused,
		fmt.Errorf("%w: the ledger holds the key with args digest %s, this task's is %s", err, ledger.ShortDigest(prev.ArgsDigest), ledger.ShortDigest(digest)))
}

// StartEffect records, before a mutating call, that its effect may happen.
// From then on, a failure that is not poison, security or policy_limit is
// dead-lettered as effect_unknown. If the ledger cannot record it, do not
// make the call: return the error (the record is retried).
func (r Record) StartEffect(ctx context.Context) error {
	if r.st == nil {
		return nil
	}
	if r.st.readOnly && !r.st.begun {
		// The tool was declared read-only and makes a mutating call after
		// all: claim the key now, as a mutating tool's Begin would have.
		r.st.readOnly, r.st.mutates = false, true
		if err := r.claim(ctx); err != nil {
			return err
		}
	}
	if r.st.begun && r.p != nil && r.p.ledger != nil {
		if err := r.p.ledger.StartEffect(ctx, r.st.ledgerKey, r.MessageID(), r.st.now); err != nil {
			if errors.Is(err, ledger.ErrLeased) {
				return Transient(err)
			}
			return fmt.Errorf("%w: start effect: %w", errLedger, err)
		}
	}
	r.st.effectStarted = true
	return nil
}

// SetReceipt keeps the effect receipt (an id the outside world gave the
// effect, or a hash of the work) for the processor: it only stores it. The
// ledger records it when the handler returns nil and the processor marks
// the key done; a failed record's receipt is dropped.
func (r Record) SetReceipt(receipt string) {
	if r.st != nil {
		r.st.receipt = receipt
	}
}

// attrReceiveCount is the SQS system attribute ApproximateReceiveCount.
const attrReceiveCount = "ApproximateReceiveCount"

// newRecord decodes the system attributes of message m that every record
// needs and copies its body for the handler; now is the record's clock
// reading (see runOne).
func (p *Processor) newRecord(m *sqsevent.Message, st *recordState, now time.Time) Record {
	r := Record{ReceiveCount: 1, p: p, st: st, m: m}
	if body := m.Body(); len(body) > 0 {
		r.body = bytes.Clone(body)
	}
	st.now = now
	if p.fifo {
		r.GroupID = m.Group()
	}
	if n, ok := m.ReceiveCount(); ok {
		r.ReceiveCount = n
	} else {
		st.badCount = true
	}
	// A requeued message carries the receives it spent before (AttrRequeued).
	if spent, requeues := carried(m); spent > 0 || requeues > 0 {
		r.ReceiveCount += spent
		st.requeues = requeues
	}
	return r
}
