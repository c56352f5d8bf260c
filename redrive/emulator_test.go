package redrive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/functions/sampleworker"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/testkit/localtest"
	"github.com/agentdlq/agentdlq/triage"
)

// local is one pipeline on the emulators: its queues, a fresh ledger table,
// the real worker, and a Redriver wired exactly as the CLI wires it.
type local struct {
	t      *testing.T
	p      *pipeline.Pipeline
	client *sqs.Client
	q      pipeline.Queues
	led    ledger.Ledger
	w      *sampleworker.Worker
	store  *memStore
}

func newLocal(t *testing.T, name string) *local {
	t.Helper()
	cfg := localtest.AWS(t)
	p := testPipeline(t, name)
	l := &local{t: t, p: p, client: sqs.NewFromConfig(cfg), store: &memStore{}}
	l.q = localtest.Queues(t, cfg, p)
	l.led = ledger.NewDynamo(dynamodb.NewFromConfig(cfg), localtest.Table(t, cfg))
	w, err := sampleworker.New(sampleworker.Config{Pipeline: p, Queues: l.q, SQS: l.client, Ledger: l.led,
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), Metrics: io.Discard})
	require.NoError(t, err)
	l.w = w
	return l
}

func (l *local) redriver() *Redriver {
	r, err := New(Config{
		Pipeline: l.p, SQS: l.client, Ledger: l.led,
		Queues: pipeline.Queues{HotURL: l.q.HotURL, HotARN: l.q.HotARN, DLQURL: l.q.DLQURL, DLQARN: l.q.DLQARN, FIFO: l.q.FIFO},
		Audit:  &audit.Auditor{Store: l.store, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))},
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
	})
	if err != nil {
		panic(err) // a test's own wiring
	}
	return r
}

// sent is a message as the producer sent it.
type sent struct {
	body  string
	attrs map[string]deadletter.Attribute
}

// produce sends a task to the hot queue with n producer attributes.
func (l *local) produce(key string, fault string, n int) sent {
	l.t.Helper()
	var body map[string]any
	require.NoError(l.t, json.Unmarshal([]byte(task(key, "web.search")), &body))
	if fault != "" {
		body["args"] = map[string]any{"q": key, "fault": json.RawMessage(fault)}
	}
	b, _ := json.Marshal(body)
	s := sent{body: string(b), attrs: originalAttrs(n)}
	in := &sqs.SendMessageInput{QueueUrl: aws.String(l.q.HotURL), MessageBody: aws.String(s.body), MessageAttributes: attributesToSQS(s.attrs)}
	if l.q.FIFO {
		in.MessageGroupId, in.MessageDeduplicationId = aws.String("run-"+key), aws.String("d-"+key)
	}
	_, err := l.client.SendMessage(context.Background(), in)
	require.NoError(l.t, err)
	return s
}

// work runs the real worker over the hot queue until it is empty, the way
// Lambda's event source does: a Lambda-shaped event, the successes deleted,
// the batch item failures left to their visibility timeout.
func (l *local) work() (handled int) {
	l.t.Helper()
	ctx := context.Background()
	for range 50 {
		out, err := l.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(l.q.HotURL), MaxNumberOfMessages: 10,
			VisibilityTimeout: 30, MessageAttributeNames: []string{"All"},
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
		require.NoError(l.t, err)
		if len(out.Messages) == 0 {
			if l.empty(l.q.HotURL) {
				return handled
			}
			continue
		}
		ev := events.SQSEvent{}
		for _, m := range out.Messages {
			ma := map[string]events.SQSMessageAttribute{}
			for k, v := range m.MessageAttributes {
				ma[k] = events.SQSMessageAttribute{DataType: aws.ToString(v.DataType), StringValue: v.StringValue, BinaryValue: v.BinaryValue}
			}
			ev.Records = append(ev.Records, events.SQSMessage{MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle),
				Body: aws.ToString(m.Body), Attributes: m.Attributes, MessageAttributes: ma, EventSourceARN: l.q.HotARN, EventSource: "aws:sqs", AWSRegion: "us-east-1"})
		}
		resp, err := l.w.Handle(ctx, ev)
		require.NoError(l.t, err)
		failed := map[string]bool{}
		for _, f := range resp.BatchItemFailures {
			failed[f.ItemIdentifier] = true
		}
		for _, m := range out.Messages {
			handled++
			if !failed[aws.ToString(m.MessageId)] {
				_, err := l.client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(l.q.HotURL), ReceiptHandle: m.ReceiptHandle})
				require.NoError(l.t, err)
			}
		}
	}
	return handled
}

