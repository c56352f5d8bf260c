package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/functions/batch"
	"github.com/agentdlq/agentdlq/functions/sampleworker"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/local/workload"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive"
	"github.com/agentdlq/agentdlq/testkit/localtest"
	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/eval"
	"github.com/agentdlq/agentdlq/triage/store"
)

// Issue 21, part 1: a reused idempotency key. A producer sends a mutating
// task, then another task with the same key and other args. Must hold: the
// first runs once and is done; the second is dead-lettered at once as
// idempotency_key_reused (one handler attempt, the tool never called), its
// body byte for byte; the key's ledger entry is the first task's, untouched
// (done, its receipt, no dead-letter count); the first task sent again is
// still a no-op; triage lists the key and warns; a redrive is refused and
// changes nothing.
func TestKeyReusedEndToEnd(t *testing.T) {
	t.Parallel()
	h := newHarness(t, false, 0, nil)
	first := workload.Make(localtest.Unique("reused"), 0, workload.OKMutating, 0)
	other := first
	other.TaskID = first.TaskID + "-other"
	other.Body = strings.Replace(strings.Replace(first.Body, `"subject":"digest 0"`, `"subject":"refund 500 EUR"`, 1), first.TaskID, other.TaskID, 1)
	require.NotEqual(t, first.Body, other.Body)
	w := h.worker()

	sentFirst := h.send(first)
	h.drain(w.Handle)
	before, ok, err := h.ledger.Get(context.Background(), h.lkey(first))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, ledger.StateDone, before.State)
	require.True(t, strings.HasPrefix(before.ArgsDigest, "jcs-sha256:"), before.ArgsDigest)

	sentOther := h.send(other)
	h.send(first) // the first task again: a duplicate, still a no-op
	h.drain(w.Handle)

	assert.Equal(t, 1, h.attemptsOf(sentFirst[0].MessageID))
	assert.Equal(t, 1, h.attemptsOf(sentOther[0].MessageID), "dead-lettered on its first receive")
	started, completed := h.ledger.counts()
	assert.Equal(t, 1, started[h.lkey(first)], "the tool ran once: the reused key's task never started")
	assert.Equal(t, 1, completed[h.lkey(first)])
	after, _, err := h.ledger.Get(context.Background(), h.lkey(first))
	require.NoError(t, err)
	assert.Equal(t, ledger.StateDone, after.State)
	assert.Equal(t, before.Receipt, after.Receipt)
	assert.Equal(t, before.ArgsDigest, after.ArgsDigest)
	assert.Zero(t, after.DeadLetterCount, "the entry is the first task's: not counted")

	dead := h.deadLetters()
	require.Len(t, dead, 1)
	d := dead[0]
	assert.Equal(t, deadletter.ReasonIdempotencyKeyReused, d.Reason)
	assert.False(t, d.Inferred)
	require.NotNil(t, d.Meta)
	assert.Equal(t, sentOther[0].MessageID, d.Meta.MessageID)
	assert.Equal(t, other.Body, d.Body, "the body byte for byte")
	assert.Equal(t, first.Key, d.Meta.IdempotencyKey)
	assert.Equal(t, deadletter.EffectNone, d.Meta.Effect)
	assert.NotContains(t, d.Meta.Error, "refund", "no args in the metadata")

	r := triage.Build(dead, h.p, time.Now())
	require.Len(t, r.Groups, 1)
	assert.Equal(t, []string{first.Key}, r.Groups[0].IdempotencyKeys)
	assert.Equal(t, deadletter.RedriveNever, r.Groups[0].Redrivable)
	assert.Contains(t, strings.Join(r.Attention, "\n"), "1 message idempotency_key_reused")

	// A redrive without an override is refused, and nothing moves.
	rd := newRedriver(t, h)
	_, err = rd.Select(context.Background(), redrive.SelectRequest{
		Who:     redrive.Who{Owner: h.p.Owner, Why: "try it again (e2e)"},
		Reasons: []deadletter.Reason{deadletter.ReasonIdempotencyKeyReused}, Rate: 100,
	})
	require.ErrorIs(t, err, redrive.ErrRefused)
	assert.Equal(t, 1, h.depth(h.q.DLQURL))
	assert.Zero(t, h.depth(h.q.HotURL))
	e, _, _ := h.ledger.Get(context.Background(), h.lkey(first))
	assert.Zero(t, e.RedriveCount, "a refused redrive counts nothing")
}

