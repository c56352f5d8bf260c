package batch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/assert"

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
		wantKind      Kind              // what the message undergoes
		wantReason    deadletter.Reason // the reason it is dead-lettered with
		wantCode      string
	}{
		{name: "transient", err: Transient(base), wantKind: KindTransient, wantReason: deadletter.ReasonBudgetExhausted},
		{name: "poison", err: Poison(deadletter.ReasonSchemaInvalid, base), wantKind: KindPoison, wantReason: deadletter.ReasonSchemaInvalid},
		{name: "poison with a non-poison reason is unclassified", err: Poison(deadletter.ReasonBudgetExhausted, base), wantKind: KindUnclassified, wantReason: deadletter.ReasonUnclassified},
		{name: "security", err: Security(deadletter.ReasonGuardrailReject, base), wantKind: KindSecurity, wantReason: deadletter.ReasonGuardrailReject},
		{name: "security with a poison reason is unclassified", err: Security(deadletter.ReasonJSONInvalid, base), wantKind: KindUnclassified, wantReason: deadletter.ReasonUnclassified},
		{name: "effect unknown", err: EffectUnknown(base), wantKind: KindEffectUnknown, wantReason: deadletter.ReasonEffectUnknown},
		{name: "auth config", err: AuthConfig(base), wantKind: KindAuthConfig, wantReason: deadletter.ReasonAuthConfig},
		{name: "dependency open", err: DependencyOpen(base), wantKind: KindDependencyOpen, wantReason: deadletter.ReasonDependencyOpen},
		{name: "policy limit", err: PolicyLimit(base), wantKind: KindPolicyLimit, wantReason: deadletter.ReasonPolicyLimit},
		{name: "wrapped typed outcome", err: fmt.Errorf("tool: %w", PolicyLimit(base)), wantKind: KindPolicyLimit, wantReason: deadletter.ReasonPolicyLimit},
		{name: "typed outcome beats the API error it wraps", err: Poison(deadletter.ReasonToolUnknown, apiErr("ThrottlingException", smithy.FaultClient)), wantKind: KindPoison, wantReason: deadletter.ReasonToolUnknown, wantCode: "ThrottlingException"},
		{name: "typed outcome beats a deadline it wraps", err: PolicyLimit(context.DeadlineExceeded), wantKind: KindPolicyLimit, wantReason: deadletter.ReasonPolicyLimit},
		{name: "validation error", err: &agenttask.ValidationError{Reason: deadletter.ReasonToolVersionUnsupported, Field: "tool_version"}, wantKind: KindPoison, wantReason: deadletter.ReasonToolVersionUnsupported, wantCode: "field:tool_version"},
		{name: "wrapped validation error", err: fmt.Errorf("decode: %w", &agenttask.ValidationError{Reason: deadletter.ReasonJSONInvalid}), wantKind: KindPoison, wantReason: deadletter.ReasonJSONInvalid},
		{name: "deadline", err: context.DeadlineExceeded, wantKind: KindTransient, wantReason: deadletter.ReasonBudgetExhausted, wantCode: "DeadlineExceeded"},
		{name: "wrapped deadline beats the API error", err: fmt.Errorf("call: %w", errors.Join(context.DeadlineExceeded, apiErr("AccessDenied", smithy.FaultClient))), wantKind: KindTransient, wantReason: deadletter.ReasonBudgetExhausted, wantCode: "DeadlineExceeded"},
		{name: "canceled", err: fmt.Errorf("x: %w", context.Canceled), wantKind: KindTransient, wantReason: deadletter.ReasonBudgetExhausted, wantCode: "Canceled"},
		{name: "net timeout", err: &net.OpError{Op: "read", Err: timeoutErr{}}, wantKind: KindTransient, wantReason: deadletter.ReasonBudgetExhausted, wantCode: "Timeout"},
		{name: "throttling", err: apiErr("ThrottlingException", smithy.FaultClient), wantKind: KindTransient, wantReason: deadletter.ReasonBudgetExhausted, wantCode: "ThrottlingException"},
		{name: "wrapped throttling", err: opErr(apiErr("TooManyRequestsException", smithy.FaultClient)), wantKind: KindTransient, wantReason: deadletter.ReasonBudgetExhausted, wantCode: "TooManyRequestsException"},
		{name: "server fault", err: opErr(apiErr("SomethingBroke", smithy.FaultServer)), wantKind: KindTransient, wantReason: deadletter.ReasonBudgetExhausted, wantCode: "SomethingBroke"},
		{name: "service unavailable sent as unknown fault", err: apiErr("ServiceUnavailable", smithy.FaultUnknown), wantKind: KindTransient, wantReason: deadletter.ReasonBudgetExhausted, wantCode: "ServiceUnavailable"},
		{name: "access denied", err: apiErr("AccessDenied", smithy.FaultClient), wantKind: KindAuthConfig, wantReason: deadletter.ReasonAuthConfig, wantCode: "AccessDenied"},
		{name: "wrapped expired token", err: opErr(apiErr("ExpiredTokenException", smithy.FaultClient)), wantKind: KindAuthConfig, wantReason: deadletter.ReasonAuthConfig, wantCode: "ExpiredTokenException"},
		{name: "KMS denied", err: apiErr("KMSAccessDeniedException", smithy.FaultClient), wantKind: KindAuthConfig, wantReason: deadletter.ReasonAuthConfig, wantCode: "KMSAccessDeniedException"},
		{name: "KMS throttling is transient", err: apiErr("KMSThrottlingException", smithy.FaultClient), wantKind: KindTransient, wantReason: deadletter.ReasonBudgetExhausted, wantCode: "KMSThrottlingException"},
		{name: "unknown client error", err: opErr(apiErr("ValidationException", smithy.FaultClient)), wantKind: KindUnclassified, wantReason: deadletter.ReasonUnclassified, wantCode: "ValidationException"},
		{name: "plain error", err: base, wantKind: KindUnclassified, wantReason: deadletter.ReasonUnclassified},
		{name: "panic", err: &panicError{value: "nil map"}, wantKind: KindUnclassified, wantReason: deadletter.ReasonUnclassified},

		// Effect-aware: after StartEffect, what could have had its effect is effect_unknown.
		{name: "deadline after the effect started", err: context.DeadlineExceeded, effectStarted: true, wantKind: KindEffectUnknown, wantReason: deadletter.ReasonEffectUnknown, wantCode: "DeadlineExceeded"},
		{name: "transient after the effect started", err: Transient(base), effectStarted: true, wantKind: KindEffectUnknown, wantReason: deadletter.ReasonEffectUnknown},
		{name: "throttling after the effect started", err: apiErr("ThrottlingException", smithy.FaultClient), effectStarted: true, wantKind: KindEffectUnknown, wantReason: deadletter.ReasonEffectUnknown, wantCode: "ThrottlingException"},
		{name: "plain error after the effect started", err: base, effectStarted: true, wantKind: KindEffectUnknown, wantReason: deadletter.ReasonEffectUnknown},
		{name: "poison after the effect started stays poison", err: Poison(deadletter.ReasonSchemaInvalid, base), effectStarted: true, wantKind: KindPoison, wantReason: deadletter.ReasonSchemaInvalid},
		{name: "policy after the effect started stays policy", err: PolicyLimit(base), effectStarted: true, wantKind: KindPolicyLimit, wantReason: deadletter.ReasonPolicyLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := classify(tt.err, tt.effectStarted)
			assert.Equal(t, tt.wantKind, got.Kind, "kind")
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
		name    string
		err     error
		target  error // the sentinel it must match
		notKind error // a sentinel it must not match
	}{
		{name: "transient", err: Transient(cause), target: ErrTransient, notKind: ErrPoison},
		{name: "wrapped poison", err: fmt.Errorf("a: %w", Poison(deadletter.ReasonJSONInvalid, cause)), target: ErrPoison, notKind: ErrTransient},
		{name: "security", err: Security(deadletter.ReasonSignatureInvalid, cause), target: ErrSecurity, notKind: ErrPoison},
		{name: "effect unknown", err: EffectUnknown(cause), target: ErrEffectUnknown, notKind: ErrTransient},
		{name: "auth", err: AuthConfig(cause), target: ErrAuthConfig, notKind: ErrDependencyOpen},
		{name: "dependency", err: DependencyOpen(cause), target: ErrDependencyOpen, notKind: ErrAuthConfig},
		{name: "policy", err: PolicyLimit(cause), target: ErrPolicyLimit, notKind: ErrEffectUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.ErrorIs(t, tt.err, tt.target)
			assert.NotErrorIs(t, tt.err, tt.notKind)
			assert.ErrorIs(t, tt.err, cause, "Unwrap reaches the cause")
			assert.Contains(t, tt.err.Error(), "503 from upstream")
		})
	}
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
