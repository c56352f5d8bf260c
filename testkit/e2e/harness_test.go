package e2e_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/functions/sampleworker"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/local/esm"
	"github.com/agentdlq/agentdlq/local/runner"
	"github.com/agentdlq/agentdlq/local/workload"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/testkit/localtest"
	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/dlq"
)

// harness is one test's pipeline on the emulators: fresh queues and ledger
// table, the real worker, and counters of what happened. It is
// localpipeline's setup (the demo's and the load bench's) on a test's own
// queues and table, which the test cleans up.
type harness struct {
	t      *testing.T
	lp     *runner.Local
	cfg    aws.Config
	sqs    *sqs.Client
	p      *pipeline.Pipeline
	q      pipeline.Queues
	table  string
	ledger *countingLedger
	log    *slog.Logger
}

// newHarness builds agent-tasks (or agent-steps when fifo) with the demo
// timings (workload.Quick), the visibility timeout set to vis seconds when
// vis > 0, and mutate applied. A short visibility timeout is for tests that
// wait for redeliveries after whole-batch failures; tests that count exact
// attempts on multi-record batches keep the demo's 30 s, so that a slow
// batch on a loaded machine is never delivered twice.
func newHarness(t *testing.T, fifo bool, vis int, mutate func(*pipeline.Pipeline)) *harness {
	t.Helper()
	cfg := localtest.AWS(t)
	f, err := pipeline.Load("../../" + pipeline.DefaultFile)
	require.NoError(t, err)
	name := "agent-tasks"
	if fifo {
		name = "agent-steps"
	}
	base, err := f.Get(name)
	require.NoError(t, err)
	p := workload.Quick(base)
	if vis > 0 {
		// Shorter than six worker timeouts: fine here, the handlers take milliseconds.
		p.VisibilityTimeoutSeconds = vis
	}
	if mutate != nil {
		mutate(p)
	}
	q := localtest.Queues(t, cfg, p)
	h := &harness{t: t, cfg: cfg, p: p,
		log: slog.New(slog.NewJSONHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	h.lp, err = runner.Setup(context.Background(), runner.Config{AWS: cfg, Pipeline: p, Queues: &q, Table: localtest.Table(t, cfg),
		WorkerVersion: "e2e", Logger: h.log,
		WrapLedger: func(c *ledger.Counting) ledger.Ledger { h.ledger = &countingLedger{Counting: c}; return h.ledger }})
	require.NoError(t, err)
	h.sqs, h.q, h.table = h.lp.SQS, h.lp.Queues, h.lp.Table
	return h
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) { w.t.Log(string(b)); return len(b), nil }

// worker builds the real worker on the harness's queues and ledger; opts
// change its config (fault wrappers).
func (h *harness) worker(opts ...func(*sampleworker.Config)) *sampleworker.Worker {
	h.t.Helper()
	wc := sampleworker.Config{Pipeline: h.p, Queues: h.q, SQS: h.sqs, Ledger: h.ledger, WorkerVersion: "e2e",
		Logger: h.log, Metrics: io.Discard}
	for _, o := range opts {
		o(&wc)
	}
	w, err := sampleworker.New(wc)
	require.NoError(h.t, err)
	return w
}

func (h *harness) send(tasks ...workload.Task) []workload.Sent {
	h.t.Helper()
	sent, err := h.lp.Send(context.Background(), tasks, 2)
	require.NoError(h.t, err)
	return sent
}

// drain runs handler through the mapping until the hot queue is drained,
// counting invocations per message.
func (h *harness) drain(handler esm.Handler) esm.Stats {
	h.t.Helper()
	return h.drainWith(h.sqs, handler)
}

// drainWith is drain with another SQS client for the mapping (a fault wrapper).
func (h *harness) drainWith(api esm.API, handler esm.Handler) esm.Stats {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pollers := min(esm.FromPipeline(h.p, h.q, h.cfg.Region).Pollers, 4)
	stats, _, err := h.lp.Drain(ctx, runner.DrainOptions{Handler: handler, SQS: api, Pollers: pollers, IdleTimeout: 30 * time.Second})
	require.NoError(h.t, err)
	require.NoError(h.t, ctx.Err(), "the pipeline did not drain in time")
	return stats
}

func (h *harness) attemptsOf(id string) int { return h.lp.Attempts(id) }

// deadLetters scans the DLQ read-only and tags every message as triage does.
func (h *harness) deadLetters() []dlq.Tagged {
	h.t.Helper()
	tagged, err := h.lp.DeadLetters(context.Background(), triage.ScanOptions{VisibilityTimeout: 5 * time.Second})
	require.NoError(h.t, err)
	return tagged
}

func (h *harness) depth(url string) int {
	h.t.Helper()
	n, err := h.lp.Depth(context.Background(), url)
	require.NoError(h.t, err)
	return n
}

// account says where every sent message ended up.
func (h *harness) account(sent []workload.Sent) workload.Accounting {
	h.t.Helper()
	ctx := context.Background()
	var ledgerErr error
	acct, err := h.lp.Account(ctx, sent, h.deadLetters(), h.lp.DoneInLedger(ctx, &ledgerErr))
	require.NoError(h.t, err)
	require.NoError(h.t, ledgerErr)
	return acct
}

// byOriginal indexes tagged dead letters by the hot-queue message id they were.
func byOriginal(tagged []dlq.Tagged) map[string]dlq.Tagged {
	out := map[string]dlq.Tagged{}
	for _, t := range tagged {
		id := t.MessageID
		if t.Meta != nil && t.Meta.MessageID != "" {
			id = t.Meta.MessageID
		}
		out[id] = t
	}
	return out
}

// countingLedger is ledger.Counting over the DynamoDB ledger (effects per
// key) that can also fail calls.
type countingLedger struct {
	*ledger.Counting
	mu sync.Mutex
	// failBegin, when set, is asked before each Begin and each
	// CompleteReadOnly (a read-only tool's one ledger write, its claim and
	// settle at once); a non-nil error is returned instead.
	failBegin func(key string) error
}

var _ ledger.Ledger = (*countingLedger)(nil)

func (c *countingLedger) Begin(ctx context.Context, key, owner, digest string, now time.Time, lease time.Duration) (ledger.Entry, error) {
	c.mu.Lock()
	fail := c.failBegin
	c.mu.Unlock()
	if fail != nil {
		if err := fail(key); err != nil {
			return ledger.Entry{}, err
		}
	}
	return c.Counting.Begin(ctx, key, owner, digest, now, lease)
}

func (c *countingLedger) CompleteReadOnly(ctx context.Context, key, owner, digest, receipt string, now time.Time) (ledger.Entry, error) {
	c.mu.Lock()
	fail := c.failBegin
	c.mu.Unlock()
	if fail != nil {
		if err := fail(key); err != nil {
			return ledger.Entry{}, err
		}
	}
	return c.Counting.CompleteReadOnly(ctx, key, owner, digest, receipt, now)
}

// counts is the effects recorded per key.
func (c *countingLedger) counts() (started, completed map[string]int) {
	started, completed, _ = c.Counts()
	return started, completed
}

// faultySQS wraps the worker's SQS client: SendMessageBatch to the DLQ
// fails while sendFault returns an error (sends counts the calls).
type faultySQS struct {
	*sqs.Client
	dlqURL    string
	mu        sync.Mutex
	sends     int // DLQ sends attempted
	sendFault func(n int) error
}

func (f *faultySQS) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	if aws.ToString(in.QueueUrl) == f.dlqURL {
		f.mu.Lock()
		f.sends++
		n := f.sends
		f.mu.Unlock()
		if err := f.sendFault(n); err != nil {
			return nil, err
		}
	}
	return f.Client.SendMessageBatch(ctx, in, opts...)
}

// lossyDeletes wraps the mapping's SQS client: the first `drop`
// DeleteMessageBatch calls are lost (nothing deleted, an error returned), as
// when an ack never reaches SQS.
type lossyDeletes struct {
	*sqs.Client
	mu      sync.Mutex
	drop    int
	dropped int
}

func (l *lossyDeletes) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	l.mu.Lock()
	if l.dropped < l.drop {
		l.dropped++
		l.mu.Unlock()
		return nil, errors.New("connection reset by peer (injected: the ack is lost)")
	}
	l.mu.Unlock()
	return l.Client.DeleteMessageBatch(ctx, in, opts...)
}

// lkey is the ledger key of task: its idempotency key scoped to the
// harness's pipeline and the task's tenant, as the worker writes it.
func (h *harness) lkey(task workload.Task) string {
	return ledger.Key(h.p.Name, task.Tenant, task.Key)
}
