// Package stack is agentdlq's CDK-in-Go construct library and the stack that
// this repository deploys: the constructs that put a pipeline definition
// (pipelines.json, read with pipeline.Load) into an AWS account.
//
// # Two ways in
//
// A platform team with a CDK app of its own adds agentdlq to a stack it
// already has, with one call and a Props struct:
//
//	parts, err := stack.Add(myStack, "AgentDLQ", &stack.Props{
//		Pipelines:         file.Pipelines, // one pipeline, or several
//		WorkerAssetDir:    "dist/worker",
//		TriageAssetDir:    "dist/triage",
//		RedrivePrincipals: map[string]string{"orders": "arn:aws:iam::111122223333:role/OrdersOncall"},
//	})
//
// examples/cdk is such an app, in a module of its own; docs/deploying.md says
// how it builds the Lambda bootstraps without make. New creates a stack of
// its own with the same parts (infra/main.go calls it through FromContext,
// which reads the CDK context). The parts can also be composed one by one:
// NewShared, NewPipeline per hot queue, NewTriage. Each validates its props
// before it creates anything and returns an error, never a panic; each
// problem of the props is a *PropsError naming the field at fault. None
// depends on context that only New sets, and none hard-codes a physical name.
//
// It is the one package of the module that imports the CDK
// (github.com/aws/aws-cdk-go/awscdk/v2, cdk-nag-go): a module that uses the
// libraries but not this package does not build the CDK.
//
// # What deploys
//
//   - Shared: the idempotency ledger (DynamoDB, on demand, TTL on expires_at,
//     point-in-time recovery, encryption), the eval bucket (block public
//     access, TLS only, SSE-KMS, versioning, lifecycle, access logs, ACLs
//     disabled) and the KMS keys of the alarm topics and of the data.
//   - Pipeline (one per hot queue): the hot queue (standard or FIFO,
//     MaximumMessageSize max_message_bytes) and its own DLQ (same type, 14
//     days, the dead-letter reserve larger, RedriveAllowPolicy naming only its
//     source), SSE and TLS-only queue policies; a DLQ policy that leaves
//     moving and deleting dead letters to the redrive role and changing the
//     queue to the deployer; the worker Lambda (provided.al2023, arm64,
//     GOMEMLIMIT at 90% of its memory, GOMAXPROCS at the vCPUs it pays
//     for, its DLQ's size in
//     AGENTDLQ_DLQ_MAX_MESSAGE_BYTES) with its SQS event source
//     (ReportBatchItemFailures) and a role with exactly the calls its code
//     makes; the redrive role, trusted by one named principal only; an
//     encrypted, TLS-only alarm topic, the alarms and a dashboard.
//   - Triage: the read-only triage Lambda, run on an EventBridge schedule per
//     pipeline and on every DLQ alarm.
//
// # IAM
//
// Each role is granted the SDK calls of the narrow client interfaces its code
// is written against, mapped to IAM actions, and nothing else; the stack tests
// derive that list from the interfaces and fail on any action beyond it. The
// redrive role's ledger writes are limited with dynamodb:Attributes
// (RedriveLedgerAttributes, ReconcileLedgerAttributes). No IAM role carries
// the agentdlq:owner tag. The names that tie the Lambdas, the CLI and this app
// together (environment, tags, metrics) are pinned in docs/wiring.md.
package stack
