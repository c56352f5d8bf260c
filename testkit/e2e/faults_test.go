package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/functions/sampleworker"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/local/topology"
	"github.com/agentdlq/agentdlq/local/workload"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/testkit/localtest"
	"github.com/agentdlq/agentdlq/triage"
)

// Fault: poison input — every kind of body that can never succeed, mixed
// into batches with valid tasks. Must hold: each poison message is
// dead-lettered with its own reason after exactly one handler attempt, the
// valid tasks of the same batches are processed, and no batch fails as a whole.
func TestFaultPoisonInput(t *testing.T) {
	t.Parallel()
	h := newHarness(t, false, 0, nil)
	prefix := localtest.Unique("poison")
	var tasks []workload.Task
	poison := []workload.Kind{workload.JSONInvalid, workload.SchemaInvalid, workload.ToolUnknown, workload.ToolVersionUnsupported,
		workload.SignatureInvalid, workload.GuardrailReject, workload.PolicyLimit, workload.Unclassified, workload.Panic}
	for i, k := range poison {
		tasks = append(tasks, workload.Make(prefix, 2*i, k, 0), workload.Make(prefix, 2*i+1, workload.OK, 0))
	}
	sent := h.send(tasks...)
	stats := h.drain(h.worker().Handle)
	assert.Zero(t, stats.BatchErrors)
	for _, s := range sent {
		assert.Equal(t, 1, h.attemptsOf(s.MessageID), "%s: one handler attempt", s.Task.Kind)
	}
	acct := h.account(sent)
	assert.True(t, acct.AddsUp(), acct.Line())
	assert.Empty(t, acct.Unexpected)
	assert.Equal(t, len(poison), acct.Processed)
	assert.Equal(t, len(poison), acct.DeadLettered)
}

// Fault: transient exhaustion — an upstream that answers 429 on every
// receive. Must hold: exactly maxReceiveCount handler attempts with the
// visibility backoff between them; then the worker itself dead-letters the
// message as budget_exhausted with the attempt count, so that it does not
// reach the DLQ through the redrive policy without a reason.
func TestFaultTransientExhaustion(t *testing.T) {
	t.Parallel()
	h := newHarness(t, false, 0, nil)
	prefix := localtest.Unique("exhaust")
	sent := h.send(workload.Make(prefix, 0, workload.BudgetExhausted, 0), workload.Make(prefix, 1, workload.BudgetExhausted, 0))
	h.drain(h.worker().Handle)
	dead := byOriginal(h.deadLetters())
	for _, s := range sent {
		assert.Equal(t, h.p.MaxReceiveCount, h.attemptsOf(s.MessageID))
		d, ok := dead[s.MessageID]
		require.True(t, ok)
		assert.Equal(t, deadletter.ReasonBudgetExhausted, d.Reason)
		assert.False(t, d.Inferred)
		require.NotNil(t, d.Meta)
		assert.Equal(t, h.p.MaxReceiveCount, d.Meta.Attempts)
		assert.Equal(t, deadletter.NextRetry, d.Meta.NextAction)
	}
}

// Fault: the tool succeeds but the ack is lost (the delete never reaches
// SQS). Must hold: the message is delivered again after its visibility
// timeout and the redelivery is a no-op through the ledger: the effect is
// recorded once, the message ends deleted, nothing is dead-lettered.
func TestFaultAckLost(t *testing.T) {
	t.Parallel()
	h := newHarness(t, false, 4, nil)
	task := workload.Make(localtest.Unique("acklost"), 0, workload.OKMutating, 0)
	sent := h.send(task)
	lossy := &lossyDeletes{Client: h.sqs, drop: 1}
	stats := h.drainWith(lossy, h.worker().Handle)
	assert.Equal(t, int64(1), stats.DeleteErrors)
	assert.Equal(t, 2, h.attemptsOf(sent[0].MessageID), "delivered again")
	started, completed := h.ledger.counts()
	assert.Equal(t, 1, started[h.lkey(task)], "the effect happened once")
	assert.Equal(t, 1, completed[h.lkey(task)])
	assert.Zero(t, h.depth(h.q.HotURL))
	assert.Empty(t, h.deadLetters())
}

