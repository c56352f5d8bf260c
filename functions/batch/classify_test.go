package batch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/agenttask"
	"github.com/agentdlq/agentdlq/events/deadletter"
)

func apiErr(code string, fault smithy.ErrorFault) error {
	return &smithy.GenericAPIError{Code: code, Message: "m", Fault: fault}
}

// opErr wraps an API error the way the SDK does.
func opErr(err error) error {
	return &smithy.OperationError{ServiceID: "SQS", OperationName: "SendMessage", Err: err}
}

// orderError is a payload's own validation error, not agenttask's: the
// processor reads its reason and code through ReasonError.
type orderError struct {
	reason deadletter.Reason
	code   string
	cause  error
}

func (e orderError) Error() string                       { return "order invalid: " + string(e.reason) }
func (e orderError) DeadLetterReason() deadletter.Reason { return e.reason }
func (e orderError) ErrorCode() string                   { return e.code }
func (e orderError) Unwrap() error                       { return e.cause }

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

var _ net.Error = timeoutErr{}

func TestClassifyPrecedence(t *testing.T) {
	t.Parallel()
	base := errors.New("boom")
	tests := []struct {
		name          string
		err           error
		effectStarted bool
		wantClass     deadletter.Class  // what the message undergoes
		wantReason    deadletter.Reason // the reason it is dead-lettered with
		wantCode      string
	}{
		{name: "transient", err: Transient(base), wantClass: deadletter.ClassTransient, wantReason: deadletter.ReasonBudgetExhausted},
		{name: "poison", err: Poison(deadletter.ReasonSchemaInvalid, base), wantClass: deadletter.ClassPoison, wantReason: deadletter.ReasonSchemaInvalid},
		{name: "poison with a non-poison reason is unclassified", err: Poison(deadletter.ReasonBudgetExhausted, base), wantClass: deadletter.ClassUnknown, wantReason: deadletter.ReasonUnclassified},
		{name: "security", err: Security(deadletter.ReasonGuardrailReject, base), wantClass: deadletter.ClassSecurity, wantReason: deadletter.ReasonGuardrailReject},
		{name: "security with a poison reason is unclassified", err: Security(deadletter.ReasonJSONInvalid, base), wantClass: deadletter.ClassUnknown, wantReason: deadletter.ReasonUnclassified},
		{name: "effect unknown", err: EffectUnknown(base), wantClass: deadletter.ClassAmbiguous, wantReason: deadletter.ReasonEffectUnknown},
		{name: "auth config", err: AuthConfig(base), wantClass: deadletter.ClassAuthorization, wantReason: deadletter.ReasonAuthConfig},
		{name: "dependency open", err: DependencyOpen(base), wantClass: deadletter.ClassDependency, wantReason: deadletter.ReasonDependencyOpen},
		{name: "policy limit", err: PolicyLimit(base), wantClass: deadletter.ClassPolicy, wantReason: deadletter.ReasonPolicyLimit},
		{name: "wrapped typed outcome", err: fmt.Errorf("tool: %w", PolicyLimit(base)), wantClass: deadletter.ClassPolicy, wantReason: deadletter.ReasonPolicyLimit},
		{name: "typed outcome beats the API error it wraps", err: Poison(deadletter.ReasonToolUnknown, apiErr("ThrottlingException", smithy.FaultClient)), wantClass: deadletter.ClassPoison, wantReason: deadletter.ReasonToolUnknown, wantCode: "ThrottlingException"},
		{name: "typed outcome beats a deadline it wraps", err: PolicyLimit(context.DeadlineExceeded), wantClass: deadletter.ClassPolicy, wantReason: deadletter.ReasonPolicyLimit},
		{name: "validation error", err: &agenttask.ValidationError{Reason: deadletter.ReasonToolVersionUnsupported, Field: "tool_version"}, wantClass: deadletter.ClassPoison, wantReason: deadletter.ReasonToolVersionUnsupported, wantCode: "field:tool_version"},
		{name: "wrapped validation error", err: fmt.Errorf("decode: %w", &agenttask.ValidationError{Reason: deadletter.ReasonJSONInvalid}), wantClass: deadletter.ClassPoison, wantReason: deadletter.ReasonJSONInvalid},
		{name: "a payload's own reason error", err: fmt.Errorf("order: %w", orderError{reason: deadletter.ReasonSchemaInvalid, code: "order:amount"}), wantClass: deadletter.ClassPoison, wantReason: deadletter.ReasonSchemaInvalid, wantCode: "order:amount"},
		{name: "a reason error naming a retryable reason", err: orderError{reason: deadletter.ReasonDependencyOpen}, wantClass: deadletter.ClassDependency, wantReason: deadletter.ReasonDependencyOpen},
		{name: "a reason error naming a reason the worker cannot write", err: orderError{reason: deadletter.ReasonReceiveLimit}, wantClass: deadletter.ClassUnknown, wantReason: deadletter.ReasonUnclassified},
		{name: "a reason error beats a deadline it wraps", err: orderError{reason: deadletter.ReasonToolUnknown, cause: context.DeadlineExceeded}, wantClass: deadletter.ClassPoison, wantReason: deadletter.ReasonToolUnknown},
		{name: "deadline", err: context.DeadlineExceeded, wantClass: deadletter.ClassTransient, wantReason: deadletter.ReasonBudgetExhausted, wantCode: "DeadlineExceeded"},
		{name: "wrapped deadline beats the API error", err: fmt.Errorf("call: %w", errors.Join(context.DeadlineExceeded, apiErr("AccessDenied", smithy.FaultClient))), wantClass: deadletter.ClassTransient, wantReason: deadletter.ReasonBudgetExhausted, wantCode: "DeadlineExceeded"},
		{name: "canceled", err: fmt.Errorf("x: %w", context.Canceled), wantClass: deadletter.ClassTransient, wantReason: deadletter.ReasonBudgetExhausted, wantCode: "Canceled"},
		{name: "net timeout", err: &net.OpError{Op: "read", Err: timeoutErr{}}, wantClass: deadletter.ClassTransient, wantReason: deadletter.ReasonBudgetExhausted, wantCode: "Timeout"},
		{name: "throttling", err: apiErr("ThrottlingException", smithy.FaultClient), wantClass: deadletter.ClassTransient, wantReason: deadletter.ReasonBudgetExhausted, wantCode: "ThrottlingException"},
		{name: "wrapped throttling", err: opErr(apiErr("TooManyRequestsException", smithy.FaultClient)), wantClass: deadletter.ClassTransient, wantReason: deadletter.ReasonBudgetExhausted, wantCode: "TooManyRequestsException"},
		{name: "server fault", err: opErr(apiErr("SomethingBroke", smithy.FaultServer)), wantClass: deadletter.ClassTransient, wantReason: deadletter.ReasonBudgetExhausted, wantCode: "SomethingBroke"},
		{name: "service unavailable sent as unknown fault", err: apiErr("ServiceUnavailable", smithy.FaultUnknown), wantClass: deadletter.ClassTransient, wantReason: deadletter.ReasonBudgetExhausted, wantCode: "ServiceUnavailable"},
		{name: "access denied", err: apiErr("AccessDenied", smithy.FaultClient), wantClass: deadletter.ClassAuthorization, wantReason: deadletter.ReasonAuthConfig, wantCode: "AccessDenied"},
		{name: "wrapped expired token", err: opErr(apiErr("ExpiredTokenException", smithy.FaultClient)), wantClass: deadletter.ClassAuthorization, wantReason: deadletter.ReasonAuthConfig, wantCode: "ExpiredTokenException"},
		{name: "KMS denied", err: apiErr("KMSAccessDeniedException", smithy.FaultClient), wantClass: deadletter.ClassAuthorization, wantReason: deadletter.ReasonAuthConfig, wantCode: "KMSAccessDeniedException"},
		{name: "KMS throttling is transient", err: apiErr("KMSThrottlingException", smithy.FaultClient), wantClass: deadletter.ClassTransient, wantReason: deadletter.ReasonBudgetExhausted, wantCode: "KMSThrottlingException"},
		{name: "unknown client error", err: opErr(apiErr("ValidationException", smithy.FaultClient)), wantClass: deadletter.ClassUnknown, wantReason: deadletter.ReasonUnclassified, wantCode: "ValidationException"},
		{name: "plain error", err: base, wantClass: deadletter.ClassUnknown, wantReason: deadletter.ReasonUnclassified},
		{name: "panic", err: &panicError{value: "nil map"}, wantClass: deadletter.ClassUnknown, wantReason: deadletter.ReasonUnclassified},

		// Effect-aware: after StartEffect, what could have had its effect is effect_unknown.
		{name: "deadline after the effect started", err: context.DeadlineExceeded, effectStarted: true, wantClass: deadletter.ClassAmbiguous, wantReason: deadletter.ReasonEffectUnknown, wantCode: "DeadlineExceeded"},
		{name: "transient after the effect started", err: Transient(base), effectStarted: true, wantClass: deadletter.ClassAmbiguous, wantReason: deadletter.ReasonEffectUnknown},
		{name: "throttling after the effect started", err: apiErr("ThrottlingException", smithy.FaultClient), effectStarted: true, wantClass: deadletter.ClassAmbiguous, wantReason: deadletter.ReasonEffectUnknown, wantCode: "ThrottlingException"},
		{name: "plain error after the effect started", err: base, effectStarted: true, wantClass: deadletter.ClassAmbiguous, wantReason: deadletter.ReasonEffectUnknown},
		{name: "poison after the effect started stays poison", err: Poison(deadletter.ReasonSchemaInvalid, base), effectStarted: true, wantClass: deadletter.ClassPoison, wantReason: deadletter.ReasonSchemaInvalid},
		{name: "policy after the effect started stays policy", err: PolicyLimit(base), effectStarted: true, wantClass: deadletter.ClassPolicy, wantReason: deadletter.ReasonPolicyLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := classify(tt.err, tt.effectStarted, nil)
			assert.Equal(t, tt.wantClass, got.Class(), "class")
			assert.Equal(t, tt.wantReason, got.Reason, "reason")
			assert.Equal(t, tt.wantCode, got.Code, "code")
			assert.Equal(t, tt.wantReason.Class(), got.Class())
			if !tt.effectStarted {
				assert.Equal(t, got, Classify(tt.err), "Classify is classify without an effect")
			}
		})
	}
}

