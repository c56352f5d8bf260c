// Package redrive moves dead letters back to their pipeline's hot queue, and
// only there: a gated, audited, rate-limited runbook command for the
// pipeline's named owner, one class of cause at a time.
//
// A Redriver is built by New from a Config, which New fills with defaults
// and then validates: the pipeline and its queues, an SQS client typed at
// compile time (API: an *sqs.Client), an STS client outside the local
// emulators, an audit store, and the idempotency ledger — there is no
// redrive without a ledger (ErrNoLedger), since the ledger counts every
// redrive, which is how a key that keeps coming back becomes redrive_loop.
// New's errors are refusals (ErrConfig, code bad_input): nothing moved.
//
// Plan, Start and Reject scan the DLQ read-only themselves (triage.Run, or
// Config.Scan) after the gate's checks that need no AWS call, so a wrong
// owner or a bad rate is refused, and audited, before any scan. A caller
// that fails before it has a Redriver (bad flags, an unknown pipeline, a
// Config New refused) audits that refusal with Auditor.Refuse; OpenAuditor
// opens the store an --audit flag names. The CLI only reads flags, calls
// one of these, and prints.
//
// It has two ways to move messages:
//
//   - Start: a native SQS message move task (StartMessageMoveTask) from the
//     DLQ to the pipeline's own hot queue, with DestinationArn always set
//     explicitly (the worker's own dead letters have no broker-recorded
//     source) and checked against the queues' RedrivePolicy and the DLQ's
//     RedriveAllowPolicy. It moves everything, so it is refused while the DLQ
//     holds a group that may not be redriven, unless the owner overrides
//     that reason with a justification. Status and Cancel sit beside it.
//   - Select: the redrive SQS does not have. It receives from the DLQ, tags
//     each message (reason, fingerprint), keeps only the chosen ones, sends
//     the original body and attributes (dlq_* removed, folded attributes
//     restored) to the hot queue and deletes the dead letter only after the
//     send is confirmed. In a standard DLQ everything else stays hidden
//     until the pass ends and is released then (ChangeMessageVisibilityBatch
//     0): released at once, it would come straight back and crowd out the
//     letters behind it. In a FIFO DLQ it is released at once (held, it
//     would block its message group).
//
// # What may be redriven
//
// Policy (policy.go) is the pure decision, from the reason taxonomy in
// package events/deadletter:
//
//	redrivable     reasons                                   what it takes
//	yes            budget_exhausted, dependency_open         nothing more
//	after_fix      json_invalid, schema_invalid, tool_unknown,
//	               tool_version_unsupported, auth_config,
//	               unclassified                              --fix-deployed REF (the deployed fix)
//	after_review   receive_limit                             --reviewed NOTE (what the review found)
//	never_blindly  effect_unknown                            per key: Reconcile (see below); select only
//	no             signature_invalid, guardrail_reject,
//	               policy_limit, redrive_loop                --override R=JUSTIFICATION (and a reason to)
//
// # Effect unknown: reconcile, then select
//
// Reconcile records, after the gate and audited as ActionReconcile, what the
// owner found in the external system about one effect_unknown key
// (ledger.Ledger.Reconcile): effect confirmed, with its receipt (the key is
// done: never run again), or no effect (its effect_started mark cleared).
// Select then moves, without an --override, the effect_unknown dead letters
// whose key was reconciled as no effect (ReconciledOnly) and counts the
// others it leaves; a key whose effect was confirmed is never moved, even
// with --override effect_unknown=JUSTIFICATION (which otherwise moves every
// chosen key). Start, which cannot leave any letter behind, refuses
// effect_unknown altogether.
//
// # Decisions
//
// Plan reads the audit back (AuditReader: FileStore, S3Store with ReadAPI)
// and annotates the groups already rejected and, for effect_unknown, the keys
// already reconciled (Plan.Annotate, Decisions). RejectGroups warns when a
// group was rejected before and when the policy would let its reason be
// redriven (RejectWarnings); the warnings refuse nothing and are audited.
//
// # The gate
//
// Gate (gate.go) refuses, before anything moves (its words follow
// GateInput.Action: a redrive, a rejection, a reconciliation): an owner that
// is not the pipeline's declared owner (a string compare: --owner names who
// decides, it authenticates nobody); a DLQ whose agentdlq:owner tag disagrees; a
// missing or blank --why; a rate outside 1..500. In AWS it also requires the
// caller (sts GetCallerIdentity, asked once per Redriver) to be an
// assumed-role session of the pipeline's redrive role, named by the DLQ's
// agentdlq:redrive-role tag that the CDK app sets. New decides, from the
// clients it is given (an SDK client's Options().BaseEndpoint, the
// ledger's through ledger.Dynamo.API; no Config field), when the identity
// check is skipped, with a logged note: only when every client that says
// where it runs is on a loopback address (the local emulators);
// when the check must run, an STS endpoint that is not AWS's own is refused
// (CodeSTSEndpoint). No flag turns the gate off. The gate runs in the
// caller's process: what holds regardless is IAM (the redrive role's trust
// policy and the DLQ's queue policy; see RUNBOOK.md).
//
// # Safe to interrupt
//
// Select never deletes before a confirmed send. A crash between the send and
// the delete leaves the dead letter in the DLQ, where it becomes visible again
// after the receive's visibility timeout; a rerun sends it again. For FIFO hot
// queues the resend carries the same deduplication id (derived from the
// original message id), so SQS drops it within its 5-minute window; beyond
// that, and for standard queues, the worker's idempotency ledger makes the
// second delivery a no-op once the first one is done.
//
// # FIFO pipelines
//
// A redriven message goes back to its original message group (from dlq_meta,
// else the dead letter's own group) with a deduplication id derived from the
// original message id. A FIFO DLQ shows only the head of each message group
// while it is held, so a selective pass sees the first dead letters of each
// group; the result says when a pass saw fewer dead letters than the DLQ
// held, and a rerun goes on. Moving some dead letters of a group and not
// others changes their order: that is the owner's call, made per reason.
//
// # Throughput
//
// Select moves up to Workers (default 8) dead letters of one receive at a
// time, all paced by one token-bucket limiter at Rate messages a second
// (golang.org/x/time/rate, burst 1). After the first failure it starts no
// more moves and releases what it did not start.
//
// # Audit
//
// Every decision — plan shown, start, select, canary result, status, cancel,
// reject, pause, resume, and every refusal — is appended as one AuditEntry
// (JSON) to the pipeline's audit store (a local JSONL file, or one S3 object
// per entry) and logged. Each entry carries its Caller: the STS caller ARN
// and account in AWS, the OS user locally or before STS was asked. Its Action, its AuditOutcome and a refusal's Code are typed
// string constants, each listed by AllActions, AllAuditOutcomes and
// AllCodes; a canary message's outcome is CanaryOutcome.
package redrive