// drainQueue receives and deletes everything in a queue, returning it.
func (l *local) drainQueue(url string) []sqstypes.Message {
	l.t.Helper()
	var out []sqstypes.Message
	for range 100 {
		r, err := l.client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10,
			VisibilityTimeout: 30, MessageAttributeNames: []string{"All"},
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
		require.NoError(l.t, err)
		if len(r.Messages) == 0 {
			if l.empty(url) {
				return out
			}
			continue
		}
		for _, m := range r.Messages {
			out = append(out, m)
			_, err := l.client.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle})
			require.NoError(l.t, err)
		}
	}
	return out
}

// empty says whether a queue that just answered a receive with nothing is
// empty: nothing visible and nothing in flight. One empty receive does not
// prove it: a receive whose response was lost on the way (docs/local.md)
// leaves its messages in flight until their visibility timeout, and they
// must be waited for. It returns false as soon as messages are visible
// again, and fails the test when some are still in flight after 45 s.
func (l *local) empty(url string) bool {
	l.t.Helper()
	for deadline := time.Now().Add(45 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		out, err := l.client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
			AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
		require.NoError(l.t, err)
		var visible, inFlight int
		fmt.Sscan(out.Attributes["ApproximateNumberOfMessages"], &visible)
		fmt.Sscan(out.Attributes["ApproximateNumberOfMessagesNotVisible"], &inFlight)
		switch {
		case visible > 0:
			return false
		case inFlight == 0:
			return true
		}
	}
	l.t.Fatalf("%s: messages still in flight after 45 s", url)
	return false
}

// depth is the queue's visible plus in-flight messages.
func (l *local) depth(url string) int {
	l.t.Helper()
	out, err := l.client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	require.NoError(l.t, err)
	var a, b int
	fmt.Sscan(out.Attributes["ApproximateNumberOfMessages"], &a)
	fmt.Sscan(out.Attributes["ApproximateNumberOfMessagesNotVisible"], &b)
	return a + b
}

// seedMixed has the real worker dead-letter a mixed workload: n unclassified
// (a tool error), n policy_limit, and one task with ten attributes among the
// unclassified ones (two folded into dlq_meta).
func (l *local) seedMixed(n int) map[string]sent {
	originals := map[string]sent{}
	for i := range n {
		k := fmt.Sprintf("uncl-%d", i)
		attrs := 3
		if i == 0 {
			attrs = 10
		}
		originals[k] = l.produce(k, `{"kind":"error","error":"tool crashed"}`, attrs)
		k = fmt.Sprintf("pol-%d", i)
		originals[k] = l.produce(k, `{"kind":"policy_limit"}`, 2)
	}
	l.work()
	require.Equal(l.t, 2*n, l.depth(l.q.DLQURL), "the worker dead-lettered every task")
	return originals
}

func TestEmulatorSelectiveRedrive(t *testing.T) {
	t.Parallel()
	l := newLocal(t, "agent-tasks")
	originals := l.seedMixed(4)
	r := l.redriver()
	require.True(t, r.local, "New decides: every client is on loopback")
	ctx := context.Background()
	req := SelectRequest{Who: Who{Owner: l.p.Owner, Why: "tool fixed in worker v2"}, Reasons: []deadletter.Reason{deadletter.ReasonUnclassified},
		Rate: 200, WaitSeconds: 1, IdleReceives: 3}

	// Refused without the deployed fix, and for a wrong owner: nothing moves.
	_, err := r.Select(ctx, req)
	assert.Equal(t, CodeForbidden, RefusalCode(err))
	bad := req
	bad.Owner, bad.Ack.FixDeployed = "mallory", "v2"
	_, err = r.Select(ctx, bad)
	assert.Equal(t, CodeOwner, RefusalCode(err))
	bad = req
	bad.Reasons, bad.Ack.FixDeployed = []deadletter.Reason{deadletter.ReasonPolicyLimit}, "v2"
	_, err = r.Select(ctx, bad)
	assert.Equal(t, CodeForbidden, RefusalCode(err), "policy_limit is never redriven, fix or not")
	assert.Equal(t, 0, l.depth(l.q.HotURL))
	assert.Equal(t, 8, l.depth(l.q.DLQURL))

	req.Ack.FixDeployed = "worker v2"
	res, err := r.Select(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, 4, res.Moved)
	assert.Equal(t, 4, l.depth(l.q.DLQURL), "the policy_limit ones stay")

	hot := l.drainQueue(l.q.HotURL)
	require.Len(t, hot, 4)
	for _, m := range hot {
		key := keyOf(t, aws.ToString(m.Body))
		orig, ok := originals[key]
		require.True(t, ok, key)
		assert.Contains(t, key, "uncl-")
		assert.Equal(t, orig.body, aws.ToString(m.Body), "body byte-identical")
		assert.Equal(t, orig.attrs, attributesFromSQS(m.MessageAttributes), "attributes as the producer sent them")
		e, ok, err := l.led.Get(ctx, ledger.Key(l.p.Name, "acme", key))
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, 1, e.RedriveCount)
	}
	for _, m := range l.drainQueue(l.q.DLQURL) {
		assert.Equal(t, "policy_limit", attributesFromSQS(m.MessageAttributes)[deadletter.AttrReason].StringValue)
	}
	var outcomes []string
	for _, rec := range l.store.all() {
		outcomes = append(outcomes, string(rec.Action)+":"+string(rec.Outcome))
	}
	assert.Equal(t, []string{"select:refused", "select:refused", "select:refused", "select:begun", "select:ok"}, outcomes)
}

