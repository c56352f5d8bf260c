package redrive

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agentdlq/agentdlq/redrive/redrivetype"
)

// Errors to test with errors.Is. A *Refusal matches ErrRefused; the CLI exits
// with code 2 on it. A command that could not see every dead letter of the
// DLQ returns a *PartialError, which matches triage.ErrScanPartial (one
// sentinel for the fact, whichever package scanned).
var (
	// ErrRefused: the gate or the policy refused the action; nothing moved.
	ErrRefused = errors.New("redrive refused")
	// ErrUnsupported: the SQS endpoint does not implement message move tasks.
	ErrUnsupported = errors.New("endpoint does not support message move tasks")
	// ErrCanaryFailed: a canary message failed again (or its outcome stayed unknown).
	ErrCanaryFailed = errors.New("canary failed")
)

// allCodes lists every refusal code in the order above.
func allCodes() []redrivetype.Code {
	return []redrivetype.Code{redrivetype.CodeBadInput, redrivetype.CodeUnknownReason, redrivetype.CodeUnknownGroup, redrivetype.CodeAmbiguousGroup, redrivetype.CodeRate, redrivetype.CodeWhy,
		redrivetype.CodeOwnerMissing, redrivetype.CodeOwner, redrivetype.CodeOwnerTag, redrivetype.CodeIdentity, redrivetype.CodeSTSEndpoint, redrivetype.CodeForbidden, redrivetype.CodeDestination, redrivetype.CodeTaskActive, redrivetype.CodeNoTask,
		redrivetype.CodeDLQEmpty, redrivetype.CodeDLQMissing, redrivetype.CodeNothingSelected, redrivetype.CodeScanPartial, redrivetype.CodeNoMapping, redrivetype.CodeNotEffectUnknown, redrivetype.CodeReconciled,
		redrivetype.CodeLetterNotFound, redrivetype.CodeRepairInvalid, redrivetype.CodeNotSettled}
}

// Refusal is a refused action: a code, the request field at fault and a
// one-line reason. Nothing moved.
type Refusal struct {
	Code redrivetype.Code
	// Field is the request field at fault, by its Go name: "Owner", "Why",
	// "Rate", "Reasons", "Fingerprints", "Canary", "Limit", "PerTenant", "Destination",
	// "Ack.FixDeployed", "Ack.Reviewed", "Ack.Overrides", "Key", "Outcome",
	// "Receipt", "Filter", "MessageID", "Patch"; empty when the refusal is about the DLQ, its tags, the
	// caller or the policy rather than one input. A caller names it in its
	// own words (the CLI its flag, the console its form field).
	Field string
	// Reason says what is wrong and what to do, in words that follow the
	// field's name when Field is set ("is required: say why ...").
	Reason string
	// Next are the steps that would get past the refusal, when there are
	// some to suggest (a select with the acknowledgement the policy wants,
	// a reconciliation, a look at the plan).
	Next []redrivetype.Step
}

// Error is "refused (code): Field reason", or without a Field
// "refused (code): reason".
func (r *Refusal) Error() string {
	if r.Field != "" {
		return "refused (" + string(r.Code) + "): " + r.Field + " " + r.Reason
	}
	return "refused (" + string(r.Code) + "): " + r.Reason
}

// Is makes errors.Is(err, ErrRefused) true for every refusal.
func (r *Refusal) Is(target error) bool { return target == ErrRefused }

// Told is err's text with the refusal in its chain naming its field in the
// caller's words (names, as Config.FieldNames): "refused (owner_missing):
// --owner is required ..." where Error says "Owner is required ...". An
// error without a refusal, a refusal without a field, a nil names or a field
// names does not know keep their text.
func Told(err error, names func(field string) string) string {
	var rf *Refusal
	if names == nil || !errors.As(err, &rf) || rf.Field == "" {
		return err.Error()
	}
	n := names(rf.Field)
	if n == "" || n == rf.Field {
		return err.Error()
	}
	told := *rf
	told.Field = n
	return strings.Replace(err.Error(), rf.Error(), told.Error(), 1)
}

func refuse(code redrivetype.Code, format string, args ...any) *Refusal {
	return &Refusal{Code: code, Reason: fmt.Sprintf(format, args...)}
}

// refuseField is a refusal of one request field; format follows its name.
func refuseField(code redrivetype.Code, field, format string, args ...any) *Refusal {
	return &Refusal{Code: code, Field: field, Reason: fmt.Sprintf(format, args...)}
}

// RefusalCode returns the code of the refusal in err's chain, or "".
func RefusalCode(err error) redrivetype.Code {
	var r *Refusal
	if errors.As(err, &r) {
		return r.Code
	}
	return ""
}