func TestOutcomeIsAndUnwrap(t *testing.T) {
	t.Parallel()
	cause := errors.New("503 from upstream")
	tests := []struct {
		name      string
		err       error
		target    error            // the sentinel it must match
		notClass  error            // a sentinel it must not match
		wantClass deadletter.Class // Outcome.Class
		wantText  string           // the error text, stamped in dlq_meta: its words stay as they were
	}{
		{name: "transient", err: Transient(cause), target: ErrTransient, notClass: ErrPoison, wantClass: deadletter.ClassTransient, wantText: "transient: 503 from upstream"},
		{name: "wrapped poison", err: fmt.Errorf("a: %w", Poison(deadletter.ReasonJSONInvalid, cause)), target: ErrPoison, notClass: ErrTransient, wantClass: deadletter.ClassPoison, wantText: "a: poison: 503 from upstream"},
		{name: "security", err: Security(deadletter.ReasonSignatureInvalid, cause), target: ErrSecurity, notClass: ErrPoison, wantClass: deadletter.ClassSecurity, wantText: "security: 503 from upstream"},
		{name: "effect unknown", err: EffectUnknown(cause), target: ErrEffectUnknown, notClass: ErrTransient, wantClass: deadletter.ClassAmbiguous, wantText: "effect_unknown: 503 from upstream"},
		{name: "auth", err: AuthConfig(cause), target: ErrAuthConfig, notClass: ErrDependencyOpen, wantClass: deadletter.ClassAuthorization, wantText: "auth_config: 503 from upstream"},
		{name: "dependency", err: DependencyOpen(cause), target: ErrDependencyOpen, notClass: ErrAuthConfig, wantClass: deadletter.ClassDependency, wantText: "dependency_open: 503 from upstream"},
		{name: "policy", err: PolicyLimit(cause), target: ErrPolicyLimit, notClass: ErrEffectUnknown, wantClass: deadletter.ClassPolicy, wantText: "policy_limit: 503 from upstream"},
		{name: "wrong reason", err: Poison(deadletter.ReasonPolicyLimit, cause), notClass: ErrPoison, wantClass: deadletter.ClassUnknown, wantText: "unclassified: batch.Poison called with non-poison reason policy_limit\n503 from upstream"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.target != nil {
				assert.ErrorIs(t, tt.err, tt.target)
			}
			assert.NotErrorIs(t, tt.err, tt.notClass)
			assert.ErrorIs(t, tt.err, cause, "Unwrap reaches the cause")
			assert.Equal(t, tt.wantText, tt.err.Error())
			o, ok := errors.AsType[*Outcome](tt.err)
			require.True(t, ok)
			assert.Equal(t, tt.wantClass, o.Class())
			assert.Equal(t, tt.wantClass, o.Reason().Class(), "the reason names the class")
		})
	}
}