// interruptingAPI fails the first DeleteMessage on the DLQ the way a crash
// would: the context is cancelled after the send.
type interruptingAPI struct {
	API
	dlqURL string
	cancel context.CancelFunc
	once   sync.Once
}

func (a *interruptingAPI) DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, opt ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	hit := false
	if aws.ToString(in.QueueUrl) == a.dlqURL {
		a.once.Do(func() { hit = true })
	}
	if hit {
		a.cancel()
		return nil, context.Canceled
	}
	return a.API.DeleteMessage(ctx, in, opt...)
}

func TestEmulatorInterruptedBetweenSendAndDelete(t *testing.T) {
	t.Parallel()
	l := newLocal(t, "agent-tasks")
	// budget_exhausted dead letters (worker metadata on a clean body): the
	// upstream has recovered, so the redriven tasks now succeed.
	ctx := context.Background()
	for i := range 3 {
		d := newDeadLetter(t, fmt.Sprintf("int-%d", i), "web.search", deadletter.ReasonBudgetExhausted, 2, "")
		_, err := l.client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(l.q.DLQURL), MessageBody: aws.String(d.body), MessageAttributes: attributesToSQS(d.attrs)})
		require.NoError(t, err)
	}
	r := l.redriver()
	runCtx, cancel := context.WithCancel(ctx)
	r.cfg.SQS = &interruptingAPI{API: l.client, dlqURL: l.q.DLQURL, cancel: cancel}
	req := SelectRequest{Who: Who{Owner: l.p.Owner, Why: "search API back"}, Reasons: []deadletter.Reason{deadletter.ReasonBudgetExhausted},
		Rate: 100, Hold: 2 * time.Second, WaitSeconds: -1, IdleReceives: 2, Workers: 1}
	res, err := r.Select(runCtx, req)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 1, res.DeleteFailed)
	assert.Equal(t, 0, res.Moved)
	assert.Equal(t, 1, l.depth(l.q.HotURL), "sent")
	assert.Equal(t, 3, l.depth(l.q.DLQURL), "and still in the DLQ")

	// The worker processes the one that was sent.
	l.work()
	// The hold lapses; the owner reruns.
	time.Sleep(2500 * time.Millisecond)
	r.cfg.SQS = l.client
	// Long-poll receives this time: a receive whose response were lost on
	// the way would hide its letters for the 2 s hold, and the pass must
	// outlast that.
	req.WaitSeconds = 1
	res, err = r.Select(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, 3, res.Moved, "the interrupted one is sent again, with the two others")
	assert.Equal(t, 0, l.depth(l.q.DLQURL))
	assert.Equal(t, 3, l.depth(l.q.HotURL))
	handled := l.work()
	assert.Equal(t, 3, handled)
	assert.Equal(t, 0, l.depth(l.q.HotURL))
	assert.Equal(t, 0, l.depth(l.q.DLQURL), "nothing dead-lettered again, nothing lost")
	// Every key is done once; the duplicate of int-? was a no-op through the ledger.
	for i := range 3 {
		e, ok, err := l.led.Get(ctx, ledger.Key(l.p.Name, "acme", fmt.Sprintf("int-%d", i)))
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, ledger.StateDone, e.State)
	}
	redriven := 0
	for i := range 3 {
		e, _, _ := l.led.Get(ctx, ledger.Key(l.p.Name, "acme", fmt.Sprintf("int-%d", i)))
		redriven += e.RedriveCount
	}
	assert.Equal(t, 4, redriven, "four sends for three keys: one duplicate, absorbed")
}

