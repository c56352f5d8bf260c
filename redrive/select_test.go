package redrive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/dlq"
)

// seed puts a mixed DLQ: n dead letters of each reason, the first ones with
// ten original attributes (two folded into dlq_meta), and one without
// metadata (receive_limit).
func seed(t *testing.T, f *fakeSQS, q pipeline.Queues, n int, reasons ...deadletter.Reason) map[string]deadLetter {
	t.Helper()
	out := map[string]deadLetter{}
	for _, r := range reasons {
		for i := range n {
			key := string(r) + "-" + string(rune('a'+i))
			group := ""
			if q.FIFO {
				group = "run-" + string(rune('a'+i))
			}
			d := newDeadLetter(t, key, "web.search", r, 10-i%3*5, group)
			f.put(q.DLQURL, d.body, d.attrs, group)
			out[key] = d
		}
	}
	return out
}

func selReq(p *pipeline.Pipeline, reasons ...deadletter.Reason) SelectRequest {
	return SelectRequest{Who: Who{Owner: p.Owner, Why: "search API back up"}, Reasons: reasons, Rate: 500}
}

func keyOf(t *testing.T, body string) string {
	var v struct {
		Key string `json:"idempotency_key"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &v))
	return v.Key
}

func TestSelectMovesOnlyTheChosenByteIdentical(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f := newFakeSQS()
	q := f.addPair(p)
	seeded := seed(t, f, q, 3, deadletter.ReasonBudgetExhausted, deadletter.ReasonSchemaInvalid, deadletter.ReasonPolicyLimit)
	f.put(q.DLQURL, task("crashed-1", "web.search"), originalAttrs(2), "") // no metadata: receive_limit
	r, store, led := newRedriver(t, p, f, q)
	var progress int
	r.cfg.OnMove = func() { progress++ }

	res, err := r.Select(context.Background(), selReq(p, deadletter.ReasonBudgetExhausted))
	require.NoError(t, err)
	assert.Equal(t, 3, res.Moved)
	assert.Equal(t, 3, progress)
	assert.Equal(t, 10, res.Seen)
	assert.Equal(t, res.Seen, res.Moved+res.Released, "every dead letter seen was moved or released")
	assert.Equal(t, map[deadletter.Reason]int{deadletter.ReasonBudgetExhausted: 3}, res.ByReason)

	hot, dlq := f.snapshot(q.HotURL), f.snapshot(q.DLQURL)
	assert.Len(t, hot, 3)
	assert.Len(t, dlq, 7, "counts conserved: 10 = 3 moved + 7 left")
	for _, m := range hot {
		d, ok := seeded[keyOf(t, m.body)]
		require.True(t, ok)
		assert.Equal(t, deadletter.ReasonBudgetExhausted, d.reason)
		assert.Equal(t, d.body, m.body, "body byte-identical")
		assert.Equal(t, d.original, attributesFromSQS(m.attrs), "original attributes, dlq_* removed, folded restored")
		e, ok, err := led.Get(context.Background(), acmeKey(d.key))
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, 1, e.RedriveCount)
	}
	for _, m := range dlq {
		assert.NotEqual(t, "budget_exhausted", attributesFromSQS(m.attrs)[deadletter.AttrReason].StringValue)
		assert.True(t, m.visibleAt.IsZero() || !m.visibleAt.After(f.Now()), "the others were released at once")
	}
	var actions []string
	for _, rec := range store.all() {
		actions = append(actions, string(rec.Action)+":"+string(rec.Outcome))
	}
	assert.Equal(t, []string{"select:begun", "select:ok"}, actions)
	assert.Equal(t, 3, store.all()[1].Counts["moved"])
}

// A select pass tags each letter it reads once, filter included: the
// filter matches on the tag the pass made (issue 29: no second tag).
func TestSelectTagsEachLetterOnce(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f := newFakeSQS()
	q := f.addPair(p)
	seed(t, f, q, 3, deadletter.ReasonBudgetExhausted, deadletter.ReasonSchemaInvalid)
	r, _, _ := newRedriver(t, p, f, q)
	tags := map[string]int{}
	r.tag = func(m dlq.Message) dlq.Tagged { tags[m.MessageID]++; return testTag(m) }

	req := selReq(p, deadletter.ReasonBudgetExhausted)
	req.Filter = dlq.Filter{Tool: "web.search"}
	res, err := r.Select(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, 3, res.Moved)
	assert.Len(t, tags, res.Seen, "every letter seen is tagged")
	for id, n := range tags {
		assert.Equal(t, 1, n, "letter %s tagged %d times", id, n)
	}
}

func TestSelectByFingerprintAndAcknowledgedPoison(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f := newFakeSQS()
	q := f.addPair(p)
	seed(t, f, q, 2, deadletter.ReasonSchemaInvalid)
	other := newDeadLetter(t, "other-tool", "sql.query", deadletter.ReasonSchemaInvalid, 1, "")
	f.put(q.DLQURL, other.body, other.attrs, "")
	r, _, _ := newRedriver(t, p, f, q)
	ctx := context.Background()

	req := selReq(p, deadletter.ReasonSchemaInvalid)
	req.Fingerprints = []string{"fp-schema_invalid-sql.query"}
	_, err := r.Select(ctx, req)
	assert.Equal(t, redrivetype.CodeForbidden, RefusalCode(err), "poison needs the deployed fix")
	assert.Empty(t, f.snapshot(q.HotURL))

	req.Ack.FixDeployed = "worker v1.3.0"
	res, err := r.Select(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, 1, res.Moved)
	hot := f.snapshot(q.HotURL)
	require.Len(t, hot, 1)
	assert.Equal(t, other.body, hot[0].body)

	req.Fingerprints = []string{"fp-nope"}
	_, err = r.Select(ctx, req)
	assert.Equal(t, redrivetype.CodeUnknownGroup, RefusalCode(err))
	assert.Len(t, f.snapshot(q.HotURL), 1, "nothing more moved")
	assert.Len(t, f.snapshot(q.DLQURL), 2)
}

func TestSelectDryRunMovesNothing(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f := newFakeSQS()
	q := f.addPair(p)
	seed(t, f, q, 2, deadletter.ReasonBudgetExhausted, deadletter.ReasonDependencyOpen)
	r, store, led := newRedriver(t, p, f, q)
	req := selReq(p, deadletter.ReasonDependencyOpen)
	req.DryRun = true
	res, err := r.Select(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, 0, res.Moved)
	assert.Equal(t, 2, res.Matched)
	require.Len(t, res.Letters, 2)
	assert.Equal(t, "dependency_open-a", res.Letters[0].IdempotencyKey)
	assert.Empty(t, f.snapshot(q.HotURL))
	assert.Len(t, f.snapshot(q.DLQURL), 4)
	assert.Equal(t, 0, led.Len())
	recs := store.all()
	require.Len(t, recs, 1)
	assert.Equal(t, audit.OutcomeDryRun, recs[0].Outcome)
	assert.IsType(t, dryMover{}, r.newPass(f, req, &SelectResult{}).mover, "a dry run is a mover of its own, not a branch of the move")
	assert.IsType(t, sendMover{}, r.newPass(f, selReq(p, deadletter.ReasonDependencyOpen), &SelectResult{}).mover)
}

// A dry run says what the same request would move: with a limit, at most
// that many.
func TestSelectDryRunHonoursTheLimit(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f := newFakeSQS()
	q := f.addPair(p)
	seed(t, f, q, 3, deadletter.ReasonDependencyOpen)
	r, _, _ := newRedriver(t, p, f, q)
	req := selReq(p, deadletter.ReasonDependencyOpen)
	req.DryRun, req.Limit = true, 2
	res, err := r.Select(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, 2, res.WouldMove)
	assert.Len(t, res.Letters, 2)
	assert.Equal(t, "limit of 2 reached", res.Partial)
	assert.Len(t, f.snapshot(q.DLQURL), 3, "nothing moved")
}

func TestSelectBadInputMovesNothing(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	tests := []struct {
		name  string
		setup func(f *fakeSQS, q pipeline.Queues)
		req   func(SelectRequest) SelectRequest
		code  redrivetype.Code // want: refusal code
	}{
		{"wrong owner", nil, func(s SelectRequest) SelectRequest { s.Owner = "mallory"; return s }, redrivetype.CodeOwner},
		{"missing why", nil, func(s SelectRequest) SelectRequest { s.Why = ""; return s }, redrivetype.CodeWhy},
		{"rate 0", nil, func(s SelectRequest) SelectRequest { s.Rate = 0; return s }, redrivetype.CodeRate},
		{"rate 501", nil, func(s SelectRequest) SelectRequest { s.Rate = 501; return s }, redrivetype.CodeRate},
		{"no reason", nil, func(s SelectRequest) SelectRequest { s.Reasons = nil; return s }, redrivetype.CodeUnknownReason},
		{"unknown reason", nil, func(s SelectRequest) SelectRequest { s.Reasons = []deadletter.Reason{"bogus"}; return s }, redrivetype.CodeUnknownReason},
		{"forbidden reason", nil, func(s SelectRequest) SelectRequest {
			s.Reasons = []deadletter.Reason{deadletter.ReasonGuardrailReject}
			return s
		}, redrivetype.CodeForbidden},
		{"effect_unknown without reconciliation", nil, func(s SelectRequest) SelectRequest {
			s.Reasons = []deadletter.Reason{deadletter.ReasonEffectUnknown}
			return s
		}, redrivetype.CodeForbidden},
		{"owner tag mismatch", func(f *fakeSQS, q pipeline.Queues) { f.Queue(q.DLQURL).Tags[pipeline.TagOwner] = "x" }, nil, redrivetype.CodeOwnerTag},
		{"reason not in the DLQ", nil, func(s SelectRequest) SelectRequest {
			s.Reasons = []deadletter.Reason{deadletter.ReasonDependencyOpen}
			return s
		}, redrivetype.CodeNothingSelected},
		{"unknown fingerprint", nil, func(s SelectRequest) SelectRequest { s.Fingerprints = []string{"nope"}; return s }, redrivetype.CodeUnknownGroup},
		{"empty DLQ", func(f *fakeSQS, q pipeline.Queues) { f.Queue(q.DLQURL).Messages = nil }, nil, redrivetype.CodeDLQEmpty},
		{"DLQ missing", func(f *fakeSQS, q pipeline.Queues) { f.RemoveQueue(q.DLQURL) }, nil, redrivetype.CodeDLQMissing},
		{"aimed at the wrong queue", func(f *fakeSQS, q pipeline.Queues) {
			f.Queue(q.HotURL).Attributes["RedrivePolicy"] = `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:elsewhere","maxReceiveCount":4}`
		}, nil, redrivetype.CodeDestination},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeSQS()
			q := f.addPair(p)
			seed(t, f, q, 2, deadletter.ReasonBudgetExhausted, deadletter.ReasonGuardrailReject, deadletter.ReasonEffectUnknown)
			before := len(f.snapshot(q.DLQURL))
			if tt.setup != nil {
				tt.setup(f, q)
			}
			r, store, led := newRedriver(t, p, f, q)
			req := selReq(p, deadletter.ReasonBudgetExhausted)
			if tt.req != nil {
				req = tt.req(req)
			}
			_, err := r.Select(context.Background(), req)
			require.ErrorIs(t, err, ErrRefused)
			assert.Equal(t, tt.code, RefusalCode(err), err)
			assert.Empty(t, f.snapshot(q.HotURL), "nothing moved")
			if f.Queue(q.DLQURL) != nil && tt.code != redrivetype.CodeDLQEmpty {
				assert.Len(t, f.snapshot(q.DLQURL), before)
			}
			assert.Equal(t, 0, led.Len())
			recs := store.all()
			require.NotEmpty(t, recs)
			assert.Equal(t, audit.OutcomeRefused, recs[len(recs)-1].Outcome)
		})
	}
}

