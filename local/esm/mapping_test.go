package esm_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/local/esm"
	"github.com/agentdlq/agentdlq/pipeline"
)

// fakeSQS serves scripted receives: each ReceiveMessage pops up to
// MaxNumberOfMessages from the pending messages; deletes are recorded.
type fakeSQS struct {
	mu          sync.Mutex
	pending     []types.Message
	inFlight    map[string]bool // receipt handles received and not deleted
	deleted     []string        // message ids, in delete order
	receives    int
	failDelete  map[string]bool // message ids whose delete entry fails
	deleteErr   error           // the whole DeleteMessageBatch call fails
	receiveErr  error
	maxReceived int // largest MaxNumberOfMessages asked for
}

var _ esm.API = (*fakeSQS)(nil)

func newFake(n int) *fakeSQS {
	f := &fakeSQS{inFlight: map[string]bool{}, failDelete: map[string]bool{}}
	for i := range n {
		id := "m" + strconv.Itoa(i)
		f.pending = append(f.pending, types.Message{MessageId: aws.String(id), ReceiptHandle: aws.String("rh-" + id), Body: aws.String("body-" + id),
			Attributes: map[string]string{"ApproximateReceiveCount": "1"}})
	}
	return f
}

func (f *fakeSQS) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	f.mu.Lock()
	f.receives++
	f.maxReceived = max(f.maxReceived, int(in.MaxNumberOfMessages))
	if f.receiveErr != nil {
		f.mu.Unlock()
		return nil, f.receiveErr
	}
	n := min(int(in.MaxNumberOfMessages), len(f.pending))
	out := slices.Clone(f.pending[:n])
	f.pending = f.pending[n:]
	for _, m := range out {
		f.inFlight[aws.ToString(m.ReceiptHandle)] = true
	}
	f.mu.Unlock()
	if n == 0 {
		// An empty long poll: wait a little, as the service would.
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return &sqs.ReceiveMessageOutput{Messages: out}, nil
}

func (f *fakeSQS) DeleteMessageBatch(_ context.Context, in *sqs.DeleteMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.deleteErr != nil {
		return nil, f.deleteErr
	}
	out := &sqs.DeleteMessageBatchOutput{}
	for _, e := range in.Entries {
		id := aws.ToString(e.ReceiptHandle)[len("rh-"):]
		if f.failDelete[id] {
			out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String("ReceiptHandleIsInvalid"), SenderFault: true})
			continue
		}
		delete(f.inFlight, aws.ToString(e.ReceiptHandle))
		f.deleted = append(f.deleted, id)
		out.Successful = append(out.Successful, types.DeleteMessageBatchResultEntry{Id: e.Id})
	}
	return out, nil
}

func (f *fakeSQS) GetQueueAttributes(_ context.Context, _ *sqs.GetQueueAttributesInput, _ ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &sqs.GetQueueAttributesOutput{Attributes: map[string]string{
		"ApproximateNumberOfMessages":           strconv.Itoa(len(f.pending)),
		"ApproximateNumberOfMessagesNotVisible": "0", // the fake forgets failures: they are never redelivered
		"ApproximateNumberOfMessagesDelayed":    "0",
	}}, nil
}

func quiet() *slog.Logger { return slog.New(slog.NewJSONHandler(io.Discard, nil)) }

func baseConfig() esm.Config {
	return esm.Config{QueueURL: "u", QueueARN: "arn:q", BatchSize: 10, Pollers: 1, WaitTime: time.Second,
		UntilIdle: true, IdleTimeout: 3 * time.Second, Timeout: time.Second, Logger: quiet()}
}

// recorder is a handler that fails the records whose body is in fail, and
// records every batch it saw.
type recorder struct {
	mu      sync.Mutex
	batches [][]string
	fail    map[string]bool
	err     error
	panic   bool
	block   bool
}

func (r *recorder) handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var ids []string
	var resp events.SQSEventResponse
	for _, rec := range ev.Records {
		ids = append(ids, rec.MessageId)
		if r.fail[rec.MessageId] {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rec.MessageId})
		}
	}
	r.mu.Lock()
	r.batches = append(r.batches, ids)
	r.mu.Unlock()
	if r.panic {
		panic("tool crashed")
	}
	if r.block {
		<-ctx.Done()
	}
	return resp, r.err
}

