package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/agenttask"
	"github.com/agentdlq/agentdlq/pipeline"
)

func TestEntryMessageGroup(t *testing.T) {
	t.Parallel()
	off := false
	task := agenttask.Task{TaskID: "t-1", RunID: "run-1", Tenant: "acme", IdempotencyKey: "k", Tool: "crm.lookup",
		ToolVersion: "1.0.0", SchemaVersion: 1, TraceID: "trace-1", CreatedAt: "2026-12-07T04:00:00Z", Args: json.RawMessage(`{"q":"x"}`)}
	tests := []struct {
		name             string
		pl               pipeline.Pipeline
		tenant           string
		wantGroup, dedup string
	}{
		{"standard queue: the tenant (fair queue)", pipeline.Pipeline{}, "acme", "acme", ""},
		{"standard queue, fair_queue_tenant off: none", pipeline.Pipeline{FairQueueTenant: &off}, "acme", "", ""},
		{"standard queue, a tenant no MessageGroupId can be: none", pipeline.Pipeline{}, "acme corp", "", ""},
		{"FIFO queue: the run, deduplicated by task", pipeline.Pipeline{FIFO: true}, "acme", "run-1", "t-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tk := task
			tk.Tenant = tt.tenant
			e, err := Entry(&tt.pl, "0", tk)
			require.NoError(t, err)
			assert.Equal(t, tt.wantGroup, aws.ToString(e.MessageGroupId))
			assert.Equal(t, tt.dedup, aws.ToString(e.MessageDeduplicationId))
			back, err := agenttask.DecodeTask([]byte(aws.ToString(e.MessageBody)), catalog)
			require.NoError(t, err, "the body is the task")
			assert.Equal(t, tt.tenant, back.Tenant)
		})
	}
}

type batchRecorder struct {
	requests [][]types.SendMessageBatchRequestEntry
}

func (b *batchRecorder) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	b.requests = append(b.requests, in.Entries)
	out := &sqs.SendMessageBatchOutput{}
	for _, e := range in.Entries {
		out.Successful = append(out.Successful, types.SendMessageBatchResultEntry{Id: e.Id})
	}
	return out, nil
}

func TestEnqueueTenTasksARequest(t *testing.T) {
	t.Parallel()
	tasks := make([]agenttask.Task, 23)
	for i := range tasks {
		tasks[i] = agenttask.Task{TaskID: "t", RunID: "r", Tenant: []string{"acme", "globex"}[i%2], Tool: "crm.lookup",
			ToolVersion: "1.0.0", SchemaVersion: 1, Args: json.RawMessage(`{}`)}
	}
	rec := &batchRecorder{}
	require.NoError(t, Enqueue(context.Background(), rec, "https://sqs/q", &pipeline.Pipeline{}, tasks))
	require.Len(t, rec.requests, 3)
	assert.Len(t, rec.requests[2], 3)
	assert.Equal(t, "globex", aws.ToString(rec.requests[1][1].MessageGroupId), "task 11's tenant")
}
