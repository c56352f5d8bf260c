// Package redrive moves dead letters back to their pipeline's hot queue, and
// only there: gated, audited and rate-limited, for the pipeline's named
// owner, one class of cause at a time.
//
// New builds a Redriver from a Config (the pipeline and its queues, an SQS
// client, the idempotency ledger — no redrive without it, ErrNoLedger — an
// audit store, and STS in AWS), applying defaults, then validating. New
// also decides, from the clients themselves, whether the caller identity
// check runs: it is skipped only when every client that says where it runs
// (an SDK client's Options().BaseEndpoint, the ledger's DynamoDB through
// ledger.Dynamo.API) is on a loopback address — the local emulators, where
// there is no IAM. No Config field turns it off. Locality is that decision,
// for a caller that needs it before it has the rest of a Config.
//
// One method per action, each with a request struct:
//
//   - Plan: each group of the DLQ, whether it may be redriven and why, and
//     its next steps (redrivetype.Step: data the CLI renders as a command line and the
//     console as a form), marked with the owner's past decisions.
//   - Select: the redrive SQS does not have. It receives from the DLQ, tags
//     each letter as triage does, sends the chosen ones' original body and
//     attributes back (dlq_* removed, folded attributes and claim checks
//     restored) and deletes each only after its send succeeded; the others
//     stay hidden until the pass ends. A canary moves a few first and waits
//     for the worker's outcome. A dry run moves nothing.
//   - Start, Status, Cancel: a native message move task of the whole DLQ,
//     refused while it holds a group that may not be redriven.
//   - Reject: records that a group is never redriven (an audit entry).
//   - Reconcile: records what an effect_unknown key's call did; Select then
//     moves the keys reconciled as no effect, and never a confirmed one.
//   - Verify: runs Config.Catalog's read-only verifiers (agenttask.Tool.Verify)
//     over the effect_unknown keys and proposes each outcome, or reconciles
//     the definite ones with the verifier's evidence.
//   - Pause: the worker's event source mapping off (the kill switch) or on.
//
// Every action passes the gate first (Who.Owner must be the pipeline's
// owner and agree with the DLQ's agentdlq:owner tag, Who.Why is required,
// the rate is 1..500; in AWS the caller must be the pipeline's redrive role,
// named by the DLQ's agentdlq:redrive-role tag) and leaves an audit.Entry (package redrive/audit),
// refusals included.
//
// # Outcomes
//
// Libraries return data; faces render it. The data an action returns and a
// caller only reads (the plan, the results, the refusal codes) is in
// package redrive/redrivetype. A refusal is a *Refusal
// (errors.Is ErrRefused): a redrivetype.Code (the package lists them), the request Field
// at fault by its Go name, a Reason in words, and Next steps; nothing
// moved. A command that saw only part of the DLQ returns a *PartialError
// (errors.Is triage.ErrScanPartial) with when to retry; what it did with what it
// saw stands. A canary that failed is ErrCanaryFailed.
//
// # What may be redriven
//
// Decide is the policy, from the reason taxonomy (events/deadletter):
//
//	redrivable     reasons                                   what it takes (Ack)
//	yes            budget_exhausted, dependency_open         nothing more; a canary first
//	after_fix      json_invalid, schema_invalid, tool_unknown,
//	               tool_version_unsupported, auth_config,
//	               unclassified                              FixDeployed (the deployed fix)
//	after_review   receive_limit                             Reviewed (what the review found)
//	never_blindly  effect_unknown                            per key: Reconcile; Select only
//	no             signature_invalid, guardrail_reject,
//	               idempotency_key_reused, policy_limit,
//	               redrive_loop                              Overrides[reason] (a justification)
//
// Repair takes only a reason whose policy says a patch of its args may
// repair it (deadletter.Reason.Patchable); a reason never redriven as it is
// but patchable (policy_limit) is patched, or rejected.
//
// Select never deletes before a confirmed send: a crash leaves the letter
// in the DLQ, and the resend is absorbed by the FIFO deduplication id or
// the worker's idempotency ledger. docs/redrive.md has the detail.
package redrive