func TestEmulatorCanaryStopsOnFailure(t *testing.T) {
	t.Parallel()
	l := newLocal(t, "agent-tasks")
	l.seedMixed(4)
	r := l.redriver()
	r.cfg.Sleep = func(ctx context.Context, d time.Duration) error {
		l.work() // the worker runs while the canary waits
		time.Sleep(50 * time.Millisecond)
		return ctx.Err()
	}
	req := SelectRequest{Who: Who{Owner: l.p.Owner, Why: "tool fixed?"}, Reasons: []deadletter.Reason{deadletter.ReasonUnclassified},
		Ack: Ack{FixDeployed: "worker v2 (not really)"}, Rate: 100, Canary: 2, CanaryTimeout: 20 * time.Second, CanaryPoll: 200 * time.Millisecond,
		WaitSeconds: 1, IdleReceives: 3}
	res, err := r.Select(context.Background(), req)
	require.ErrorIs(t, err, ErrCanaryFailed)
	require.NotNil(t, res.Canary)
	assert.Equal(t, 2, res.Canary.Moved)
	assert.Equal(t, 2, res.Canary.DeadLettered, "the tool still fails")
	assert.Equal(t, 2, res.Moved, "the rest was not moved")
	assert.Equal(t, 8, l.depth(l.q.DLQURL), "two back in the DLQ, two untouched, four policy_limit")
	recs := l.store.all()
	assert.Equal(t, audit.ActionCanary, recs[len(recs)-2].Action)
	assert.Equal(t, audit.OutcomeFailed, recs[len(recs)-2].Outcome)
	assert.Equal(t, audit.OutcomeStopped, recs[len(recs)-1].Outcome)
}

func TestEmulatorStartIsUnsupported(t *testing.T) {
	t.Parallel()
	l := newLocal(t, "agent-tasks")
	l.seedMixed(1)
	r := l.redriver()
	_, err := r.Start(context.Background(), StartRequest{Who: Who{Owner: l.p.Owner, Why: "x"}, Rate: 10,
		Groups: []Group{{deadletter.ReasonUnclassified, "fp", 1}}, Ack: Ack{FixDeployed: "v2", Overrides: map[deadletter.Reason]string{deadletter.ReasonPolicyLimit: "cap raised"}}})
	require.ErrorIs(t, err, ErrUnsupported)
	assert.Contains(t, err.Error(), "redrive selectively")
	assert.Equal(t, 2, l.depth(l.q.DLQURL))
}

func TestEmulatorWrongQueueRefused(t *testing.T) {
	t.Parallel()
	l := newLocal(t, "agent-tasks")
	l.seedMixed(1)
	cfg := localtest.AWS(t)
	other := localtest.Queues(t, cfg, l.p) // another pair of the same pipeline
	r := l.redriver()
	r.cfg.Queues.HotURL, r.cfg.Queues.HotARN = other.HotURL, other.HotARN // aimed at a queue that is not this DLQ's source
	_, err := r.Select(context.Background(), SelectRequest{Who: Who{Owner: l.p.Owner, Why: "x"}, Ack: Ack{FixDeployed: "v2"},
		Reasons: []deadletter.Reason{deadletter.ReasonUnclassified}, Rate: 10})
	assert.Equal(t, CodeDestination, RefusalCode(err), err)
	r = l.redriver()
	_, err = r.Start(context.Background(), StartRequest{Who: Who{Owner: l.p.Owner, Why: "x"}, Rate: 10, Destination: other.HotARN,
		Groups: []Group{{deadletter.ReasonBudgetExhausted, "fp", 1}}})
	assert.Equal(t, CodeDestination, RefusalCode(err), err)
	assert.Equal(t, 0, l.depth(other.HotURL))
	assert.Equal(t, 2, l.depth(l.q.DLQURL))
}

