package workload_test

import (
	"context"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/local/workload"
	"github.com/agentdlq/agentdlq/pipeline"
)

// recordingSQS keeps the entries of every SendMessageBatch and accepts them.
type recordingSQS struct {
	mu      sync.Mutex
	entries map[string]types.SendMessageBatchRequestEntry // by body
}

func (r *recordingSQS) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := &sqs.SendMessageBatchOutput{}
	for _, e := range in.Entries {
		r.entries[aws.ToString(e.MessageBody)] = e
		out.Successful = append(out.Successful, types.SendMessageBatchResultEntry{Id: e.Id, MessageId: aws.String("m-" + aws.ToString(e.Id))})
	}
	return out, nil
}

func TestSendSetsTheTenantAsMessageGroupIdOnAFairQueue(t *testing.T) {
	t.Parallel()
	acme := `{"task_id":"t1","run_id":"r1","tenant":"acme"}`
	globex := `{"task_id":"t2","run_id":"r2","tenant":"globex"}`
	spaced := `{"task_id":"t3","run_id":"r3","tenant":"acme corp"}`
	none := `{"task_id":"t4","run_id":"r4"}`
	notJSON := `not json: x`
	bodies := []string{acme, globex, spaced, none, notJSON}
	off := false
	tests := []struct {
		name string
		p    pipeline.Pipeline
		want map[string]string // body → MessageGroupId ("" none)
	}{
		{"standard queue, default: the tenant", pipeline.Pipeline{Name: "agent-tasks"},
			map[string]string{acme: "acme", globex: "globex", spaced: "", none: "", notJSON: ""}},
		{"standard queue, fair_queue_tenant false: none", pipeline.Pipeline{Name: "agent-tasks", FairQueueTenant: &off},
			map[string]string{acme: "", globex: "", spaced: "", none: "", notJSON: ""}},
		{"FIFO queue: the run, never the tenant", pipeline.Pipeline{Name: "agent-steps", FIFO: true},
			map[string]string{acme: "r1", globex: "r2", spaced: "r3", none: "r4", notJSON: "external"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tasks := make([]workload.Task, len(bodies))
			for i, b := range bodies {
				tasks[i] = workload.FromBody(b, i)
			}
			api := &recordingSQS{entries: map[string]types.SendMessageBatchRequestEntry{}}
			sent, err := workload.Send(context.Background(), api, "q", tt.p.FIFO, workload.FairQueue(&tt.p, tasks), 2)
			require.NoError(t, err)
			require.Len(t, sent, len(bodies))
			for body, want := range tt.want {
				assert.Equal(t, want, aws.ToString(api.entries[body].MessageGroupId), "%s", body)
			}
			assert.Empty(t, tasks[0].TenantGroup, "FairQueue leaves its input alone")
		})
	}
}
