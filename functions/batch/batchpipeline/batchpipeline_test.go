package batchpipeline_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentdlq/agentdlq/functions/batch"
	"github.com/agentdlq/agentdlq/functions/batch/batchpipeline"
	"github.com/agentdlq/agentdlq/pipeline"
)

func TestConfig(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		p    pipeline.Pipeline
		want batch.Config
	}{
		{
			name: "standard, defaults",
			p:    pipeline.Pipeline{Name: "agent-tasks", Owner: "o", MaxReceiveCount: 4},
			want: batch.Config{MaxReceiveCount: 4, Pipeline: "agent-tasks", FIFOPoison: batch.FIFOPoisonDeadLetter,
				Backoff: batch.Backoff{Base: 2 * time.Second, Max: 120 * time.Second}, RedriveLoopAfter: 2},
		},
		{
			name: "standard, requeues after a Retry-After",
			p:    pipeline.Pipeline{Name: "agent-tasks", Owner: "o", MaxReceiveCount: 4, RetryAfterRequeues: 3},
			want: batch.Config{MaxReceiveCount: 4, Pipeline: "agent-tasks", FIFOPoison: batch.FIFOPoisonDeadLetter,
				Backoff: batch.Backoff{Base: 2 * time.Second, Max: 120 * time.Second}, RedriveLoopAfter: 2, RetryAfterRequeues: 3},
		},
		{
			name: "FIFO holding its groups, backoff off",
			p: pipeline.Pipeline{Name: "orders", Owner: "o", MaxReceiveCount: 3, FIFO: true, FIFOPoison: pipeline.FIFOPoisonHoldGroup,
				Backoff: pipeline.Backoff{Disabled: true}, RedriveLoopAfter: 5},
			want: batch.Config{MaxReceiveCount: 3, Pipeline: "orders", FIFO: true, FIFOPoison: batch.FIFOPoisonHoldGroup,
				Backoff: batch.Backoff{Disabled: true}, RedriveLoopAfter: 5},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := tt.p
			p.ApplyDefaults()
			got := batchpipeline.Config(&p)
			tt.want.Lease = p.VisibilityTimeout()
			// Backoff from the definition's defaults, whatever they are.
			if !p.Backoff.Disabled {
				tt.want.Backoff = batch.Backoff{Base: time.Duration(p.Backoff.BaseSeconds) * time.Second, Max: time.Duration(p.Backoff.MaxSeconds) * time.Second}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Config (-want +got):\n%s", diff)
			}
		})
	}
}