func TestEmulatorOwnerTagMismatchRefused(t *testing.T) {
	t.Parallel()
	l := newLocal(t, "agent-tasks")
	l.seedMixed(1)
	_, err := l.client.TagQueue(context.Background(), &sqs.TagQueueInput{QueueUrl: aws.String(l.q.DLQURL), Tags: map[string]string{pipeline.TagOwner: "someone-else"}})
	require.NoError(t, err)
	_, err = l.redriver().Select(context.Background(), SelectRequest{Who: Who{Owner: l.p.Owner, Why: "x"}, Ack: Ack{FixDeployed: "v2"},
		Reasons: []deadletter.Reason{deadletter.ReasonUnclassified}, Rate: 10})
	assert.Equal(t, CodeOwnerTag, RefusalCode(err), err)
	assert.Equal(t, 0, l.depth(l.q.HotURL))
}

func TestEmulatorConcurrentSelectOfTheSameGroup(t *testing.T) {
	t.Parallel()
	l := newLocal(t, "agent-tasks")
	ctx := context.Background()
	const n = 30
	for i := range n {
		d := newDeadLetter(t, fmt.Sprintf("cc-%02d", i), "web.search", deadletter.ReasonBudgetExhausted, 1, "")
		_, err := l.client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(l.q.DLQURL), MessageBody: aws.String(d.body), MessageAttributes: attributesToSQS(d.attrs)})
		require.NoError(t, err)
	}
	req := SelectRequest{Who: Who{Owner: l.p.Owner, Why: "503s over"}, Reasons: []deadletter.Reason{deadletter.ReasonBudgetExhausted},
		Rate: 500, WaitSeconds: -1, IdleReceives: 3}
	var wg sync.WaitGroup
	moved := make([]int, 2)
	for i := range moved {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := l.redriver().Select(ctx, req)
			if err != nil && !errors.Is(err, triage.ErrScanPartial) { // the other run holds letters
				assert.Equal(t, CodeNothingSelected, RefusalCode(err), err)
			}
			moved[i] = res.Moved
		}()
	}
	wg.Wait()
	// A run may end before the other releases what it held: a rerun picks up the rest.
	for try := 0; l.depth(l.q.DLQURL) > 0; try++ {
		require.Less(t, try, 20, "the DLQ does not drain")
		time.Sleep(200 * time.Millisecond)
		res, err := l.redriver().Select(ctx, req)
		if err == nil || errors.Is(err, triage.ErrScanPartial) {
			moved = append(moved, res.Moved)
		}
	}
	total := 0
	for _, m := range moved {
		total += m
	}
	assert.Equal(t, total, l.depth(l.q.HotURL))
	// The worker takes what was redriven; the ledger absorbs any duplicate.
	handled := l.work()
	done, redriven := 0, 0
	for i := range n {
		e, ok, err := l.led.Get(ctx, ledger.Key(l.p.Name, "acme", fmt.Sprintf("cc-%02d", i)))
		require.NoError(t, err)
		require.True(t, ok)
		if e.State == ledger.StateDone {
			done++
		}
		redriven += e.RedriveCount
	}
	dups := handled - n
	t.Logf("runs moved %v; the worker handled %d messages for %d keys: %d duplicates, absorbed by the idempotency key", moved, handled, n, dups)
	assert.Equal(t, n, done, "no message lost: every key done")
	assert.Equal(t, total, handled)
	assert.Equal(t, total, redriven, "one redrive count per send")
	assert.Equal(t, 0, l.depth(l.q.DLQURL))
	assert.Equal(t, 0, l.depth(l.q.HotURL))
	// A duplicate needs a hold to lapse mid-move (60 s by default); none here.
	assert.Equal(t, 0, dups)
}

func TestEmulatorS3AuditStore(t *testing.T) {
	t.Parallel()
	cfg := localtest.AWS(t)
	bucket := localtest.Bucket(t, cfg)
	api := s3.NewFromConfig(cfg)
	store := &audit.S3Store{API: api, Bucket: bucket, Prefix: "team"}
	a := &audit.Auditor{Store: store, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))}
	for _, action := range []audit.Action{audit.ActionPlan, audit.ActionSelect, audit.ActionSelect} {
		require.NoError(t, a.Record(context.Background(), audit.Entry{Actor: "platform-oncall", Pipeline: "agent-tasks", Action: action, Outcome: audit.OutcomeOK}))
	}
	out, err := api.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String("team/agent-tasks/audit/")})
	require.NoError(t, err)
	require.Len(t, out.Contents, 3, "one object per record")
	got, err := api.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: out.Contents[0].Key})
	require.NoError(t, err)
	defer got.Body.Close()
	var rec audit.Entry
	require.NoError(t, json.NewDecoder(got.Body).Decode(&rec))
	assert.Equal(t, "agent-tasks", rec.Pipeline)
}

