package batch

import (
	"context"
	"errors"
	"net"
	"strings"
	"time"

	"github.com/aws/smithy-go"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/internal/textutil"
)

// Classification is what Classify decides about an error.
type Classification struct {
	// Reason is the dead-letter reason, which names the failure class (see
	// Class): the outcome's own for poison, security, effect_unknown,
	// policy_limit and unclassified; the reason of a spent budget
	// (budget_exhausted, auth_config, dependency_open) for the retryable
	// classes.
	Reason deadletter.Reason
	// Code is the error code that decided it, when there is one: the AWS
	// error code, "DeadlineExceeded", "Canceled", "Timeout", or a
	// ReasonError's code (agenttask's "field:args").
	Code string
	// RetryAfter is the provider's delay a retryable outcome carries
	// (Outcome.After), 0 without one.
	RetryAfter time.Duration
}

// Class returns the failure class of the reason, which decides what the
// message undergoes (deadletter.Class.Retryable: retried inside the budget,
// or dead-lettered at once).
func (c Classification) Class() deadletter.Class { return c.Reason.Class() }

// ClassifyFunc is a caller's own error classification (Config.Classify). It
// returns the reason an error is dead-lettered with, and true, for the
// errors it knows; false leaves the error to the built-in rules. The reason
// names what the failure does to the message: budget_exhausted retries it
// as transient, auth_config and dependency_open retry it too, any other
// reason the worker writes dead-letters it at once. A reason the worker
// cannot write (unknown, receive_limit, redrive_loop) makes the failure
// unclassified. It is called on failed records only, and must be safe for
// concurrent use when Config.Concurrency > 1.
type ClassifyFunc func(err error) (reason deadletter.Reason, ok bool)

// Classify decides what an error does to a message. It is the one switch
// with an explicit precedence; the first rule that matches wins:
//
//  1. a typed outcome (Transient, Poison, Security, EffectUnknown,
//     AuthConfig, DependencyOpen, PolicyLimit), bare or wrapped;
//  2. the caller's Config.Classify, when it knows the error (the processor
//     only: Classify itself has no Config);
//  3. a ReasonError (agenttask.ValidationError, say): the reason it names
//     (unclassified when the worker cannot write that reason), its
//     ErrorCode as the code;
//  4. context.DeadlineExceeded, context.Canceled or a net.Error timeout:
//     transient (effect_unknown once a mutating call started, see below);
//  5. a smithy.APIError, by ErrorCode and ErrorFault: throttling codes and
//     server faults (5xx) are transient; AccessDenied, ExpiredToken,
//     invalid or unrecognised credentials and KMS* codes are auth_config;
//  6. anything else: unclassified (never assumed retryable).
//
// The processor applies one more rule that Classify cannot see: once a
// handler called Record.StartEffect, any failure that is not poison,
// security or policy_limit becomes effect_unknown — the effect may have
// happened and the ledger holds no receipt. A panic is classified as
// unclassified (effect_unknown after StartEffect).
func Classify(err error) Classification { return classify(err, false, nil) }

func classify(err error, effectStarted bool, own ClassifyFunc) Classification {
	c := classifyBare(err, own)
	if effectStarted {
		switch c.Class() {
		case deadletter.ClassTransient, deadletter.ClassAuthorization, deadletter.ClassDependency, deadletter.ClassUnknown:
			c.Reason = deadletter.ReasonEffectUnknown
		}
	}
	return c
}

func classifyBare(err error, own ClassifyFunc) Classification {
	// errors.AsType, not errors.As: a target passed by pointer escapes, and
	// each call cost an allocation on every failed record.
	if o, ok := errors.AsType[*Outcome](err); ok {
		return Classification{Reason: o.reason, Code: apiCode(o.err), RetryAfter: o.after}
	}
	if own != nil {
		if c, ok := callClassify(own, err); ok {
			return c
		}
	}
	if r, ok := errors.AsType[ReasonError](err); ok {
		c := Classification{Reason: r.DeadLetterReason(), Code: errorCode(err)}
		if !workerReason(c.Reason) {
			c.Reason = deadletter.ReasonUnclassified
		}
		return c
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return Classification{Reason: deadletter.ReasonBudgetExhausted, Code: "DeadlineExceeded"}
	case errors.Is(err, context.Canceled):
		return Classification{Reason: deadletter.ReasonBudgetExhausted, Code: "Canceled"}
	}
	if api, ok := errors.AsType[smithy.APIError](err); ok {
		code := api.ErrorCode()
		switch {
		case throttlingCodes[code] || transientCodes[code] || api.ErrorFault() == smithy.FaultServer:
			return Classification{Reason: deadletter.ReasonBudgetExhausted, Code: code}
		case authCodes[code] || strings.HasPrefix(code, "KMS") || strings.HasPrefix(code, "Kms"):
			return Classification{Reason: deadletter.ReasonAuthConfig, Code: code}
		}
		return Classification{Reason: deadletter.ReasonUnclassified, Code: code}
	}
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		return Classification{Reason: deadletter.ReasonBudgetExhausted, Code: "Timeout"}
	}
	return Classification{Reason: deadletter.ReasonUnclassified}
}

// ReasonError is an error that names its own dead-letter reason, as a
// payload's validation error does (agenttask.ValidationError: json_invalid,
// schema_invalid, ...). ErrorCode, when the error has it, is the dead
// letter's error code. See Classify for where it stands among the rules.
type ReasonError interface {
	error
	DeadLetterReason() deadletter.Reason
}

// errorCoder is an error with an error code: smithy.APIError, or a
// ReasonError's own.
type errorCoder interface {
	error
	ErrorCode() string
}

// errorCode is the error code of the first error in err's chain that has
// one, or "".
func errorCode(err error) string {
	if e, ok := errors.AsType[errorCoder](err); ok {
		return e.ErrorCode()
	}
	return ""
}

// apiCode is the AWS error code in err's chain, or "".
func apiCode(err error) string {
	if api, ok := errors.AsType[smithy.APIError](err); ok {
		return api.ErrorCode()
	}
	return ""
}

// callClassify asks a caller's ClassifyFunc. A reason the worker cannot
// write is unclassified with the code "classify:<reason>"; a panic in the
// function is unclassified with the code "classify:panic" (that record's
// failure, never the batch's).
func callClassify(own ClassifyFunc, err error) (c Classification, ok bool) {
	defer func() {
		if recover() != nil {
			c, ok = Classification{Reason: deadletter.ReasonUnclassified, Code: "classify:panic"}, true
		}
	}()
	r, ok := own(err)
	switch {
	case !ok:
		return Classification{}, false
	case !workerReason(r):
		return Classification{Reason: deadletter.ReasonUnclassified, Code: "classify:" + textutil.Truncate(string(r), 64)}, true
	}
	return Classification{Reason: r, Code: apiCode(err)}, true
}

// workerReason reports whether the worker may dead-letter with r: a known
// reason that neither triage infers (receive_limit) nor the ledger decides
// (redrive_loop).
func workerReason(r deadletter.Reason) bool {
	info, ok := r.Info()
	return ok && !info.Inferred && info.Class != deadletter.ClassLedger
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