func TestSelectSendFailureLosesNothing(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f := newFakeSQS()
	q := f.addPair(p)
	seed(t, f, q, 3, deadletter.ReasonBudgetExhausted)
	f.SendErr = errors.New("AccessDenied")
	r, store, _ := newRedriver(t, p, f, q)
	req := selReq(p, deadletter.ReasonBudgetExhausted)
	req.Workers = 1 // one move at a time: the first failure stops the run
	res, err := r.Select(context.Background(), req)
	require.Error(t, err)
	assert.NotErrorIs(t, err, ErrRefused)
	assert.Equal(t, 1, res.SendFailed)
	assert.Equal(t, 2, res.Released, "the two not started are released")
	assert.Len(t, f.snapshot(q.DLQURL), 3, "all still in the DLQ")
	for _, m := range f.snapshot(q.DLQURL) {
		assert.False(t, m.visibleAt.After(f.Now()), "released at once")
	}
	recs := store.all()
	assert.Equal(t, audit.OutcomeFailed, recs[len(recs)-1].Outcome)
}

// worker simulates the worker on the hot queue: it claims the key in the
// ledger (a done key is a no-op) and completes it, or, for keys in fail,
// dead-letters it again.
type simWorker struct {
	t         *testing.T
	f         *fakeSQS
	q         pipeline.Queues
	led       ledger.Ledger
	fail      map[string]bool
	mu        sync.Mutex
	processed map[string]int // key → effects
	noops     int
}

