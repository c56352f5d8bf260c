// Package pipeline reads the pipeline definition file (pipelines.json): one
// entry per hot queue, with its owner, queue type, maxReceiveCount,
// retentions, worker settings and alarm thresholds. The CDK app and the local
// runner both read it, so that what runs locally is what deploys.
package pipeline
