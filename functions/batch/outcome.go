package batch

import (
	"errors"
	"time"

	"github.com/agentdlq/agentdlq/events/deadletter"
)

// The class of an outcome is its deadletter.Class: one failure taxonomy for
// the worker, the dead letters, triage and the docs. What each class does to
// the SQS message (deadletter.Class.Retryable says which are retried):
//
//	transient      retried inside the budget (batch item failure, optional
//	               visibility backoff); budget_exhausted on the last receive
//	poison         dead-lettered at once with its poison reason
//	security       dead-lettered at once (signature_invalid, guardrail_reject,
//	               idempotency_key_reused)
//	authorization  retried inside the budget; auth_config on the last receive
//	dependency     retried inside the budget; dependency_open on the last receive
//	ambiguous      dead-lettered at once as effect_unknown
//	policy         dead-lettered at once as policy_limit
//	unknown        dead-lettered at once as unclassified, never assumed retryable

// Sentinels that errors.Is matches against an outcome of that class:
// errors.Is(err, batch.ErrTransient) is true for batch.Transient(x) and for
// any error wrapping it.
var (
	ErrTransient      = &Outcome{class: deadletter.ClassTransient}
	ErrPoison         = &Outcome{class: deadletter.ClassPoison}
	ErrSecurity       = &Outcome{class: deadletter.ClassSecurity}
	ErrEffectUnknown  = &Outcome{class: deadletter.ClassAmbiguous}
	ErrAuthConfig     = &Outcome{class: deadletter.ClassAuthorization}
	ErrDependencyOpen = &Outcome{class: deadletter.ClassDependency}
	ErrPolicyLimit    = &Outcome{class: deadletter.ClassPolicy}
)

// ErrAlreadyDone is returned by Record.Begin when the task's idempotency key
// is already done. Return it from the handler: the message is acknowledged
// as a no-op and counted as DuplicatesSkipped.
var ErrAlreadyDone = errors.New("batch: idempotency key already done")

// errLedger marks a ledger outage: the record is retried and never
// dead-lettered, whatever its receive count.
var errLedger = errors.New("batch: ledger unavailable")

// Outcome is a handler's classified failure: the reason it is dead-lettered
// with (which names its class), and the cause. Make one with the
// constructors below, which all return a *Outcome, never nil (so that
// returning one as an error is never a nil interface holding a nil
// pointer); a handler returns it (possibly wrapped) and the processor acts
// on it. errors.As(err, &o) finds it through wrapping; errors.Is(err,
// ErrPoison) and the other sentinels match its class.
type Outcome struct {
	class  deadletter.Class // always reason.Class(), but for the sentinels
	reason deadletter.Reason
	err    error
	after  time.Duration // the provider's Retry-After (see After)
}

func newOutcome(reason deadletter.Reason, err error) *Outcome {
	return &Outcome{class: reason.Class(), reason: reason, err: err}
}

// unclassified is the outcome of a constructor called with a reason of
// another class: a wrong reason is seen, not hidden.
func unclassified(msg string, err error) *Outcome {
	return newOutcome(deadletter.ReasonUnclassified, errors.Join(errors.New(msg), err))
}

// Transient is the outcome to retry. The message is reported as a batch item failure (and
// hidden for a backoff); on its last allowed receive it is dead-lettered as
// budget_exhausted with its attempt history. Transient(err).After(d) says
// when the provider asked to be tried again (a 429's Retry-After).
func Transient(err error) *Outcome {
	return newOutcome(deadletter.ReasonBudgetExhausted, err)
}

// Poison is the outcome of a message that can never succeed as it is. It is dead-lettered at
// once with reason, which must be of class poison (json_invalid,
// schema_invalid, tool_unknown, tool_version_unsupported); any other reason
// makes the outcome unclassified, so that a wrong reason is seen, not hidden.
func Poison(reason deadletter.Reason, err error) *Outcome {
	if reason.Class() != deadletter.ClassPoison {
		return unclassified("batch.Poison called with non-poison reason "+string(reason), err)
	}
	return newOutcome(reason, err)
}

// Security is the outcome of a signature that did not verify, a guardrail rejection or a
// reused idempotency key. The message is dead-lettered at once with reason
// (signature_invalid, guardrail_reject or idempotency_key_reused, which
// Record.Begin returns itself; any other reason makes the outcome
// unclassified).
func Security(reason deadletter.Reason, err error) *Outcome {
	if reason.Class() != deadletter.ClassSecurity {
		return unclassified("batch.Security called with non-security reason "+string(reason), err)
	}
	return newOutcome(reason, err)
}

// EffectUnknown is the outcome when a mutating call started and its outcome is not known. The
// message is dead-lettered at once as effect_unknown: repeating it may
// repeat the effect.
func EffectUnknown(err error) *Outcome {
	return newOutcome(deadletter.ReasonEffectUnknown, err)
}

// AuthConfig is the outcome of an expired credential, AccessDenied, KMS denied. Retried
// inside the budget (a configuration fix may land); dead-lettered as
// auth_config on the last allowed receive.
func AuthConfig(err error) *Outcome {
	return newOutcome(deadletter.ReasonAuthConfig, err)
}

// DependencyOpen is the outcome when a dependency's circuit breaker is open. Retried inside the
// budget; dead-lettered as dependency_open on the last allowed receive.
func DependencyOpen(err error) *Outcome {
	return newOutcome(deadletter.ReasonDependencyOpen, err)
}

// PolicyLimit is the outcome of too many steps, turns or too much cost. Dead-lettered at once
// as policy_limit.
func PolicyLimit(err error) *Outcome {
	return newOutcome(deadletter.ReasonPolicyLimit, err)
}

// Class returns the outcome's failure class.
func (o *Outcome) Class() deadletter.Class { return o.class }

// Reason returns the reason the message is dead-lettered with.
func (o *Outcome) Reason() deadletter.Reason { return o.reason }

func (o *Outcome) Error() string {
	if o.err == nil {
		return o.label()
	}
	return o.label() + ": " + o.err.Error()
}

// label prefixes the error text: the reason when the class has one reason
// (auth_config, dependency_open, effect_unknown, policy_limit,
// unclassified), the class otherwise (transient, poison, security). The
// words are the ones the dead letters already in a DLQ carry in their
// dlq_meta error text, which triage's fingerprints hash.
func (o *Outcome) label() string {
	switch o.class {
	case deadletter.ClassTransient, deadletter.ClassPoison, deadletter.ClassSecurity:
		return string(o.class)
	case deadletter.ClassAuthorization:
		return string(deadletter.ReasonAuthConfig)
	case deadletter.ClassDependency:
		return string(deadletter.ReasonDependencyOpen)
	case deadletter.ClassAmbiguous:
		return string(deadletter.ReasonEffectUnknown)
	case deadletter.ClassPolicy:
		return string(deadletter.ReasonPolicyLimit)
	case deadletter.ClassUnknown:
		return string(deadletter.ReasonUnclassified)
	}
	return string(o.class)
}

// Unwrap returns the cause.
func (o *Outcome) Unwrap() error { return o.err }

// Is matches the sentinel of the same class (ErrTransient, ErrPoison, ...).
func (o *Outcome) Is(target error) bool {
	t, ok := target.(*Outcome)
	return ok && t.err == nil && t.reason == "" && t.class == o.class
}