// In a FIFO pipeline the resend after a crash carries the same deduplication
// id, so SQS itself drops the duplicate within its 5-minute window.
func TestEmulatorFIFOResendIsDeduplicated(t *testing.T) {
	t.Parallel()
	l := newLocal(t, "agent-steps")
	require.True(t, l.q.FIFO)
	ctx := context.Background()
	for i := range 2 {
		l.produce(fmt.Sprintf("step-%d", i), `{"kind":"error","error":"tool crashed"}`, 3)
	}
	l.work()
	require.Equal(t, 2, l.depth(l.q.DLQURL))

	r := l.redriver()
	runCtx, cancel := context.WithCancel(ctx)
	r.cfg.SQS = &interruptingAPI{API: l.client, dlqURL: l.q.DLQURL, cancel: cancel}
	req := SelectRequest{Who: Who{Owner: l.p.Owner, Why: "tool fixed"}, Reasons: []deadletter.Reason{deadletter.ReasonUnclassified},
		Ack: Ack{FixDeployed: "worker v2"}, Rate: 100, Hold: 2 * time.Second, WaitSeconds: -1, IdleReceives: 2, Workers: 1}
	res, err := r.Select(runCtx, req)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, 1, res.DeleteFailed)

	time.Sleep(2500 * time.Millisecond)
	r.cfg.SQS = l.client
	// Long-poll receives this time: a receive whose response were lost on
	// the way would hide its letters for the 2 s hold, and the pass must
	// outlast that.
	req.WaitSeconds = 1
	res, err = r.Select(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, 2, res.Moved, "both sent (one of them again)")
	assert.Equal(t, 0, l.depth(l.q.DLQURL))

	hot := l.drainQueue(l.q.HotURL)
	keys := map[string]string{}
	for _, m := range hot {
		key := keyOf(t, aws.ToString(m.Body))
		_, dup := keys[key]
		assert.False(t, dup, "SQS deduplicated the resend of %s", key)
		keys[key] = m.Attributes[string(sqstypes.MessageSystemAttributeNameMessageGroupId)]
	}
	assert.Equal(t, map[string]string{"step-0": "run-step-0", "step-1": "run-step-1"}, keys, "each back in its own message group")
}

// A task that fails again after every redrive comes back as redrive_loop once
// its key has been redriven redrive_loop_after times, and redrive_loop is
// refused from then on.
func TestEmulatorRedriveLoop(t *testing.T) {
	t.Parallel()
	l := newLocal(t, "agent-tasks")
	ctx := context.Background()
	l.produce("loop-1", `{"kind":"error","error":"tool crashed"}`, 1)
	l.work()
	r := l.redriver()
	req := SelectRequest{Who: Who{Owner: l.p.Owner, Why: "try again"}, Reasons: []deadletter.Reason{deadletter.ReasonUnclassified},
		Ack: Ack{FixDeployed: "not really fixed"}, Rate: 100, WaitSeconds: 1, IdleReceives: 3}
	reasonInDLQ := func() string {
		out, err := l.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(l.q.DLQURL), MaxNumberOfMessages: 1, VisibilityTimeout: 5,
			MessageAttributeNames: []string{"All"}})
		require.NoError(t, err)
		require.Len(t, out.Messages, 1)
		_, err = l.client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(l.q.DLQURL), ReceiptHandle: out.Messages[0].ReceiptHandle, VisibilityTimeout: 0})
		require.NoError(t, err)
		return attributesFromSQS(out.Messages[0].MessageAttributes)[deadletter.AttrReason].StringValue
	}
	var reasons []string
	for range l.p.RedriveLoopAfter {
		reasons = append(reasons, reasonInDLQ())
		_, err := r.Select(ctx, req)
		require.NoError(t, err)
		l.work()
	}
	reasons = append(reasons, reasonInDLQ())
	e, _, err := l.led.Get(ctx, ledger.Key(l.p.Name, "acme", "loop-1"))
	require.NoError(t, err)
	t.Logf("reasons after each round: %v; ledger: redriven %d, dead-lettered %d", reasons, e.RedriveCount, e.DeadLetterCount)
	assert.Equal(t, l.p.RedriveLoopAfter, e.RedriveCount)
	assert.Equal(t, "redrive_loop", reasons[len(reasons)-1])
	req.Reasons = []deadletter.Reason{deadletter.ReasonRedriveLoop}
	_, err = r.Select(ctx, req)
	assert.Equal(t, CodeForbidden, RefusalCode(err))
}
