// Package pipeline reads the pipeline definition file (pipelines.json): one
// entry per hot queue, with its owner, queue type, maxReceiveCount,
// retentions, worker settings and alarm thresholds. The CDK app and the local
// runner both read it, so that what runs locally is what deploys.
//
// Parse takes exactly one JSON object (unknown fields and any text after it
// are refused) and reports every problem of every pipeline at once. The raw
// integers that become durations are bounded before the conversion
// (retention_hours and dlq_retention_hours 1..336, worker_timeout_seconds
// 1..900, visibility_timeout_seconds 0..43200, ...), so that an overflowing
// value is refused rather than wrapped into a plausible one; the owner must
// be a valid AWS tag value (it is stamped as the agentdlq:owner tag) with no
// spaces around it.
//
// max_message_bytes, the hot queue's MaximumMessageSize, stops
// deadletter.Reserve (16 KiB) short of SQS's 1 MiB: the DLQ takes that much more
// (DLQMaxMessageBytes), so that the dead letter of any message the hot queue
// accepts fits with its dlq_reason and dlq_meta.
package pipeline
