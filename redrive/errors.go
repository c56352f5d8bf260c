package redrive

import (
	"errors"
	"fmt"
)

// Errors to test with errors.Is. A *Refusal matches ErrRefused; the CLI exits
// with code 2 on it.
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
	// CodeUnknownPipeline: the pipeline is not in the definition file.
	CodeUnknownPipeline Code = "unknown_pipeline"
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
	// acknowledgement (--fix-deployed, --reviewed, --override).
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
	// CodeScanPartial: the triage scan was partial, so a move task (which
	// moves everything) could move groups nobody saw.
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
)

// AllCodes lists every refusal code in the order above.
func AllCodes() []Code {
	return []Code{CodeBadInput, CodeUnknownPipeline, CodeUnknownReason, CodeUnknownGroup, CodeAmbiguousGroup, CodeRate, CodeWhy,
		CodeOwner, CodeOwnerTag, CodeIdentity, CodeSTSEndpoint, CodeForbidden, CodeDestination, CodeTaskActive, CodeNoTask,
		CodeDLQEmpty, CodeDLQMissing, CodeNothingSelected, CodeScanPartial, CodeNoMapping, CodeNotEffectUnknown, CodeReconciled}
}

// Refusal is a refused action: a code and a one-line reason. Nothing moved.
type Refusal struct {
	Code   Code
	Reason string
}

func (r *Refusal) Error() string { return "refused (" + string(r.Code) + "): " + r.Reason }

// Is makes errors.Is(err, ErrRefused) true for every refusal.
func (r *Refusal) Is(target error) bool { return target == ErrRefused }

func refuse(code Code, format string, args ...any) *Refusal {
	return &Refusal{Code: code, Reason: fmt.Sprintf(format, args...)}
}

// RefusalCode returns the code of the refusal in err's chain, or "".
func RefusalCode(err error) Code {
	var r *Refusal
	if errors.As(err, &r) {
		return r.Code
	}
	return ""
}