func TestMappingOutcomes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		records     int
		rec         *recorder
		failDelete  []string
		deleteErr   error
		wantDeleted []string  // message ids deleted
		wantStats   esm.Stats // counts
	}{
		{
			name: "every record succeeds", records: 3, rec: &recorder{},
			wantDeleted: []string{"m0", "m1", "m2"},
			wantStats:   esm.Stats{Batches: 1, Received: 3, Deleted: 3},
		},
		{
			name: "item failures are left to the visibility timeout", records: 3, rec: &recorder{fail: map[string]bool{"m1": true}},
			wantDeleted: []string{"m0", "m2"},
			wantStats:   esm.Stats{Batches: 1, Received: 3, Deleted: 2, Failed: 1},
		},
		{
			name: "a handler error fails the whole batch", records: 3, rec: &recorder{err: errors.New("boom")},
			wantStats: esm.Stats{Batches: 1, Received: 3, Failed: 3, BatchErrors: 1},
		},
		{
			name: "a panic fails the whole batch", records: 2, rec: &recorder{panic: true},
			wantStats: esm.Stats{Batches: 1, Received: 2, Failed: 2, BatchErrors: 1},
		},
		{
			name: "the first record fails alone", records: 2, rec: &recorder{fail: map[string]bool{"m0": true}},
			wantDeleted: []string{"m1"},
			wantStats:   esm.Stats{Batches: 1, Received: 2, Deleted: 1, Failed: 1},
		},
		{
			name: "running past the timeout fails the whole batch", records: 2, rec: &recorder{block: true},
			wantStats: esm.Stats{Batches: 1, Received: 2, Failed: 2, BatchErrors: 1},
		},
		{
			name: "a failed delete entry is counted", records: 3, rec: &recorder{}, failDelete: []string{"m1"},
			wantDeleted: []string{"m0", "m2"},
			wantStats:   esm.Stats{Batches: 1, Received: 3, Deleted: 2, DeleteErrors: 1},
		},
		{
			name: "a failed delete call is counted", records: 2, rec: &recorder{}, deleteErr: errors.New("connection reset"),
			wantStats: esm.Stats{Batches: 1, Received: 2, DeleteErrors: 2},
		},
		{
			name: "25 records in batches of at most 10", records: 25, rec: &recorder{},
			wantDeleted: []string{"m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", "m9", "m10", "m11", "m12",
				"m13", "m14", "m15", "m16", "m17", "m18", "m19", "m20", "m21", "m22", "m23", "m24"},
			wantStats: esm.Stats{Batches: 3, Received: 25, Deleted: 25},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(tt.records)
			f.deleteErr = tt.deleteErr
			for _, id := range tt.failDelete {
				f.failDelete[id] = true
			}
			m, err := esm.New(f, tt.rec.handle, baseConfig())
			require.NoError(t, err)
			stats, err := m.Run(context.Background())
			require.NoError(t, err)
			assert.Equal(t, tt.wantStats, stats)
			assert.ElementsMatch(t, tt.wantDeleted, f.deleted)
			// Conservation: every received record was deleted, failed or lost its delete.
			assert.Equal(t, stats.Received, stats.Deleted+stats.Failed+stats.DeleteErrors)
			// Under the event source mapping's metric names.
			ec := stats.EventCounts()
			assert.Equal(t, esm.EventCounts{PolledEventCount: tt.wantStats.Received, InvokedEventCount: tt.wantStats.Received,
				FailedInvokeEventCount: tt.wantStats.Failed, DeletedEventCount: tt.wantStats.Deleted}, ec)
		})
	}
}

func TestMappingBadItemIdentifier(t *testing.T) {
	t.Parallel()
	f := newFake(2)
	h := func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
		return events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{{ItemIdentifier: "not-in-batch"}}}, nil
	}
	m, err := esm.New(f, h, baseConfig())
	require.NoError(t, err)
	stats, err := m.Run(context.Background())
	require.NoError(t, err)
	assert.Equal(t, esm.Stats{Batches: 1, Received: 2, Failed: 2, BatchErrors: 1}, stats)
	assert.Empty(t, f.deleted)
}

// With a batch window, records are gathered across receives up to BatchSize.
func TestMappingBatchWindowGathers(t *testing.T) {
	t.Parallel()
	f := newFake(23)
	rec := &recorder{}
	cfg := baseConfig()
	cfg.BatchSize, cfg.BatchWindow = 100, 300*time.Millisecond
	m, err := esm.New(f, rec.handle, cfg)
	require.NoError(t, err)
	stats, err := m.Run(context.Background())
	require.NoError(t, err)
	assert.Equal(t, int64(1), stats.Batches, "one invocation with everything gathered in the window")
	require.Len(t, rec.batches, 1)
	assert.Len(t, rec.batches[0], 23)
	assert.Equal(t, 10, f.maxReceived, "never more than SQS's 10 a receive")
}

// Concurrent pollers share the queue; every record is handled once.
func TestMappingConcurrentPollers(t *testing.T) {
	t.Parallel()
	f := newFake(200)
	rec := &recorder{}
	cfg := baseConfig()
	cfg.Pollers = 8
	m, err := esm.New(f, rec.handle, cfg)
	require.NoError(t, err)
	stats, err := m.Run(context.Background())
	require.NoError(t, err)
	assert.Equal(t, int64(200), stats.Deleted)
	seen := map[string]int{}
	for _, b := range rec.batches {
		for _, id := range b {
			seen[id]++
		}
	}
	assert.Len(t, seen, 200)
	for id, n := range seen {
		assert.Equal(t, 1, n, id)
	}
}

