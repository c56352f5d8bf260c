// Package events is the folder of agentdlq's message contracts and the
// sample SQS events that exercise them. It holds no code of its own: the
// contracts are two packages, each named for what it is.
//
//   - events/agenttask: the agent task v1 message body — the JSON Schema
//     (schema/agent-task-v1.schema.json, embedded as agenttask.TaskSchema),
//     the Go type, its single-pass decoder and the sample tool catalog. A
//     team whose tasks are not agent tasks does not need it.
//   - events/deadletter: what every dead letter carries, whatever the task —
//     the reason taxonomy (Reason, Class, NextAction, Redrivable), the
//     dlq_reason/dlq_meta codec with SQS's ten-attribute limit handled, and
//     the redaction applied to every error text that leaves a worker.
//   - events/gen: the generator of testdata/ and docs/reasons.md.
//
// # Sample events and the fault conventions
//
// testdata/ holds Lambda SQS events (aws-lambda-go's events.SQSEvent shape),
// one file a scenario, named sqs-<scenario>.json, and expected.json: the
// outcome a correct worker gives every record under maxReceiveCount 4 — ok
// (acknowledged), retry (a batch item failure) or dead_letter with its
// reason. The generator beside them, events/gen, writes all of them from one
// table; a test fails when a committed file drifts from it.
//
// The sample tools are deterministic; args.fault, an object, drives their
// failures. This is the contract between the fixtures and the sample worker
// (functions/sampleworker):
//
//   - {"retryable":true,"status":503|429,"error":"..."}: a transient
//     failure. With "until_receive":N it fails while ApproximateReceiveCount
//     < N and succeeds from receive N on. Inside the budget it is retried
//     (batch item failure, optional visibility backoff); on receive
//     ApproximateReceiveCount >= maxReceiveCount the worker dead-letters it
//     itself as budget_exhausted, with its attempt history.
//   - {"kind":"timeout_after_effect"}: a timeout after the tool call
//     started. For a tool that mutates the outside world (email.send,
//     file.write) it is effect_unknown, dead-lettered at once; for a
//     read-only tool it is a transient timeout (as above).
//   - {"kind":"auth","code":"AccessDenied"} (or ExpiredToken, ...): an
//     authorization or configuration failure, retried inside the budget (a
//     fix may land): retry at receive < maxReceiveCount, dead_letter
//     auth_config at maxReceiveCount or later.
//   - {"kind":"dependency_open","dependency":"search-api"}: a dependency's
//     circuit breaker is open; fails fast, same budget behaviour, reason
//     dependency_open.
//   - {"kind":"rate_limited","retry_after_seconds":S}: a 429 with the
//     provider's Retry-After S (default 1; "until_receive":N lets it
//     through from receive N): retried after S, hidden for S (counted) or,
//     where the pipeline's retry_after_requeues allows it, requeued with
//     that delay (not counted); budget_exhausted when the counted budget
//     is spent.
//   - {"kind":"policy_limit"}, {"kind":"signature_invalid"},
//     {"kind":"guardrail_reject"}: dead-lettered at once with that reason.
//   - {"kind":"panic"} (the tool panics) and {"kind":"error","error":"..."}
//     (an error nobody classified): unclassified, dead-lettered at once,
//     never assumed retryable.
//
// The sample worker also reads other producers' spellings of them
// (go doc ./functions/sampleworker).
//
// A poison body (any ValidationError) is dead-lettered at once with its
// reason, whatever the receive count; a task whose idempotency key is done
// is acknowledged as a no-op (sqs-duplicate-key); the FIFO rules are
// functions/batch's. A file that is not an SQS event is refused and nothing
// is acknowledged (expected.json: "event_error": true); a record whose
// ApproximateReceiveCount is missing or not a number is processed and never
// taken for its last receive (the redrive policy has the last word).
package events