// Fault: the DLQ send fails (throttled, twice). Must hold: the poison
// message is not acknowledged while its dead letter is not stored — it
// stays on the hot queue and is retried — and once the send succeeds it is
// dead-lettered with its own reason. Nothing is lost.
func TestFaultDLQSendFails(t *testing.T) {
	t.Parallel()
	h := newHarness(t, false, 4, nil)
	task := workload.Make(localtest.Unique("dlqsend"), 0, workload.SchemaInvalid, 0)
	sent := h.send(task)
	f := &faultySQS{Client: h.sqs, dlqURL: h.q.DLQURL, sendFault: func(n int) error {
		if n <= 2 {
			return &smithy.GenericAPIError{Code: "ThrottlingException", Message: "rate exceeded (injected)", Fault: smithy.FaultServer}
		}
		return nil
	}}
	h.drain(h.worker(func(c *sampleworker.Config) { c.SQS = f }).Handle)
	assert.Equal(t, 3, f.sends)
	assert.Equal(t, 3, h.attemptsOf(sent[0].MessageID))
	dead := h.deadLetters()
	require.Len(t, dead, 1)
	assert.Equal(t, deadletter.ReasonSchemaInvalid, dead[0].Reason)
	assert.Equal(t, task.Body, dead[0].Body)
	assert.Zero(t, h.depth(h.q.HotURL))
}

// Fault: the ledger is unavailable (throttled) for the first two
// deliveries of each task. Must hold: the records are retried, never
// dead-lettered for it and never run without the ledger; when the ledger
// is back each task is processed once.
func TestFaultLedgerUnavailable(t *testing.T) {
	t.Parallel()
	h := newHarness(t, false, 4, nil)
	prefix := localtest.Unique("ledger")
	tasks := []workload.Task{workload.Make(prefix, 0, workload.OK, 0), workload.Make(prefix, 1, workload.OKMutating, 0)}
	var mu sync.Mutex
	calls := map[string]int{}
	h.ledger.failBegin = func(key string) error {
		mu.Lock()
		defer mu.Unlock()
		calls[key]++
		if calls[key] <= 2 {
			return fmt.Errorf("%w: ProvisionedThroughputExceededException (injected)", ledger.ErrUnavailable)
		}
		return nil
	}
	sent := h.send(tasks...)
	h.drain(h.worker().Handle)
	started, completed := h.ledger.counts()
	for _, s := range sent {
		assert.Equal(t, 3, h.attemptsOf(s.MessageID))
		assert.Equal(t, 1, completed[h.lkey(s.Task)])
	}
	assert.Equal(t, 1, started[h.lkey(tasks[1])])
	assert.Empty(t, h.deadLetters())
	assert.Zero(t, h.depth(h.q.HotURL))
}

// Fault: credentials and permissions. (a) The tool's credentials are
// refused on every receive: retried inside the budget (a fix may land),
// then dead-lettered as auth_config with next action retry_after_fix.
// (b) The worker's own SQS permission to send to the DLQ is denied: the
// worker never acknowledges the poison it cannot dead-letter; the broker's
// redrive policy moves it after maxReceiveCount (receive_limit). Nothing is lost.
func TestFaultCredentialsAndPermissions(t *testing.T) {
	t.Parallel()
	t.Run("tool credentials refused", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, false, 0, nil)
		sent := h.send(workload.Make(localtest.Unique("auth"), 0, workload.AuthConfig, 0))
		h.drain(h.worker().Handle)
		assert.Equal(t, h.p.MaxReceiveCount, h.attemptsOf(sent[0].MessageID))
		dead := h.deadLetters()
		require.Len(t, dead, 1)
		assert.Equal(t, deadletter.ReasonAuthConfig, dead[0].Reason)
		require.NotNil(t, dead[0].Meta)
		assert.Equal(t, deadletter.NextRetryAfter, dead[0].Meta.NextAction)
	})
	t.Run("DLQ send access denied", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, false, 2, nil)
		task := workload.Make(localtest.Unique("denied"), 0, workload.ToolUnknown, 0)
		sent := h.send(task)
		f := &faultySQS{Client: h.sqs, dlqURL: h.q.DLQURL, sendFault: func(int) error {
			return &smithy.GenericAPIError{Code: "AccessDenied", Message: "not authorized to perform sqs:SendMessage (injected)", Fault: smithy.FaultClient}
		}}
		h.drain(h.worker(func(c *sampleworker.Config) { c.SQS = f }).Handle)
		assert.Equal(t, h.p.MaxReceiveCount, h.attemptsOf(sent[0].MessageID))
		dead := h.deadLetters()
		require.Len(t, dead, 1)
		assert.Equal(t, deadletter.ReasonReceiveLimit, dead[0].Reason, "moved by the broker, reason inferred")
		assert.Equal(t, task.Body, dead[0].Body)
	})
}

