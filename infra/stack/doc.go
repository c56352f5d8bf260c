// Package stack is the CDK-in-Go side of agentdlq: the constructs that put a
// pipeline definition (pipelines.json, read with pipeline.Load) into an AWS
// account, and the stack that wires them. infra/main.go only reads the CDK
// context and calls New.
//
// One stack holds the shared parts and one Pipeline construct per entry of the
// definition file:
//
//   - Shared: the idempotency ledger (DynamoDB, on demand, TTL on expires_at,
//     point-in-time recovery, KMS encryption), the eval dataset bucket (block
//     public access, TLS only, SSE, versioning, lifecycle, access logs to a
//     log bucket) and the KMS key of the alarm topics.
//   - Pipeline (one per hot queue): the hot queue (standard or FIFO) and its own
//     DLQ (same type, 14 days, RedriveAllowPolicy byQueue naming only its
//     source), SSE and TLS-only queue policies, a DLQ policy that denies the
//     message-move-task calls, DeleteMessage and PurgeQueue to everyone but the
//     pipeline's redrive role; the worker Lambda (provided.al2023, arm64) with
//     its SQS event source (ReportBatchItemFailures) and a least-privilege role;
//     the redrive role, assumable only by the pipeline's owner; an encrypted,
//     TLS-only alarm topic, the alarms of the pipeline and its dashboard.
//   - Triage: one read-only triage Lambda per stack, run on an EventBridge
//     schedule per pipeline and on every DLQ alarm.
//
// Every construct validates its props before it creates anything and returns a
// clear error; no physical name is hard-coded (the hot queue's name is
// generated from the construct path, because its DLQ's RedriveAllowPolicy must
// name it without a reference cycle). The names that tie the Lambdas, the CLI
// and this app together (environment, tags, metrics) are pinned in
// docs/wiring.md.
package stack
