package batch

import (
	"errors"

	"github.com/agentdlq/agentdlq/events/deadletter"
)

// Kind is what a handler's outcome does to the SQS message.
type Kind uint8

// The outcome kinds. The zero Kind is not an outcome.
const (
	// KindTransient: retried inside the budget (batch item failure, optional
	// visibility backoff); dead-lettered as budget_exhausted on the last
	// allowed receive.
	KindTransient Kind = iota + 1
	// KindPoison: dead-lettered at once with its poison reason.
	KindPoison
	// KindSecurity: dead-lettered at once (signature_invalid, guardrail_reject).
	KindSecurity
	// KindEffectUnknown: dead-lettered at once as effect_unknown.
	KindEffectUnknown
	// KindAuthConfig: retried inside the budget; dead-lettered as auth_config
	// on the last allowed receive.
	KindAuthConfig
	// KindDependencyOpen: retried inside the budget; dead-lettered as
	// dependency_open on the last allowed receive.
	KindDependencyOpen
	// KindPolicyLimit: dead-lettered at once as policy_limit.
	KindPolicyLimit
	// KindUnclassified: an error nobody classified, or a panic: dead-lettered
	// at once, never assumed retryable.
	KindUnclassified
)

var kindNames = [...]string{"", "transient", "poison", "security", "effect_unknown", "auth_config", "dependency_open", "policy_limit", "unclassified"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(?)"
}

// Retryable reports whether the kind is retried while the budget lasts.
func (k Kind) Retryable() bool {
	return k == KindTransient || k == KindAuthConfig || k == KindDependencyOpen
}

// Sentinels that errors.Is matches against an outcome of that kind:
// errors.Is(err, batch.ErrTransient) is true for batch.Transient(x) and for
// any error wrapping it.
var (
	ErrTransient      = &Outcome{kind: KindTransient}
	ErrPoison         = &Outcome{kind: KindPoison}
	ErrSecurity       = &Outcome{kind: KindSecurity}
	ErrEffectUnknown  = &Outcome{kind: KindEffectUnknown}
	ErrAuthConfig     = &Outcome{kind: KindAuthConfig}
	ErrDependencyOpen = &Outcome{kind: KindDependencyOpen}
	ErrPolicyLimit    = &Outcome{kind: KindPolicyLimit}
)

// ErrDuplicate is returned by Record.Claim when the task's idempotency key
// is already done. Return it from the handler: the message is acknowledged
// as a no-op and counted as DuplicatesSkipped.
var ErrDuplicate = errors.New("batch: idempotency key already done")

// errLedger marks a ledger outage: the record is retried and never
// dead-lettered, whatever its receive count.
var errLedger = errors.New("batch: ledger unavailable")

// Outcome is a handler's classified failure: a kind, the reason it is
// dead-lettered with, and the cause. Make one with the constructors below;
// a handler returns it (possibly wrapped) and the processor acts on it.
type Outcome struct {
	kind   Kind
	reason deadletter.Reason
	err    error
}

// Transient: retry. The message is reported as a batch item failure (and
// hidden for a backoff); on its last allowed receive it is dead-lettered as
// budget_exhausted with its attempt history.
func Transient(err error) error {
	return &Outcome{kind: KindTransient, reason: deadletter.ReasonBudgetExhausted, err: err}
}

// Poison: the message can never succeed as it is. It is dead-lettered at
// once with reason, which must be of class poison (json_invalid,
// schema_invalid, tool_unknown, tool_version_unsupported); any other reason
// makes the outcome unclassified, so that a wrong reason is seen, not hidden.
func Poison(reason deadletter.Reason, err error) error {
	if reason.Class() != deadletter.ClassPoison {
		return &Outcome{kind: KindUnclassified, reason: deadletter.ReasonUnclassified, err: errors.Join(errors.New("batch.Poison called with non-poison reason "+string(reason)), err)}
	}
	return &Outcome{kind: KindPoison, reason: reason, err: err}
}

// Security: a signature that did not verify or a guardrail rejection. The
// message is dead-lettered at once with reason (signature_invalid or
// guardrail_reject; any other reason makes the outcome unclassified).
func Security(reason deadletter.Reason, err error) error {
	if reason.Class() != deadletter.ClassSecurity {
		return &Outcome{kind: KindUnclassified, reason: deadletter.ReasonUnclassified, err: errors.Join(errors.New("batch.Security called with non-security reason "+string(reason)), err)}
	}
	return &Outcome{kind: KindSecurity, reason: reason, err: err}
}

// EffectUnknown: a mutating call started and its outcome is not known. The
// message is dead-lettered at once as effect_unknown: repeating it may
// repeat the effect.
func EffectUnknown(err error) error {
	return &Outcome{kind: KindEffectUnknown, reason: deadletter.ReasonEffectUnknown, err: err}
}

// AuthConfig: an expired credential, AccessDenied, KMS denied. Retried
// inside the budget (a configuration fix may land); dead-lettered as
// auth_config on the last allowed receive.
func AuthConfig(err error) error {
	return &Outcome{kind: KindAuthConfig, reason: deadletter.ReasonAuthConfig, err: err}
}

// DependencyOpen: a dependency's circuit breaker is open. Retried inside the
// budget; dead-lettered as dependency_open on the last allowed receive.
func DependencyOpen(err error) error {
	return &Outcome{kind: KindDependencyOpen, reason: deadletter.ReasonDependencyOpen, err: err}
}

// PolicyLimit: too many steps, turns or too much cost. Dead-lettered at once
// as policy_limit.
func PolicyLimit(err error) error {
	return &Outcome{kind: KindPolicyLimit, reason: deadletter.ReasonPolicyLimit, err: err}
}

// Kind returns the outcome's kind.
func (o *Outcome) Kind() Kind { return o.kind }

// Reason returns the reason the message is dead-lettered with.
func (o *Outcome) Reason() deadletter.Reason { return o.reason }

func (o *Outcome) Error() string {
	if o.err == nil {
		return o.kind.String()
	}
	return o.kind.String() + ": " + o.err.Error()
}

// Unwrap returns the cause.
func (o *Outcome) Unwrap() error { return o.err }

// Is matches the sentinel of the same kind (ErrTransient, ErrPoison, ...).
func (o *Outcome) Is(target error) bool {
	t, ok := target.(*Outcome)
	return ok && t.err == nil && t.reason == "" && t.kind == o.kind
}
