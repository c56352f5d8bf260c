package redrive

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentdlq/agentdlq/triage"
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

// Code says what was refused: stable for tests, the audit log and the
// callers that branch on it (RefusalCode).
type Code string

// The refusal codes.
const (
	// CodeBadInput: a request or configuration that cannot be acted on (a
	// malformed flag, an override without a justification, no ledger).
	CodeBadInput Code = "bad_input"
	// CodeUnknownReason: no reason given, or one that is not in the taxonomy.
	CodeUnknownReason Code = "unknown_reason"
	// CodeUnknownGroup: no group of the reason has that fingerprint.
	CodeUnknownGroup Code = "unknown_fingerprint"
	// CodeAmbiguousGroup: a fingerprint prefix matches more than one group.
	CodeAmbiguousGroup Code = "ambiguous_fingerprint"
	// CodeRate: the rate is outside 1..500 messages a second.
	CodeRate Code = "rate_out_of_range"
	// CodeWhy: the why is missing or blank.
	CodeWhy Code = "why_missing"
	// CodeOwnerMissing: no owner was given (Who.Owner is empty).
	CodeOwnerMissing Code = "owner_missing"
	// CodeOwner: the actor is not the pipeline's declared owner.
	CodeOwner Code = "owner_mismatch"
	// CodeOwnerTag: the DLQ's agentdlq:owner tag disagrees with the pipeline.
	CodeOwnerTag Code = "owner_tag_mismatch"
	// CodeIdentity: in AWS, the caller is not the pipeline's redrive role
	// (or its identity could not be checked).
	CodeIdentity Code = "identity_not_redrive_role"
	// CodeSTSEndpoint: the caller check must run (not every endpoint is
	// local) but the STS endpoint is not AWS's own (see Locality).
	CodeSTSEndpoint Code = "sts_endpoint_untrusted"
	// CodeForbidden: policy forbids a chosen reason without an
	// acknowledgement (Ack.FixDeployed, Ack.Reviewed, Ack.Overrides).
	CodeForbidden Code = "reason_not_redrivable"
	// CodeDestination: the destination is not the pipeline's own hot queue,
	// or the queues' redrive policies do not pair them.
	CodeDestination Code = "destination_refused"
	// CodeTaskActive: a move task already runs on the DLQ.
	CodeTaskActive Code = "move_task_active"
	// CodeNoTask: no move task to cancel.
	CodeNoTask Code = "no_move_task"
	// CodeDLQEmpty: the DLQ holds nothing to redrive.
	CodeDLQEmpty Code = "dlq_empty"
	// CodeDLQMissing: the pipeline's queues do not exist.
	CodeDLQMissing Code = "dlq_missing"
	// CodeNothingSelected: the DLQ holds no dead letter of the chosen reasons.
	CodeNothingSelected Code = "nothing_selected"
	// CodeScanPartial: the command saw only part of the DLQ (a *PartialError,
	// triage.ErrScanPartial), the code its callers report it under. It is not a
	// refusal: RefusalCode never returns it.
	CodeScanPartial Code = "scan_partial"
	// CodeNoMapping: pause or resume found no event source mapping on the
	// hot queue, or more than one.
	CodeNoMapping Code = "no_event_source_mapping"
	// CodeNotEffectUnknown: reconcile of a key whose effect is not unknown
	// (no ledger entry, no mutating call started, done, or leased by a
	// delivery now).
	CodeNotEffectUnknown Code = "not_effect_unknown"
	// CodeReconciled: the key was reconciled with another outcome (or
	// receipt) already; a reconciliation is never changed.
	CodeReconciled Code = "already_reconciled"
	// CodeLetterNotFound: repair found no dead letter of that message id in
	// the DLQ, seen whole (already repaired, redriven, or never there).
	CodeLetterNotFound Code = "letter_not_found"
	// CodeRepairInvalid: the repaired task breaks the agent task contract,
	// or the dead letter holds no task args to patch.
	CodeRepairInvalid Code = "repair_invalid"
	// CodeNotSettled: repair of a mutating tool's task whose effect the
	// ledger does not settle as none (reconcile it as no effect first).
	CodeNotSettled Code = "effect_not_settled"
)

