// Package topology finds and creates the queues of a pipeline: its hot queue
// and the DLQ that the hot queue's redrive policy points at.
//
// In AWS the CDK app creates the queues and CloudFormation names them, so
// tools find them by the pipeline's tags (pipeline.TagPipeline, TagRole) or by
// the URLs the CDK app passes to the Lambdas. Locally the names are ours to
// choose (pipeline.HotQueueName, DLQName) and Create builds the same topology
// from the same pipeline definition that deploys: the same maxReceiveCount,
// retentions, visibility timeout, redrive allow policy and tags.
//
// The attribute sets are computed by pure functions (HotAttributes,
// DLQAttributes) so that what the local topology holds is testable without an
// emulator; ResolveWith and Create take small interfaces naming only the SQS calls
// they make.
package topology