func TestMappingReceiveErrorsStopRun(t *testing.T) {
	t.Parallel()
	f := newFake(0)
	f.receiveErr = errors.New("connection refused")
	m, err := esm.New(f, (&recorder{}).handle, baseConfig())
	require.NoError(t, err)
	_, err = m.Run(context.Background())
	require.ErrorContains(t, err, "connection refused")
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		mutate  func(*esm.Config)
		wantErr string
	}{
		{name: "no queue", mutate: func(c *esm.Config) { c.QueueURL = "" }, wantErr: "QueueURL"},
		{name: "no arn", mutate: func(c *esm.Config) { c.QueueARN = "" }, wantErr: "QueueARN"},
		{name: "batch too big", mutate: func(c *esm.Config) { c.BatchSize = 10001 }, wantErr: "BatchSize"},
		{name: "wait too long", mutate: func(c *esm.Config) { c.WaitTime = 21 * time.Second }, wantErr: "WaitTime"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := baseConfig()
			tt.mutate(&cfg)
			_, err := esm.New(newFake(0), (&recorder{}).handle, cfg)
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
	_, err := esm.New(nil, nil, baseConfig())
	require.Error(t, err)
}

// FromPipeline gives the mapping what Lambda's event source gets from the
// pipeline definition.
func TestFromPipeline(t *testing.T) {
	t.Parallel()
	p := &pipeline.Pipeline{Name: "agent-tasks", Owner: "o", MaxReceiveCount: 4, BatchSize: 25, BatchWindowSeconds: 2, MaxConcurrency: 7, WorkerTimeoutSeconds: 9}
	p.ApplyDefaults()
	q := pipeline.Queues{HotURL: "u", HotARN: "arn:hot", DLQURL: "d", DLQARN: "arn:dlq"}
	got := esm.FromPipeline(p, q, "eu-west-1")
	assert.Equal(t, esm.Config{QueueURL: "u", QueueARN: "arn:hot", Region: "eu-west-1", BatchSize: 25,
		BatchWindow: 2 * time.Second, Pollers: 7, Timeout: 9 * time.Second}, got)
	// Provisioned mode: the minimum pollers' invocations, ten a poller.
	pp := &pipeline.Pipeline{Name: "agent-tasks", Owner: "o", MaxReceiveCount: 4, ProvisionedPollers: &pipeline.ProvisionedPollers{Minimum: 3, Maximum: 8}}
	pp.ApplyDefaults()
	require.NoError(t, pp.Validate())
	assert.Equal(t, 30, esm.FromPipeline(pp, q, "eu-west-1").Pollers)
}

// TestEventCountsNames: the local counts carry the names of the metrics
// the construct turns on (infra/stack ESM*EventCount), as JSON keys.
func TestEventCountsNames(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(esm.Stats{Received: 5, Failed: 2, Deleted: 3}.EventCounts())
	require.NoError(t, err)
	assert.JSONEq(t, `{"PolledEventCount":5,"FilteredOutEventCount":0,"InvokedEventCount":5,"FailedInvokeEventCount":2,"DroppedEventCount":0,"DeletedEventCount":3}`, string(b))
}

// heldReceive is a long poll the test answers: ReceiveMessage says it
// started, then waits for the messages to hand out, as SQS does when a
// message arrives during the wait.
type heldReceive struct {
	*fakeSQS
	started chan struct{}
	answer  chan []types.Message
}

func (h *heldReceive) ReceiveMessage(ctx context.Context, _ *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	select {
	case h.started <- struct{}{}:
	default:
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case msgs := <-h.answer:
		return &sqs.ReceiveMessageOutput{Messages: msgs}, nil
	}
}

// Stop lets the poller finish the long poll it is in and handle what the
// poll brought, where cancelling Run's context abandons it (and with it a
// message SQS hands out to the abandoned poll).
func TestMappingStopFinishesTheCurrentReceive(t *testing.T) {
	t.Parallel()
	h := &heldReceive{fakeSQS: newFake(0), started: make(chan struct{}, 1), answer: make(chan []types.Message)}
	rec := &recorder{}
	cfg := baseConfig()
	cfg.UntilIdle = false
	m, err := esm.New(h, rec.handle, cfg)
	require.NoError(t, err)
	done := make(chan esm.Stats, 1)
	go func() {
		st, _ := m.Run(context.Background())
		done <- st
	}()
	<-h.started
	m.Stop()
	h.answer <- []types.Message{{MessageId: aws.String("late"), ReceiptHandle: aws.String("rh-late"), Body: aws.String("b")}}
	st := <-done
	assert.Equal(t, int64(1), st.Received)
	assert.Equal(t, int64(1), st.Deleted, "the message the last receive brought is handled, not left in flight")
	assert.Equal(t, [][]string{{"late"}}, rec.batches)
}