func (w *simWorker) drain() {
	ctx := context.Background()
	for {
		out, err := w.f.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(w.q.HotURL), MaxNumberOfMessages: 10, VisibilityTimeout: 30})
		require.NoError(w.t, err)
		if len(out.Messages) == 0 {
			return
		}
		for _, m := range out.Messages {
			w.handle(ctx, aws.ToString(m.MessageId), aws.ToString(m.Body), m.MessageAttributes)
			_, err := w.f.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(w.q.HotURL), ReceiptHandle: m.ReceiptHandle})
			require.NoError(w.t, err)
		}
	}
}

func (w *simWorker) handle(ctx context.Context, id, body string, attrs map[string]sqstypes.MessageAttributeValue) {
	key := keyOf(w.t, body)
	var task struct {
		Tenant string `json:"tenant"`
	}
	require.NoError(w.t, json.Unmarshal([]byte(body), &task))
	// The key as the worker claims it: scoped to the pipeline and the task's tenant.
	scoped := ledger.Key("agent-tasks", task.Tenant, key) // every test here runs agent-tasks (acmeKey)
	now := time.Now()
	if _, err := w.led.Begin(ctx, scoped, id, "", now, time.Minute); errors.Is(err, ledger.ErrDone) {
		w.mu.Lock()
		w.noops++
		w.mu.Unlock()
		return
	}
	if w.fail[key] {
		dl, err := deadletter.EncodeDeadLetter(deadletter.Meta{Reason: deadletter.ReasonBudgetExhausted, IdempotencyKey: key, MessageID: id, Tenant: task.Tenant}, attributesFromSQS(attrs))
		require.NoError(w.t, err)
		w.f.put(w.q.DLQURL, body, dl, "")
		_, err = w.led.DeadLettered(ctx, scoped, deadletter.ReasonBudgetExhausted, now)
		require.NoError(w.t, err)
		return
	}
	require.NoError(w.t, w.led.Complete(ctx, scoped, id, "receipt-"+key, now))
	w.mu.Lock()
	w.processed[key]++
	w.mu.Unlock()
}