// errQuota is a dependency's own error type, which only the caller knows.
type errQuota struct{ tenant string }

func (e *errQuota) Error() string { return "quota exceeded for " + e.tenant }

// ownClassify is a caller's classification: its quota error is transient,
// its refusal is a policy limit, anything else is left to the built-in rules.
func ownClassify(err error) (deadletter.Reason, bool) {
	if _, ok := errors.AsType[*errQuota](err); ok {
		return deadletter.ReasonBudgetExhausted, true
	}
	if errors.Is(err, errRefused) {
		return deadletter.ReasonPolicyLimit, true
	}
	if errors.Is(err, errBadReason) {
		return deadletter.ReasonRedriveLoop, true // not the worker's to write
	}
	if errors.Is(err, errClassifyPanics) {
		panic("classifier bug")
	}
	return "", false
}

var (
	errRefused        = errors.New("model refused the plan")
	errBadReason      = errors.New("classified with the ledger's reason")
	errClassifyPanics = errors.New("the classifier panics on this one")
)

func TestClassifyHook(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		err           error
		effectStarted bool
		wantReason    deadletter.Reason // the reason it is dead-lettered with
		wantCode      string
	}{
		{name: "bare own error", err: &errQuota{tenant: "t1"}, wantReason: deadletter.ReasonBudgetExhausted},
		{name: "wrapped own error", err: fmt.Errorf("tool: %w", &errQuota{tenant: "t1"}), wantReason: deadletter.ReasonBudgetExhausted},
		{name: "own sentinel, wrapped twice", err: fmt.Errorf("a: %w", fmt.Errorf("b: %w", errRefused)), wantReason: deadletter.ReasonPolicyLimit},
		{name: "own error wrapping an API error keeps its code", err: fmt.Errorf("%w: %w", errRefused, apiErr("ThrottlingException", smithy.FaultClient)), wantReason: deadletter.ReasonPolicyLimit, wantCode: "ThrottlingException"},
		{name: "the hook beats a validation error", err: errors.Join(errRefused, &agenttask.ValidationError{Reason: deadletter.ReasonJSONInvalid}), wantReason: deadletter.ReasonPolicyLimit},
		{name: "the hook beats a deadline", err: errors.Join(context.DeadlineExceeded, &errQuota{}), wantReason: deadletter.ReasonBudgetExhausted},
		{name: "a typed outcome beats the hook", err: Poison(deadletter.ReasonSchemaInvalid, errRefused), wantReason: deadletter.ReasonSchemaInvalid},
		{name: "unknown to the hook: built-in rules", err: apiErr("AccessDenied", smithy.FaultClient), wantReason: deadletter.ReasonAuthConfig, wantCode: "AccessDenied"},
		{name: "unknown to the hook: unclassified", err: errors.New("boom"), wantReason: deadletter.ReasonUnclassified},
		{name: "a reason the worker cannot write is unclassified", err: errBadReason, wantReason: deadletter.ReasonUnclassified, wantCode: "classify:redrive_loop"},
		{name: "a panicking hook is unclassified", err: errClassifyPanics, wantReason: deadletter.ReasonUnclassified, wantCode: "classify:panic"},
		{name: "transient by the hook after the effect started", err: &errQuota{}, effectStarted: true, wantReason: deadletter.ReasonEffectUnknown},
		{name: "policy by the hook after the effect started stays policy", err: errRefused, effectStarted: true, wantReason: deadletter.ReasonPolicyLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := classify(tt.err, tt.effectStarted, ownClassify)
			assert.Equal(t, tt.wantReason, got.Reason, "reason")
			assert.Equal(t, tt.wantCode, got.Code, "code")
		})
	}
}