// Fault: the worker crashes mid-batch — it handled the first half of the
// batch (their effects are in the ledger) and then the process died before
// returning. Must hold: nothing of the batch is deleted; on redelivery the
// finished half are no-ops through the ledger and the rest run; every
// task's effect is recorded exactly once; nothing is dead-lettered or lost.
func TestFaultWorkerCrashMidBatch(t *testing.T) {
	t.Parallel()
	h := newHarness(t, false, 2, func(p *pipeline.Pipeline) { p.BatchWindowSeconds = 1 })
	prefix := localtest.Unique("midbatch")
	var tasks []workload.Task
	for i := range 10 {
		tasks = append(tasks, workload.Make(prefix, i, workload.OKMutating, 0))
	}
	sent := h.send(tasks...)
	w := h.worker()
	var once sync.Once
	var crashed atomic.Bool
	h.drain(func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		crash := false
		once.Do(func() { crash = len(ev.Records) > 1 })
		if !crash {
			return w.Handle(ctx, ev)
		}
		crashed.Store(true)
		half := events.SQSEvent{Records: ev.Records[:len(ev.Records)/2]}
		if _, err := w.Handle(ctx, half); err != nil {
			return events.SQSEventResponse{}, err
		}
		panic("worker process killed mid-batch (injected)")
	})
	require.True(t, crashed.Load(), "the crash was injected")
	started, completed := h.ledger.counts()
	for _, s := range sent {
		assert.Equal(t, 1, started[h.lkey(s.Task)], s.Task.TaskID)
		assert.Equal(t, 1, completed[h.lkey(s.Task)], s.Task.TaskID)
	}
	acct := h.account(sent)
	assert.True(t, acct.AddsUp(), acct.Line())
	assert.Equal(t, len(sent), acct.Processed)
	assert.Zero(t, acct.DeadLettered)
}

// Fault: duplicate delivery — the producer sent the same task three times
// and concurrent pollers receive the copies at once. Must hold: the tool's
// effect happens once (one StartEffect, one Complete for the key), every
// copy is acknowledged, nothing is dead-lettered.
func TestFaultDuplicateDelivery(t *testing.T) {
	t.Parallel()
	h := newHarness(t, false, 2, nil)
	task := workload.Make(localtest.Unique("dupe"), 0, workload.OKMutating, 0)
	sent := h.send(task, task, task)
	h.drain(h.worker().Handle)
	started, completed := h.ledger.counts()
	assert.Equal(t, 1, started[h.lkey(task)])
	assert.Equal(t, 1, completed[h.lkey(task)])
	acct := h.account(sent)
	assert.Equal(t, 3, acct.Processed, acct.Line())
	assert.Zero(t, h.depth(h.q.HotURL))
	assert.Empty(t, h.deadLetters())
}

func newRedriver(t *testing.T, h *harness) *redrive.Redriver {
	t.Helper()
	return newRedriverTo(t, h, h.q.HotURL, h.q.HotARN)
}

// newRedriverTo wires a Redriver of h's DLQ whose hot queue is hotURL/hotARN.
func newRedriverTo(t *testing.T, h *harness, hotURL, hotARN string) *redrive.Redriver {
	t.Helper()
	r, err := redrive.New(redrive.Config{
		Pipeline: h.p,
		Queues:   pipeline.Queues{HotURL: hotURL, HotARN: hotARN, DLQURL: h.q.DLQURL, DLQARN: h.q.DLQARN, FIFO: h.q.FIFO},
		SQS:      h.sqs, Ledger: h.ledger,
		Audit:  &audit.Auditor{Store: &audit.FileStore{Path: filepath.Join(t.TempDir(), "audit.jsonl")}, Logger: h.log},
		Logger: h.log,
	})
	require.NoError(t, err)
	return r
}