func TestSelectInterruptedBetweenSendAndDelete(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f := newFakeSQS()
	q := f.addPair(p)
	seed(t, f, q, 3, deadletter.ReasonBudgetExhausted)
	r, store, led := newRedriver(t, p, f, q)
	ctx, cancel := context.WithCancel(context.Background())
	var deletes atomic.Int32
	f.OnDelete = func(queue, _ string) error {
		if queue != q.DLQURL {
			return nil
		}
		if deletes.Add(1) == 2 { // the process dies after the second send
			cancel()
			return context.Canceled
		}
		return nil
	}
	req := selReq(p, deadletter.ReasonBudgetExhausted)
	req.Workers = 1 // the crash of the one move in flight
	res, err := r.Select(ctx, req)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 1, res.Moved)
	assert.Equal(t, 1, res.DeleteFailed)
	assert.Len(t, f.snapshot(q.HotURL), 2, "two sent")
	assert.Len(t, f.snapshot(q.DLQURL), 2, "the interrupted one is still in the DLQ, and the unsent one")
	assert.Equal(t, audit.OutcomeFailed, store.all()[len(store.all())-1].Outcome)

	// The worker processes what was sent.
	w := &simWorker{t: t, f: f, q: q, led: led, processed: map[string]int{}}
	w.drain()

	// The hold runs out; the owner reruns.
	f.OnDelete = nil
	f.Expire(q.DLQURL)
	res, err = r.Select(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, 2, res.Moved, "the interrupted one is sent again, and the unsent one")
	assert.Empty(t, f.snapshot(q.DLQURL))
	w.drain()

	// Every key took effect exactly once; the resend was a no-op.
	assert.Equal(t, map[string]int{"budget_exhausted-a": 1, "budget_exhausted-b": 1, "budget_exhausted-c": 1}, w.processed)
	assert.Equal(t, 1, w.noops, "one duplicate, absorbed by the idempotency key")
	e, _, _ := led.Get(context.Background(), acmeKey("budget_exhausted-b"))
	assert.Equal(t, 2, e.RedriveCount, "the redrive count counts both sends")
}