// requeueSpy records the worker's sends to its hot queue (requeues) and
// its visibility changes, and passes every call on.
type requeueSpy struct {
	*sqs.Client
	hotURL     string
	mu         sync.Mutex
	requeues   []*sqs.SendMessageBatchInput
	visibility []int32
}

func (s *requeueSpy) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	if aws.ToString(in.QueueUrl) == s.hotURL {
		s.mu.Lock()
		s.requeues = append(s.requeues, in)
		s.mu.Unlock()
	}
	return s.Client.SendMessageBatch(ctx, in, opts...)
}

func (s *requeueSpy) ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	s.mu.Lock()
	s.visibility = append(s.visibility, in.VisibilityTimeout)
	s.mu.Unlock()
	return s.Client.ChangeMessageVisibility(ctx, in, opts...)
}

// Issue 21, part 2: Retry-After honoured. A task whose provider answers 429
// with Retry-After: 1 until the task's second counted receive, on a
// pipeline with max_receive_count 3 and retry_after_requeues 3. Must hold:
// the first three 429s are requeued (a copy with DelaySeconds 1 and
// agentdlq_requeued "0/1", "0/2", "0/3"; the original acknowledged), the
// fourth hides the copy for 1 s (ChangeMessageVisibility, counted), and the
// next receive succeeds: five handler calls on a budget of three, nothing
// dead-lettered, the effect once. Without requeues, the same task is hidden
// for its Retry-After on each receive and dead-lettered as budget_exhausted
// on the third.
func TestRetryAfterEndToEnd(t *testing.T) {
	t.Parallel()
	rateLimited := func(prefix string) workload.Task {
		task := workload.Make(prefix, 0, workload.OK, 0)
		task.Body = strings.Replace(task.Body, `"args":{`, `"args":{"fault":{"kind":"rate_limited","retry_after_seconds":1,"until_receive":2},`, 1)
		return task
	}
	t.Run("requeued, not counted", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, false, 0, func(p *pipeline.Pipeline) { p.MaxReceiveCount, p.RetryAfterRequeues = 3, 3 })
		require.NoError(t, h.p.Validate())
		spy := &requeueSpy{Client: h.sqs, hotURL: h.q.HotURL}
		task := rateLimited(localtest.Unique("ra-requeue"))
		h.send(task)
		h.drain(h.worker(func(c *sampleworker.Config) { c.SQS = spy }).Handle)

		require.Len(t, spy.requeues, 3, "three uncounted requeues")
		for i, in := range spy.requeues {
			require.Len(t, in.Entries, 1)
			e := in.Entries[0]
			assert.Equal(t, int32(1), e.DelaySeconds)
			assert.Equal(t, task.Body, aws.ToString(e.MessageBody), "the body byte for byte")
			assert.Equal(t, "0/"+string(rune('1'+i)), aws.ToString(e.MessageAttributes[batch.AttrRequeued].StringValue))
		}
		assert.Equal(t, []int32{1}, spy.visibility, "then hidden for the Retry-After, counted")
		assert.Zero(t, h.depth(h.q.DLQURL), "nothing dead-lettered")
		assert.Zero(t, h.depth(h.q.HotURL))
		e, ok, err := h.ledger.Get(context.Background(), h.lkey(task))
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, ledger.StateDone, e.State)
		_, completed := h.ledger.counts()
		assert.Equal(t, 1, completed[h.lkey(task)])
	})
	t.Run("counted: budget_exhausted", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, false, 0, func(p *pipeline.Pipeline) { p.MaxReceiveCount = 3 })
		spy := &requeueSpy{Client: h.sqs, hotURL: h.q.HotURL}
		task := rateLimited(localtest.Unique("ra-counted"))
		task.Body = strings.Replace(task.Body, `"until_receive":2`, `"until_receive":9`, 1)
		sent := h.send(task)
		h.drain(h.worker(func(c *sampleworker.Config) { c.SQS = spy }).Handle)
		assert.Empty(t, spy.requeues)
		assert.Equal(t, []int32{1, 1}, spy.visibility, "the Retry-After, not the backoff, on receives 1 and 2")
		assert.Equal(t, 3, h.attemptsOf(sent[0].MessageID))
		dead := h.deadLetters()
		require.Len(t, dead, 1)
		assert.Equal(t, deadletter.ReasonBudgetExhausted, dead[0].Reason)
		assert.Equal(t, 3, dead[0].Meta.Attempts)
	})
}