// Fault: two operators run the same selective redrive at once. Must hold:
// every dead letter of the group goes back to the hot queue exactly once
// (the hold hides a received dead letter from the other run), byte-identical,
// with its redrive counted once in the ledger; the DLQ ends empty.
func TestFaultConcurrentSelectiveRedrive(t *testing.T) {
	t.Parallel()
	h := newHarness(t, false, 3, nil)
	prefix := localtest.Unique("concur")
	var tasks []workload.Task
	for i := range 6 {
		tasks = append(tasks, workload.Make(prefix, i, workload.BudgetExhausted, 0))
	}
	h.send(tasks...)
	h.drain(h.worker().Handle)
	require.Len(t, h.deadLetters(), 6)

	r := newRedriver(t, h)
	req := redrive.SelectRequest{Who: redrive.Who{Owner: h.p.Owner, Why: "upstream 429s fixed (e2e)"},
		Reasons: []deadletter.Reason{deadletter.ReasonBudgetExhausted}, Rate: 100}
	var wg sync.WaitGroup
	results := make([]*redrive.SelectResult, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = r.Select(context.Background(), req)
		}()
	}
	wg.Wait()
	moved := 0
	for i := range 2 {
		if errs[i] != nil {
			// The run that found nothing left to move says so, or that it
			// saw only part of the DLQ (the other run held letters).
			assert.True(t, errors.Is(errs[i], redrive.ErrRefused) || errors.Is(errs[i], triage.ErrScanPartial), errs[i])
		}
		if results[i] != nil {
			moved += results[i].Moved
		}
	}
	assert.Equal(t, 6, moved, "each dead letter moved once across both runs")
	assert.Zero(t, h.depth(h.q.DLQURL))

	bodies := map[string]int{}
	for range 3 {
		out, err := h.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(h.q.HotURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 60})
		require.NoError(t, err)
		for _, m := range out.Messages {
			bodies[aws.ToString(m.Body)]++
		}
	}
	require.Len(t, bodies, 6)
	for _, task := range tasks {
		assert.Equal(t, 1, bodies[task.Body], "byte-identical, once")
		e, ok, err := h.ledger.Get(context.Background(), h.lkey(task))
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, 1, e.RedriveCount)
	}
}

// Fault: dead letters close to retention expiry (a DLQ whose retention is
// inside the warning window). Must hold: triage reports every one of them
// as expiring soon with its expiry time, and its scan changes nothing: the
// DLQ holds the same messages, visible, afterwards.
func TestFaultNearRetentionExpiry(t *testing.T) {
	t.Parallel()
	h := newHarness(t, false, 3, func(p *pipeline.Pipeline) {
		p.RetentionHours, p.DLQRetentionHours = 12, 24 // the warning window is 48 h
	})
	prefix := localtest.Unique("expiry")
	h.send(workload.Make(prefix, 0, workload.SchemaInvalid, 0), workload.Make(prefix, 1, workload.JSONInvalid, 0))
	h.drain(h.worker().Handle)
	before := h.deadLetters()
	require.Len(t, before, 2)

	rep, err := triage.Run(context.Background(), triage.Config{Pipeline: h.p, DLQURL: h.q.DLQURL, SQS: h.sqs, Logger: h.log})
	require.NoError(t, err)
	assert.Equal(t, 2, rep.Expiry.ExpiringSoon)
	require.Len(t, rep.Expiry.Expiring, 2)
	require.NotNil(t, rep.Expiry.HoursToSoonest)
	assert.InDelta(t, 24, *rep.Expiry.HoursToSoonest, 0.5)
	assert.NotEmpty(t, rep.Attention)

	after := h.deadLetters()
	assert.ElementsMatch(t, ids(before), ids(after), "triage moved nothing")
	assert.Equal(t, 2, h.depth(h.q.DLQURL))
}

func ids(tagged []triage.Tagged) []string {
	var out []string
	for _, t := range tagged {
		out = append(out, t.MessageID)
	}
	return out
}

// Fault: a redrive of a task that fails again. Must hold: the redriven task
// is dead-lettered again with its reason; after the pipeline's
// redrive_loop_after redrives it is dead-lettered as redrive_loop (never
// redriven), and the DLQ holds exactly one copy of it at each step.
func TestFaultRedriveOfATaskThatFailsAgain(t *testing.T) {
	t.Parallel()
	h := newHarness(t, false, 3, nil)
	task := workload.Make(localtest.Unique("loop"), 0, workload.Unclassified, 0)
	h.send(task)
	w := h.worker()
	h.drain(w.Handle)
	r := newRedriver(t, h)
	want := []deadletter.Reason{deadletter.ReasonUnclassified}
	for range h.p.RedriveLoopAfter {
		dead := h.deadLetters()
		require.Len(t, dead, 1)
		_, err := r.Select(context.Background(), redrive.SelectRequest{
			Who:     redrive.Who{Owner: h.p.Owner, Why: "retry after a fix (e2e)"},
			Reasons: []deadletter.Reason{dead[0].Reason}, Rate: 100,
			Ack: redrive.Ack{FixDeployed: "e2e-fix-1"},
		})
		require.NoError(t, err)
		h.drain(w.Handle)
		dead = h.deadLetters()
		require.Len(t, dead, 1)
		want = append(want, dead[0].Reason)
	}
	assert.Equal(t, []deadletter.Reason{deadletter.ReasonUnclassified, deadletter.ReasonUnclassified, deadletter.ReasonRedriveLoop}, want)
	e, ok, err := h.ledger.Get(context.Background(), h.lkey(task))
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, 3, e.DeadLetterCount)
	assert.Equal(t, 2, e.RedriveCount)
	// redrive_loop is never redriven.
	_, err = r.Select(context.Background(), redrive.SelectRequest{
		Who:     redrive.Who{Owner: h.p.Owner, Why: "try again (e2e)"},
		Reasons: []deadletter.Reason{deadletter.ReasonRedriveLoop}, Rate: 100,
		Ack: redrive.Ack{FixDeployed: "e2e-fix-2"},
	})
	assert.ErrorIs(t, err, redrive.ErrRefused)
	assert.Equal(t, 1, h.depth(h.q.DLQURL))
}