func TestSelectCanary(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	for _, tt := range []struct {
		name      string
		fail      map[string]bool
		wantErr   bool
		wantMoved int // want: moved in all
		wantDLQ   int // want: left in the DLQ afterwards
	}{
		{"canary processed, the rest follows", nil, false, 5, 0},
		{"canary dead-lettered again stops the run", map[string]bool{"budget_exhausted-b": true}, true, 2, 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeSQS()
			q := f.addPair(p)
			seed(t, f, q, 5, deadletter.ReasonBudgetExhausted)
			r, store, led := newRedriver(t, p, f, q)
			w := &simWorker{t: t, f: f, q: q, led: led, fail: tt.fail, processed: map[string]int{}}
			r.cfg.Sleep = func(ctx context.Context, d time.Duration) error { w.drain(); return ctx.Err() }
			req := selReq(p, deadletter.ReasonBudgetExhausted)
			req.Canary = 2
			res, err := r.Select(context.Background(), req)
			require.NotNil(t, res.Canary)
			assert.Equal(t, tt.wantMoved, res.Moved)
			assert.Len(t, f.snapshot(q.DLQURL), tt.wantDLQ)
			var canary audit.Entry
			for _, rec := range store.all() {
				if rec.Action == audit.ActionCanary {
					canary = rec
				}
			}
			if tt.wantErr {
				require.ErrorIs(t, err, ErrCanaryFailed)
				assert.Equal(t, 1, res.Canary.DeadLettered)
				assert.Equal(t, 1, res.Canary.Processed)
				assert.Equal(t, audit.OutcomeFailed, canary.Outcome)
				assert.Equal(t, audit.OutcomeStopped, store.all()[len(store.all())-1].Outcome)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, 2, res.Canary.Processed)
			assert.Equal(t, audit.OutcomeOK, canary.Outcome)
		})
	}
}

func TestSelectCanaryTimesOutWithoutAWorker(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f := newFakeSQS()
	q := f.addPair(p)
	seed(t, f, q, 3, deadletter.ReasonBudgetExhausted)
	r, _, _ := newRedriver(t, p, f, q)
	req := selReq(p, deadletter.ReasonBudgetExhausted)
	req.Canary, req.CanaryTimeout = 1, 10*time.Second
	res, err := r.Select(context.Background(), req)
	require.ErrorIs(t, err, ErrCanaryFailed)
	assert.Contains(t, err.Error(), "no outcome")
	assert.Equal(t, 1, res.Canary.Pending)
	assert.Equal(t, 1, res.Moved)
	assert.Len(t, f.snapshot(q.DLQURL), 2)
}

func TestSelectFIFOGroupAndDedup(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-steps")
	f := newFakeSQS()
	q := f.addPair(p)
	require.True(t, q.FIFO)
	seed(t, f, q, 2, deadletter.ReasonBudgetExhausted)
	var (
		mu   sync.Mutex
		sent []*sqs.SendMessageInput
	)
	f.OnSend = func(_ string, in *sqs.SendMessageInput) { mu.Lock(); sent = append(sent, in); mu.Unlock() }
	r, _, _ := newRedriver(t, p, f, q)
	_, err := r.Select(context.Background(), selReq(p, deadletter.ReasonBudgetExhausted))
	require.NoError(t, err)
	require.Len(t, sent, 2)
	for _, in := range sent {
		key := keyOf(t, aws.ToString(in.MessageBody))
		want := restore(&letter{Tagged: dlq.Tagged{Message: dlq.Message{MessageID: "x", Attributes: mustEncode(t, key)}}})
		assert.Equal(t, "run-"+key[len(key)-1:], aws.ToString(in.MessageGroupId))
		assert.Equal(t, want.DedupID, aws.ToString(in.MessageDeduplicationId), "derived from the original message id")
		assert.Len(t, aws.ToString(in.MessageDeduplicationId), 64)
	}
}

