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

// Refusal codes: what was refused, stable for tests and the audit log.
const (
	CodeBadInput        = "bad_input"
	CodeUnknownPipeline = "unknown_pipeline"
	CodeUnknownReason   = "unknown_reason"
	CodeUnknownGroup    = "unknown_fingerprint"
	CodeAmbiguousGroup  = "ambiguous_fingerprint"
	CodeRate            = "rate_out_of_range"
	CodeWhy             = "why_missing"
	CodeOwner           = "owner_mismatch"
	CodeOwnerTag        = "owner_tag_mismatch"
	CodeIdentity        = "identity_not_redrive_role"
	CodeForbidden       = "reason_not_redrivable"
	CodeDestination     = "destination_refused"
	CodeTaskActive      = "move_task_active"
	CodeNoTask          = "no_move_task"
	CodeDLQEmpty        = "dlq_empty"
	CodeDLQMissing      = "dlq_missing"
	CodeNothingSelected = "nothing_selected"
	CodeScanPartial     = "scan_partial"
)

// Refusal is a refused action: a code and a one-line reason. Nothing moved.
type Refusal struct {
	Code   string
	Reason string
}

func (r *Refusal) Error() string { return "refused (" + r.Code + "): " + r.Reason }

// Is makes errors.Is(err, ErrRefused) true for every refusal.
func (r *Refusal) Is(target error) bool { return target == ErrRefused }

func refuse(code, format string, args ...any) *Refusal {
	return &Refusal{Code: code, Reason: fmt.Sprintf(format, args...)}
}

// RefusalCode returns the code of the refusal in err's chain, or "".
func RefusalCode(err error) string {
	var r *Refusal
	if errors.As(err, &r) {
		return r.Code
	}
	return ""
}
