package workload_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/local/workload"
)

func sized(sizes ...int) []workload.Task {
	out := make([]workload.Task, len(sizes))
	for i, n := range sizes {
		out[i] = workload.Task{Body: strings.Repeat("x", n), Line: i + 1}
	}
	return out
}

// Batches keeps every request within SQS's limits: ten entries, 1 MiB of
// bodies; a body larger than a request may be is a request of its own.
func TestBatches(t *testing.T) {
	t.Parallel()
	const mib = workload.MaxBatchBytes
	tests := []struct {
		name  string
		sizes []int
		want  [][2]int
	}{
		{name: "ten a request", sizes: make([]int, 23), want: [][2]int{{0, 10}, {10, 20}, {20, 23}}},
		{name: "300 kB bodies: three a request", sizes: []int{300_000, 300_000, 300_000, 300_000, 300_000, 300_000, 300_000},
			want: [][2]int{{0, 3}, {3, 6}, {6, 7}}},
		{name: "exactly 1 MiB fits", sizes: []int{mib / 2, mib / 2, 1}, want: [][2]int{{0, 2}, {2, 3}}},
		{name: "one too large alone", sizes: []int{10, mib + 1, 10}, want: [][2]int{{0, 1}, {1, 2}, {2, 3}}},
		{name: "none", sizes: nil, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tasks := sized(tt.sizes...)
			got := workload.Batches(tasks, 0)
			assert.Equal(t, tt.want, got)
			for _, b := range got {
				total := 0
				for _, task := range tasks[b[0]:b[1]] {
					total += len(task.Body)
				}
				assert.LessOrEqual(t, b[1]-b[0], workload.MaxBatchEntries)
				assert.True(t, total <= mib || b[1]-b[0] == 1, "%v: %d bytes", b, total)
			}
		})
	}
}

// refusing is an SQS that refuses, as SQS does, a request over the limits,
// and records what it accepted.
type refusing struct {
	mu   sync.Mutex
	sent []string
}

func (r *refusing) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	total := 0
	for _, e := range in.Entries {
		total += len(aws.ToString(e.MessageBody))
	}
	if len(in.Entries) > workload.MaxBatchEntries || total > workload.MaxBatchBytes {
		return nil, errors.New("BatchRequestTooLong")
	}
	out := &sqs.SendMessageBatchOutput{}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range in.Entries {
		r.sent = append(r.sent, aws.ToString(e.MessageBody))
		out.Successful = append(out.Successful, types.SendMessageBatchResultEntry{Id: e.Id, MessageId: aws.String("m-" + aws.ToString(e.Id))})
	}
	return out, nil
}

// A send that fails part-way says how much went out and where a rerun
// resumes; with one sender nothing after that point was sent.
func TestSendStopsAndSaysWhereToResume(t *testing.T) {
	t.Parallel()
	sizes := make([]int, 26)
	for i := range sizes {
		sizes[i] = 200_000
	}
	sizes[13] = workload.MaxBatchBytes + 1
	tasks := sized(sizes...)
	api := &refusing{}
	sent, err := workload.Send(context.Background(), api, "q", false, tasks, 1)
	var se *workload.SendError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, 13, se.Resume, "every task before the too-large one was sent")
	assert.Equal(t, 14, tasks[se.Resume].Line)
	assert.Equal(t, 13, se.Sent)
	assert.Zero(t, se.SentAfter, "one sender stops at the failure")
	assert.Equal(t, 26, se.Total)
	assert.Equal(t, 13, len(sent))
	assert.Equal(t, 13, len(api.sent))
	assert.Contains(t, err.Error(), "sent 13 of 26 messages")

	// Within the limits, all of it.
	tasks[13].Body = "small"
	sent, err = workload.Send(context.Background(), &refusing{}, "q", false, tasks, 4)
	require.NoError(t, err)
	assert.Equal(t, 26, len(sent))
}
