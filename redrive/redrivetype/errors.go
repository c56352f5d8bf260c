package redrivetype

// Code says what was refused: stable for tests, the audit log and the
// callers that branch on it (redrive.RefusalCode).
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
	// CodeOwnerMissing: no owner was given (redrive.Who.Owner is empty).
	CodeOwnerMissing Code = "owner_missing"
	// CodeOwner: the actor is not the pipeline's declared owner.
	CodeOwner Code = "owner_mismatch"
	// CodeOwnerTag: the DLQ's agentdlq:owner tag disagrees with the pipeline.
	CodeOwnerTag Code = "owner_tag_mismatch"
	// CodeIdentity: in AWS, the caller is not the pipeline's redrive role
	// (or its identity could not be checked).
	CodeIdentity Code = "identity_not_redrive_role"
	// CodeSTSEndpoint: the caller check must run (not every endpoint is
	// local) but the STS endpoint is not AWS's own (see redrive.Locality).
	CodeSTSEndpoint Code = "sts_endpoint_untrusted"
	// CodeForbidden: policy forbids a chosen reason without an
	// acknowledgement (redrive.Ack: FixDeployed, Reviewed, Overrides).
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
	// CodeScanPartial: the command saw only part of the DLQ (a *redrivetype.PartialError,
	// triage.ErrScanPartial), the code its callers report it under. It is not a
	// refusal: redrive.RefusalCode never returns it.
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