// Issue 21, part 6: eval records keep their trace. Three deliveries of one
// recurring poison case (schema_invalid: no tenant; fresh ids and trace ids
// each), sent with an X-Ray header (the AWSTraceHeader system attribute),
// are dead-lettered by the worker and exported by triage. Must hold: the
// exported record's metadata carries the trace_id of the case's first task
// — the one its input holds — so the dataset item links back to its run;
// and its aws_trace_header is that message's header as the dead letter kept
// it. fauxqs keeps no system attribute a producer sends (docs/local.md), so
// locally the dead letters have none and the record must then carry none
// (omitted, never another message's); triage's TestEvalRecordsKeepTheTrace
// covers a header that is there.
func TestEvalExportKeepsTheTraceEndToEnd(t *testing.T) {
	t.Parallel()
	h := newHarness(t, false, 0, nil)
	ctx := context.Background()
	prefix := localtest.Unique("trace")
	for i := range 3 {
		body := fmt.Sprintf(`{"task_id":"%s-%d","run_id":"%s-run","idempotency_key":"%s:%d","tool":"web.search","tool_version":"2.4.1",`+
			`"trace_id":"1-6b0c13c0-%024x","created_at":"2026-12-02T09:00:00Z","schema_version":1,"args":{"query":"no tenant"}}`, prefix, i, prefix, prefix, i, i+1)
		header := fmt.Sprintf("Root=1-6b0c13c0-%024x;Parent=%016x;Sampled=1", i+1, i+1)
		_, err := h.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(h.q.HotURL), MessageBody: aws.String(body),
			MessageSystemAttributes: map[string]types.MessageSystemAttributeValue{
				string(types.MessageSystemAttributeNameForSendsAWSTraceHeader): {DataType: aws.String("String"), StringValue: aws.String(header)}}})
		require.NoError(t, err)
	}
	h.drain(h.worker().Handle)
	dead := h.deadLetters()
	require.Len(t, dead, 3)
	headerOf := map[string]string{} // trace_id -> the dead letter's AWSTraceHeader
	for _, d := range dead {
		require.Equal(t, deadletter.ReasonSchemaInvalid, d.Reason)
		var task map[string]any
		require.NoError(t, json.Unmarshal([]byte(d.Body), &task))
		headerOf[task["trace_id"].(string)] = d.System["AWSTraceHeader"]
	}

	r := triage.Build(dead, h.p, time.Now())
	dest := store.Folder{Root: t.TempDir()}
	res, err := eval.Export(ctx, dest, r, h.p, time.Now())
	require.NoError(t, err)
	require.Equal(t, 1, res.Exported, "one case, three occurrences")
	data, err := dest.Get(ctx, res.RecordsKey)
	require.NoError(t, err)
	var rec struct { // one JSONL line, as a dataset tool reads it
		Input    map[string]any `json:"input"`
		Metadata struct {
			Occurrences    int    `json:"occurrences"`
			TraceID        string `json:"trace_id"`
			AWSTraceHeader string `json:"aws_trace_header"`
		} `json:"metadata"`
	}
	require.NoError(t, json.Unmarshal(bytes.TrimSpace(data), &rec))
	assert.Equal(t, 3, rec.Metadata.Occurrences)
	require.NotEmpty(t, rec.Metadata.TraceID)
	assert.Equal(t, rec.Input["trace_id"], rec.Metadata.TraceID, "the case's first task: its input's trace")
	header, ok := headerOf[rec.Metadata.TraceID]
	require.True(t, ok, "the trace of one of the dead letters")
	assert.Equal(t, header, rec.Metadata.AWSTraceHeader, "that dead letter's X-Ray header, or none where it has none")
}