// Fault: the DLQ is missing or misnamed. Must hold: resolving the
// pipeline's queues fails with ErrNotFound before anything is received (the
// `agentdlq work` path), so nothing is acknowledged; a worker without a DLQ
// is refused at construction; and a worker whose DLQ URL is wrong never
// acknowledges the poison it cannot dead-letter — the broker moves it to the
// real DLQ after maxReceiveCount.
func TestFaultDLQMissingOrMisnamed(t *testing.T) {
	t.Parallel()
	h := newHarness(t, false, 2, nil)
	task := workload.Make(localtest.Unique("nodlq"), 0, workload.ToolUnknown, 0)
	sent := h.send(task)

	_, err := topology.ResolveWith(context.Background(), h.sqs, h.p, topology.Override{HotURL: h.q.HotURL, DLQURL: h.q.DLQURL + "-misnamed"})
	require.ErrorIs(t, err, topology.ErrNotFound)
	assert.Equal(t, 1, h.depth(h.q.HotURL), "nothing received")

	_, err = sampleworker.New(sampleworker.Config{Pipeline: h.p, Queues: pipeline.Queues{HotURL: h.q.HotURL}, SQS: h.sqs, Ledger: h.ledger})
	require.Error(t, err, "no DLQ: the worker refuses to start")

	wrong := h.q
	wrong.DLQURL += "-misnamed"
	w := h.worker(func(c *sampleworker.Config) { c.Queues = wrong })
	h.drain(w.Handle)
	assert.Equal(t, h.p.MaxReceiveCount, h.attemptsOf(sent[0].MessageID))
	dead := h.deadLetters()
	require.Len(t, dead, 1)
	assert.Equal(t, deadletter.ReasonReceiveLimit, dead[0].Reason)
	assert.Equal(t, task.Body, dead[0].Body)
}

// Fault: a redrive aimed at the wrong queue. Must hold: a move task whose
// destination is not the DLQ's own source queue is refused before any SQS
// move call, and so is a redrive into a queue whose redrive policy does not
// point at this DLQ; nothing moves.
func TestFaultRedriveToTheWrongQueue(t *testing.T) {
	t.Parallel()
	h := newHarness(t, false, 3, nil)
	other := localtest.Queues(t, h.cfg, h.p) // another pipeline's pair
	h.send(workload.Make(localtest.Unique("wrongq"), 0, workload.BudgetExhausted, 0))
	h.drain(h.worker().Handle)
	require.Equal(t, 1, h.depth(h.q.DLQURL))

	r := newRedriver(t, h)
	_, err := r.Start(context.Background(), redrive.StartRequest{
		Who:  redrive.Who{Owner: h.p.Owner, Why: "e2e"},
		Rate: 10, Destination: other.HotARN,
		Groups: []redrive.Group{{Reason: deadletter.ReasonBudgetExhausted, Count: 1}},
	})
	require.ErrorIs(t, err, redrive.ErrRefused)
	assert.Equal(t, redrive.CodeDestination, redrive.RefusalCode(err))

	mis := newRedriverTo(t, h, other.HotURL, other.HotARN) // its redrive policy names the other DLQ
	_, err = mis.Select(context.Background(), redrive.SelectRequest{
		Who: redrive.Who{Owner: h.p.Owner, Why: "e2e"}, Rate: 10,
		Reasons: []deadletter.Reason{deadletter.ReasonBudgetExhausted},
	})
	require.ErrorIs(t, err, redrive.ErrRefused)
	assert.Equal(t, redrive.CodeDestination, redrive.RefusalCode(err))

	assert.Equal(t, 1, h.depth(h.q.DLQURL), "nothing moved")
	assert.Zero(t, h.depth(other.HotURL))
	assert.Zero(t, h.depth(h.q.HotURL))
}