func mustEncode(t *testing.T, key string) map[string]deadletter.Attribute {
	attrs, err := deadletter.EncodeDeadLetter(deadletter.Meta{Reason: deadletter.ReasonBudgetExhausted, MessageID: "orig-" + key}, nil)
	require.NoError(t, err)
	return attrs
}

func TestSelectConcurrentRunsOfTheSameGroup(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f := newFakeSQS()
	q := f.addPair(p)
	seed(t, f, q, 20, deadletter.ReasonBudgetExhausted)
	seed(t, f, q, 5, deadletter.ReasonPolicyLimit)
	led := ledger.NewMemory()
	var wg sync.WaitGroup
	results := make([]*SelectResult, 2)
	for i := range results {
		r, _, _ := newRedriver(t, p, f, q)
		r.cfg.Ledger = led
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := r.Select(context.Background(), selReq(p, deadletter.ReasonBudgetExhausted))
			// The other run holds letters: this one saw part of the DLQ.
			assert.True(t, err == nil || RefusalCode(err) == redrivetype.CodeNothingSelected || errors.Is(err, triage.ErrScanPartial), err)
			results[i] = res
		}()
	}
	wg.Wait()
	moved := results[0].Moved + results[1].Moved
	hot := f.snapshot(q.HotURL)
	keys := map[string]int{}
	for _, m := range hot {
		keys[keyOf(t, m.body)]++
	}
	dups := len(hot) - len(keys)
	t.Logf("run 1 moved %d, run 2 moved %d, duplicates %d", results[0].Moved, results[1].Moved, dups)
	assert.Equal(t, 20, len(keys), "no message lost")
	assert.Equal(t, moved, len(hot))
	assert.Equal(t, 0, dups, "each dead letter is held by one run while it moves")
	assert.Len(t, f.snapshot(q.DLQURL), 5, "the other group stays")
}

func TestSelectInAWSChecksTheCaller(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	for _, tt := range []struct {
		name, caller, roleTag string
		code                  redrivetype.Code // want: refusal code, "" for allowed
	}{
		{"the redrive role", "arn:aws:sts::000000000000:assumed-role/AgentTasksRedrive/alice", "arn:aws:iam::000000000000:role/AgentTasksRedrive", ""},
		{"another role", "arn:aws:sts::000000000000:assumed-role/PowerUser/alice", "arn:aws:iam::000000000000:role/AgentTasksRedrive", redrivetype.CodeIdentity},
		{"no role tag on the DLQ", "arn:aws:sts::000000000000:assumed-role/AgentTasksRedrive/alice", "", redrivetype.CodeIdentity},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeSQS()
			q := f.addPair(p)
			seed(t, f, q, 2, deadletter.ReasonBudgetExhausted)
			if tt.roleTag != "" {
				f.Queue(q.DLQURL).Tags[pipeline.TagRedriveRole] = tt.roleTag
			}
			r, _, _ := newRedriver(t, p, f, q)
			r.local, r.cfg.STS = false, fakeSTS{arn: tt.caller}
			res, err := r.Select(context.Background(), selReq(p, deadletter.ReasonBudgetExhausted))
			if tt.code == "" {
				require.NoError(t, err)
				assert.Equal(t, 2, res.Moved)
				return
			}
			assert.Equal(t, tt.code, RefusalCode(err), err)
			assert.Empty(t, f.snapshot(q.HotURL))
		})
	}
}

// The fake hands out the oldest visible letters first, so letters released
// at once would be received again and again; the chosen ones behind them are
// reached only because the pass keeps what it leaves hidden until it ends.
func TestSelectReachesLettersBehindManyOthers(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f := newFakeSQS()
	q := f.addPair(p)
	seed(t, f, q, 20, deadletter.ReasonPolicyLimit, deadletter.ReasonSchemaInvalid, deadletter.ReasonToolUnknown)
	seed(t, f, q, 4, deadletter.ReasonBudgetExhausted)
	r, _, _ := newRedriver(t, p, f, q)

	res, err := r.Select(context.Background(), selReq(p, deadletter.ReasonBudgetExhausted))
	require.NoError(t, err)
	assert.Equal(t, 4, res.Moved)
	assert.Equal(t, 64, res.Seen)
	assert.Equal(t, 60, res.Released)
	assert.Empty(t, res.Partial)
	dlq := f.snapshot(q.DLQURL)
	require.Len(t, dlq, 60)
	for _, m := range dlq {
		assert.False(t, m.visibleAt.After(f.Now()), "released when the pass ended: %s", m.id)
	}
}