// A hook's reason the worker cannot write is kept in the code, cut to 64
// bytes: never inside a rune, or the dead letter's error_code attribute
// would not be UTF-8.
func TestClassifyHookLongReasonCutOnARune(t *testing.T) {
	t.Parallel()
	long := deadletter.Reason(strings.Repeat("x", 63) + "é-and-more")
	c, ok := callClassify(func(error) (deadletter.Reason, bool) { return long, true }, errors.New("boom"))
	require.True(t, ok)
	assert.Equal(t, deadletter.ReasonUnclassified, c.Reason)
	assert.Equal(t, "classify:"+strings.Repeat("x", 63), c.Code)
	assert.True(t, utf8.ValidString(c.Code), "%q", c.Code)
}

func TestBackoffSchedule(t *testing.T) {
	t.Parallel()
	b := Backoff{Base: 2e9, Max: 120e9}
	// The ceilings written in the package doc, in seconds.
	want := []int64{2, 4, 8, 16, 32, 64, 120, 120}
	for i, w := range want {
		receive := i + 1
		assert.Equal(t, w, int64(b.Ceiling(receive).Seconds()), "ceiling after receive %d", receive)
		top := b.delaySeconds(receive, func(n int64) int64 { return n - 1 })
		assert.Equal(t, w, int64(top), "largest draw after receive %d", receive)
		bottom := b.delaySeconds(receive, func(int64) int64 { return 0 })
		assert.Zero(t, bottom, "smallest draw after receive %d", receive)
	}
}

