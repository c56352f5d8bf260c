// Package batchpipeline builds a batch.Config from a pipeline definition,
// so that the processor runs with the settings the CDK app deploys: the
// batch processor itself knows no pipeline (nor any payload).
//
//	cfg := batchpipeline.Config(p) // maxReceiveCount, FIFO, backoff, lease, ...
//	cfg.Handler, cfg.SQS, cfg.DLQURL = handle, sqsClient, dlqURL
//	proc, err := batch.New(cfg)
package batchpipeline

import (
	"time"

	"github.com/agentdlq/agentdlq/functions/batch"
	"github.com/agentdlq/agentdlq/pipeline"
)

// Config returns a batch.Config with the settings of the pipeline
// definition p filled in: MaxReceiveCount, Pipeline, FIFO, FIFOPoison,
// Backoff, RedriveLoopAfter, RetryAfterRequeues and Lease (the visibility
// timeout). The caller
// adds Handler, SQS, DLQURL and the rest.
func Config(p *pipeline.Pipeline) batch.Config {
	return batch.Config{
		MaxReceiveCount:    p.MaxReceiveCount,
		Pipeline:           p.Name,
		FIFO:               p.FIFO,
		FIFOPoison:         batch.FIFOPoison(p.FIFOPoison),
		Backoff:            batch.Backoff{Base: time.Duration(p.Backoff.BaseSeconds) * time.Second, Max: time.Duration(p.Backoff.MaxSeconds) * time.Second, Disabled: p.Backoff.Disabled},
		RedriveLoopAfter:   p.RedriveLoopAfter,
		RetryAfterRequeues: p.RetryAfterRequeues,
		Lease:              p.VisibilityTimeout(),
	}
}