// slowReceives makes every receive take longer than the hold, as a long pass
// at a low rate does: the letters the pass holds come back while it runs.
type slowReceives struct {
	*fakeSQS
	step time.Duration
}

func (s *slowReceives) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opt ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	s.Advance(s.step)
	return s.fakeSQS.ReceiveMessage(ctx, in, opt...)
}

func TestSelectHoldLapsingMidPassLosesNothing(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f := newFakeSQS()
	q := f.addPair(p)
	seed(t, f, q, 40, deadletter.ReasonPolicyLimit)
	seed(t, f, q, 3, deadletter.ReasonBudgetExhausted)
	r, _, _ := newRedriver(t, p, f, q)
	r.cfg.SQS = &slowReceives{fakeSQS: f, step: 300 * time.Millisecond}
	req := selReq(p, deadletter.ReasonBudgetExhausted)
	req.Hold = time.Second

	res, err := r.Select(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, 3, res.Moved)
	assert.Equal(t, 43, res.Seen, "a letter back from its hold is not counted twice")
	assert.Equal(t, 40, res.Released)
	assert.Empty(t, res.Partial)
	dlq := f.snapshot(q.DLQURL)
	require.Len(t, dlq, 40)
	for _, m := range dlq {
		assert.False(t, m.visibleAt.After(f.Now()), "released with its latest receipt handle: %s", m.id)
	}
}

// An interrupted pass still gives back the letters it held.
func TestSelectInterruptedReleasesWhatItHeld(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f := newFakeSQS()
	q := f.addPair(p)
	seed(t, f, q, 15, deadletter.ReasonPolicyLimit)
	seed(t, f, q, 2, deadletter.ReasonBudgetExhausted)
	r, _, _ := newRedriver(t, p, f, q)
	ctx, cancel := context.WithCancel(context.Background())
	r.cfg.SQS = &cancelAfterReceives{fakeSQS: f, left: 1, cancel: cancel}

	res, err := r.Select(ctx, selReq(p, deadletter.ReasonBudgetExhausted))
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, "interrupted", res.Partial)
	assert.Equal(t, 10, res.Released)
	dlq := f.snapshot(q.DLQURL)
	require.Len(t, dlq, 17)
	for _, m := range dlq {
		assert.False(t, m.visibleAt.After(f.Now()), "visible again: %s", m.id)
	}
}

type cancelAfterReceives struct {
	*fakeSQS
	left   int
	cancel context.CancelFunc
}

func (c *cancelAfterReceives) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opt ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	out, err := c.fakeSQS.ReceiveMessage(ctx, in, opt...)
	if c.left--; c.left <= 0 {
		c.cancel()
	}
	return out, err
}

// hide makes every message of url in flight for d (another reader holds
// it, or a receive whose response was lost).
func (f *fakeSQS) hide(url string, d time.Duration) {
	now := f.Now()
	for _, m := range f.Queue(url).Messages {
		m.VisibleAt = now.Add(d)
	}
}