// TestOutcomeConstructorsOneType: every outcome constructor returns a
// *Outcome (the table's field type says so at compile time), never nil;
// wrapped, each still matches its class's sentinel and its cause with
// errors.Is, and errors.As finds its reason.
func TestOutcomeConstructorsOneType(t *testing.T) {
	t.Parallel()
	cause := errors.New("the cause")
	tests := []struct {
		name     string
		o        *Outcome
		sentinel error
		reason   deadletter.Reason
	}{
		{"Transient", Transient(cause), ErrTransient, deadletter.ReasonBudgetExhausted},
		{"AuthConfig", AuthConfig(cause), ErrAuthConfig, deadletter.ReasonAuthConfig},
		{"DependencyOpen", DependencyOpen(cause), ErrDependencyOpen, deadletter.ReasonDependencyOpen},
		{"Poison", Poison(deadletter.ReasonToolUnknown, cause), ErrPoison, deadletter.ReasonToolUnknown},
		{"Security", Security(deadletter.ReasonGuardrailReject, cause), ErrSecurity, deadletter.ReasonGuardrailReject},
		{"EffectUnknown", EffectUnknown(cause), ErrEffectUnknown, deadletter.ReasonEffectUnknown},
		{"PolicyLimit", PolicyLimit(cause), ErrPolicyLimit, deadletter.ReasonPolicyLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.NotNil(t, tt.o)
			var err error = tt.o
			wrapped := fmt.Errorf("handler: %w", err)
			assert.ErrorIs(t, wrapped, tt.sentinel)
			assert.ErrorIs(t, wrapped, cause)
			var o *Outcome
			require.ErrorAs(t, wrapped, &o)
			assert.Equal(t, tt.reason, o.Reason())
			assert.Equal(t, tt.reason.Class(), o.Class())
		})
	}
}
