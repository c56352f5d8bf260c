package batch

import (
	"context"
	"errors"
	"net"
	"strings"

	"github.com/aws/smithy-go"

	"github.com/agentdlq/agentdlq/events/agenttask"
	"github.com/agentdlq/agentdlq/events/deadletter"
)

// Classification is what Classify decides about an error.
type Classification struct {
	Kind Kind
	// Reason is the dead-letter reason: the outcome's own for poison,
	// security, effect_unknown, policy_limit and unclassified; the reason of
	// a spent budget (budget_exhausted, auth_config, dependency_open) for the
	// retryable kinds.
	Reason deadletter.Reason
	// Code is the error code that decided it, when there is one: the AWS
	// error code, "DeadlineExceeded", "Canceled", "Timeout", or the
	// validation field ("field:args").
	Code string
}

// Class returns the failure class of the reason.
func (c Classification) Class() deadletter.Class { return c.Reason.Class() }

// Classify decides what an error does to a message. It is the one switch
// with an explicit precedence; the first rule that matches wins:
//
//  1. a typed outcome (Transient, Poison, Security, EffectUnknown,
//     AuthConfig, DependencyOpen, PolicyLimit), bare or wrapped;
//  2. an *agenttask.ValidationError: poison with its reason;
//  3. context.DeadlineExceeded, context.Canceled or a net.Error timeout:
//     transient (effect_unknown once a mutating call started, see below);
//  4. a smithy.APIError, by ErrorCode and ErrorFault: throttling codes and
//     server faults (5xx) are transient; AccessDenied, ExpiredToken,
//     invalid or unrecognised credentials and KMS* codes are auth_config;
//  5. anything else: unclassified (never assumed retryable).
//
// The processor applies one more rule that Classify cannot see: once a
// handler called Record.StartEffect, any failure that is not poison,
// security or policy_limit becomes effect_unknown — the effect may have
// happened and the ledger holds no receipt. A panic is classified as
// unclassified (effect_unknown after StartEffect).
func Classify(err error) Classification { return classify(err, false) }

func classify(err error, effectStarted bool) Classification {
	c := classifyBare(err)
	if effectStarted {
		switch c.Kind {
		case KindTransient, KindAuthConfig, KindDependencyOpen, KindUnclassified:
			c.Kind, c.Reason = KindEffectUnknown, deadletter.ReasonEffectUnknown
		}
	}
	return c
}

func classifyBare(err error) Classification {
	// errors.AsType, not errors.As: a target passed by pointer escapes, and
	// each call cost an allocation on every failed record.
	if o, ok := errors.AsType[*Outcome](err); ok {
		c := Classification{Kind: o.kind, Reason: o.reason}
		if api, ok := errors.AsType[smithy.APIError](o.err); ok {
			c.Code = api.ErrorCode()
		}
		return c
	}
	if ve, ok := agenttask.AsValidationError(err); ok {
		c := Classification{Kind: KindPoison, Reason: ve.Reason}
		if ve.Field != "" {
			c.Code = "field:" + ve.Field
		}
		if ve.Reason.Class() != deadletter.ClassPoison {
			c.Kind, c.Reason = KindUnclassified, deadletter.ReasonUnclassified
		}
		return c
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return Classification{Kind: KindTransient, Reason: deadletter.ReasonBudgetExhausted, Code: "DeadlineExceeded"}
	case errors.Is(err, context.Canceled):
		return Classification{Kind: KindTransient, Reason: deadletter.ReasonBudgetExhausted, Code: "Canceled"}
	}
	if api, ok := errors.AsType[smithy.APIError](err); ok {
		code := api.ErrorCode()
		switch {
		case throttlingCodes[code] || transientCodes[code] || api.ErrorFault() == smithy.FaultServer:
			return Classification{Kind: KindTransient, Reason: deadletter.ReasonBudgetExhausted, Code: code}
		case authCodes[code] || strings.HasPrefix(code, "KMS") || strings.HasPrefix(code, "Kms"):
			return Classification{Kind: KindAuthConfig, Reason: deadletter.ReasonAuthConfig, Code: code}
		}
		return Classification{Kind: KindUnclassified, Reason: deadletter.ReasonUnclassified, Code: code}
	}
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		return Classification{Kind: KindTransient, Reason: deadletter.ReasonBudgetExhausted, Code: "Timeout"}
	}
	return Classification{Kind: KindUnclassified, Reason: deadletter.ReasonUnclassified}
}

// throttlingCodes are the AWS error codes of throttling (the SDK's retryer
// list, aws/retry.DefaultThrottleErrorCodes, plus a few service spellings).
var throttlingCodes = map[string]bool{
	"Throttling":                             true,
	"ThrottlingException":                    true,
	"ThrottledException":                     true,
	"RequestThrottledException":              true,
	"TooManyRequestsException":               true,
	"ProvisionedThroughputExceededException": true,
	"TransactionInProgressException":         true,
	"RequestLimitExceeded":                   true,
	"BandwidthLimitExceeded":                 true,
	"LimitExceededException":                 true,
	"RequestThrottled":                       true,
	"SlowDown":                               true,
	"PriorRequestNotComplete":                true,
	"EC2ThrottledException":                  true,
	"KMSThrottlingException":                 true, // checked before the KMS* auth rule
}

// transientCodes are server-side or timeout codes that some services send
// with a client fault.
var transientCodes = map[string]bool{
	"InternalError":               true,
	"InternalFailure":             true,
	"InternalServerError":         true,
	"InternalServiceError":        true,
	"ServiceUnavailable":          true,
	"ServiceUnavailableException": true,
	"RequestTimeout":              true,
	"RequestTimeoutException":     true,
}

// authCodes are credential and permission failures.
var authCodes = map[string]bool{
	"AccessDenied":                       true,
	"AccessDeniedException":              true,
	"UnauthorizedOperation":              true,
	"UnauthorizedException":              true,
	"ExpiredToken":                       true,
	"ExpiredTokenException":              true,
	"InvalidClientTokenId":               true,
	"UnrecognizedClientException":        true,
	"InvalidAccessKeyId":                 true,
	"SignatureDoesNotMatch":              true,
	"InvalidSignatureException":          true,
	"MissingAuthenticationToken":         true,
	"IncompleteSignature":                true,
	"AuthFailure":                        true,
	"NotAuthorized":                      true,
	"AccessDeniedForDependencyException": true,
}