// A pass that cannot see every dead letter never says "nothing selected"
// (which blames the selection) nor succeeds: its outcome is a partial scan,
// with the counts and when to retry, audited as partial; nothing moves.
func TestSelectPartialScanIsItsOwnOutcome(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	tests := []struct {
		name   string
		dryRun bool
		hidden int // letters in flight elsewhere when the pass starts
		want   audit.Outcome
	}{
		{"every letter in flight", false, 3, audit.OutcomePartial},
		{"every letter in flight, dry run", true, 3, audit.OutcomeDryRun},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeSQS()
			q := f.addPair(p)
			f.Queue(q.DLQURL).Attributes["VisibilityTimeout"] = "90"
			seed(t, f, q, tt.hidden, deadletter.ReasonBudgetExhausted)
			f.hide(q.DLQURL, time.Hour)
			r, store, _ := newRedriver(t, p, f, q)
			req := selReq(p, deadletter.ReasonBudgetExhausted)
			req.DryRun = tt.dryRun
			res, err := r.Select(context.Background(), req)
			require.ErrorIs(t, err, triage.ErrScanPartial)
			assert.NotErrorIs(t, err, ErrRefused, "not a refusal: the selection was sound")
			assert.Empty(t, RefusalCode(err))
			var pe *redrivetype.PartialError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, 0, pe.Seen)
			assert.Equal(t, tt.hidden, pe.Depth)
			assert.Equal(t, 90*time.Second, pe.RetryAfter, "the DLQ's visibility timeout, longer than the pass's hold")
			assert.Contains(t, err.Error(), fmt.Sprintf("saw 0 of about %d dead letters", tt.hidden))
			assert.Contains(t, err.Error(), "held (in flight)")
			assert.Contains(t, err.Error(), "retry after 1m30s")
			assert.Equal(t, 0, res.Moved)
			assert.Len(t, f.snapshot(q.DLQURL), tt.hidden, "nothing moved, nothing lost")
			recs := store.all()
			require.NotEmpty(t, recs)
			last := recs[len(recs)-1]
			assert.Equal(t, tt.want, last.Outcome)
			assert.Contains(t, last.Error, "partial scan")
		})
	}
}

// fastWorker is a worker quicker than the pass: before each receive of
// the DLQ it drains the hot queue (its first drains only, so that a pass
// that moved letters again and again would still end), and what it fails
// is back in the DLQ before the pass looks again.
type fastWorker struct {
	*fakeSQS
	w      *simWorker
	dlq    string
	drains int
}

func (s *fastWorker) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opt ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	if aws.ToString(in.QueueUrl) == s.dlq && s.drains < 20 {
		s.drains++
		s.w.drain()
	}
	return s.fakeSQS.ReceiveMessage(ctx, in, opt...)
}

// A letter the pass moved that the worker dead-letters again while the
// pass still runs is a new message in the DLQ; the pass must not take it
// for another letter of the group and move it again (a canary larger than
// the group redrove its own letters twice, a select looped them until
// redrive_loop). It stays in the DLQ, counted as returned, and a canary
// counts it dead-lettered again.
func TestSelectNeverMovesALetterTwice(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	fail := map[string]bool{"budget_exhausted-a": true, "budget_exhausted-b": true, "budget_exhausted-c": true}
	for _, canary := range []int{0, 5} {
		t.Run(fmt.Sprintf("canary %d", canary), func(t *testing.T) {
			t.Parallel()
			f := newFakeSQS()
			q := f.addPair(p)
			seed(t, f, q, 3, deadletter.ReasonBudgetExhausted)
			r, _, led := newRedriver(t, p, f, q)
			w := &simWorker{t: t, f: f, q: q, led: led, fail: fail, processed: map[string]int{}}
			r.cfg.SQS = &fastWorker{fakeSQS: f, w: w, dlq: q.DLQURL}
			r.cfg.Sleep = func(ctx context.Context, d time.Duration) error { w.drain(); return ctx.Err() }
			req := selReq(p, deadletter.ReasonBudgetExhausted)
			req.Canary = canary

			res, err := r.Select(context.Background(), req)
			if canary > 0 {
				require.ErrorIs(t, err, ErrCanaryFailed)
				require.NotNil(t, res.Canary)
				assert.Equal(t, 3, res.Canary.Moved)
				assert.Equal(t, 3, res.Canary.DeadLettered)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, 3, res.Moved, "each letter moved once")
			assert.Equal(t, 3, res.Seen)
			assert.Len(t, f.snapshot(q.DLQURL), 3, "each dead-lettered again once")
			for key := range fail {
				e, _, err := led.Get(context.Background(), acmeKey(key))
				require.NoError(t, err)
				assert.Equal(t, 1, e.RedriveCount, key)
			}
			assert.Equal(t, 3, res.Returned, "back in the DLQ while the pass ran")
			for _, m := range f.snapshot(q.DLQURL) {
				assert.False(t, m.visibleAt.After(f.Now()), "released when the pass ended: %s", m.id)
			}
		})
	}
}