// allCodes lists every refusal code in the order above.
func allCodes() []Code {
	return []Code{CodeBadInput, CodeUnknownReason, CodeUnknownGroup, CodeAmbiguousGroup, CodeRate, CodeWhy,
		CodeOwnerMissing, CodeOwner, CodeOwnerTag, CodeIdentity, CodeSTSEndpoint, CodeForbidden, CodeDestination, CodeTaskActive, CodeNoTask,
		CodeDLQEmpty, CodeDLQMissing, CodeNothingSelected, CodeScanPartial, CodeNoMapping, CodeNotEffectUnknown, CodeReconciled,
		CodeLetterNotFound, CodeRepairInvalid, CodeNotSettled}
}

// Refusal is a refused action: a code, the request field at fault and a
// one-line reason. Nothing moved.
type Refusal struct {
	Code Code
	// Field is the request field at fault, by its Go name: "Owner", "Why",
	// "Rate", "Reasons", "Fingerprints", "Canary", "Limit", "Destination",
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
	Next []Step
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

func refuse(code Code, format string, args ...any) *Refusal {
	return &Refusal{Code: code, Reason: fmt.Sprintf(format, args...)}
}

// refuseField is a refusal of one request field; format follows its name.
func refuseField(code Code, field, format string, args ...any) *Refusal {
	return &Refusal{Code: code, Field: field, Reason: fmt.Sprintf(format, args...)}
}

// RefusalCode returns the code of the refusal in err's chain, or "".
func RefusalCode(err error) Code {
	var r *Refusal
	if errors.As(err, &r) {
		return r.Code
	}
	return ""
}

// PartialError is the outcome of a command that must see every dead letter
// (plan, select, start, reject) when its scan of the DLQ saw only part of
// it: letters held (in flight) by another receive, by a receive whose
// response was lost, or, in a FIFO DLQ, behind the head of their message
// group. What the command did with the letters it saw stands (its result
// says so); what it did not see is untouched. errors.Is(err,
// triage.ErrScanPartial) is true; its code is CodeScanPartial.
type PartialError struct {
	// Seen counts the distinct dead letters the scan saw; Depth is the
	// DLQ's approximate depth (visible and in flight) when it started, 0
	// when unknown.
	Seen, Depth int
	// Why is what the scan reported, when it said more than the counts.
	Why string
	// FIFO: the DLQ is a FIFO queue, which hands out the letters of a
	// message group behind the ones in flight only after those.
	FIFO bool
	// RetryAfter is how long a letter held by this command's own receives
	// stays hidden (its visibility timeout, or the DLQ's default when that
	// is longer): a rerun after it sees what this one missed. A letter
	// another reader holds comes back after that reader's timeout.
	RetryAfter time.Duration
}

func (e *PartialError) Error() string {
	var b []byte
	b = append(b, "partial scan: "...)
	switch {
	case e.Depth > 0:
		b = fmt.Appendf(b, "saw %d of about %d dead letters", e.Seen, e.Depth)
	default:
		b = fmt.Appendf(b, "saw %d dead letters", e.Seen)
	}
	switch {
	case e.Why != "":
		// The scan said why (triage's words): once, not twice.
		b = fmt.Appendf(b, " (%s)", e.Why)
	case e.FIFO:
		b = append(b, "; the others are held (in flight), or behind a held letter of their FIFO message group, until their visibility timeout lapses"...)
	default:
		b = append(b, "; the others are held (in flight) by a receive until their visibility timeout lapses"...)
	}
	if e.RetryAfter > 0 {
		b = fmt.Appendf(b, ": retry after %s (a reader that set a longer timeout holds them longer)", e.RetryAfter.Round(time.Second))
	} else {
		b = append(b, ": retry after their visibility timeout"...)
	}
	return string(b)
}

// Is makes errors.Is(err, triage.ErrScanPartial) true: not a refusal (the
// request was sound) and not an outage: the letters it missed are held (in
// flight) by a receive, and a rerun after their visibility timeout sees
// them (RetryAfter).
func (e *PartialError) Is(target error) bool { return target == triage.ErrScanPartial }
