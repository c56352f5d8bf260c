package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/agentdlq/agentdlq/breaker/dynamostore"
	"github.com/agentdlq/agentdlq/functions/sampleworker"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/local/esm"
	"github.com/agentdlq/agentdlq/local/topology"
	"github.com/agentdlq/agentdlq/local/workload"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/dlq"
)

// Config says which pipeline to set up, and how.
type Config struct {
	// AWS is required: the clients' configuration, pointed at the emulators.
	AWS aws.Config
	// Pipeline is required: used as given (apply workload.Quick for the
	// demo's short timings).
	Pipeline *pipeline.Pipeline
	// Names is optional (default topology.LocalNames): the queues Setup
	// creates. Ignored when Queues is set.
	Names topology.Names
	// Queues is optional: queues created elsewhere (a test's, cleaned up by
	// it); Setup then creates none.
	Queues *pipeline.Queues
	// Table is optional (default topology.LocalLedgerTable): the ledger
	// table, created when missing.
	Table string
	// WrapLedger is optional: wraps the counting DynamoDB ledger the worker
	// uses (a test's fault injection).
	WrapLedger func(*ledger.Counting) ledger.Ledger
	// WorkerVersion is optional (default "local"): stamped in dlq_meta.
	WorkerVersion string
	// WorkerSQS and WorkerDynamoDB are optional (default: clients of AWS):
	// the clients the worker sends dead letters and calls the ledger with
	// (the load bench puts its chaos proxy in front of them).
	WorkerSQS      *sqs.Client
	WorkerDynamoDB *dynamodb.Client
	// Concurrency is optional (default: the worker's own default, 1); the
	// demo and the bench use sampleworker.LambdaConcurrency.
	Concurrency int
	// Dependencies is optional: the sample dependencies' up/down switches.
	Dependencies sampleworker.DependencyDir
	// Effects is optional: the sample tools' effect store (the local state
	// dir's effects/, as agentdlq work's), which ledger verify reads back.
	Effects sampleworker.Effects
	// Observe is optional: sampleworker.Config.Observe.
	Observe func(tenant, key string, receives int, err error)
	// Logger is optional (default: discarded): the worker's and the
	// mapping's log.
	Logger *slog.Logger
	// Metrics is optional (default io.Discard): the worker's EMF lines.
	Metrics io.Writer
}

// Local is one pipeline on the emulators: its queues, its ledger, the real
// worker, and the handler invocations counted per message.
type Local struct {
	Pipeline *pipeline.Pipeline
	Queues   pipeline.Queues
	Region   string
	SQS      *sqs.Client
	DynamoDB *dynamodb.Client
	Table    string
	// Ledger counts the effects started and completed per key.
	Ledger *ledger.Counting
	Worker *sampleworker.Worker
	Logger *slog.Logger

	mu          sync.Mutex
	attempts    map[string]int // hot-queue message id -> handler invocations
	counted     map[string]int // hot-queue message id -> highest ApproximateReceiveCount delivered
	handlerTime time.Duration
	lastEnd     time.Time // when the last handler invocation returned
}

// Setup creates what cfg names and builds the worker.
func Setup(ctx context.Context, cfg Config) (*Local, error) {
	if cfg.Pipeline == nil {
		return nil, errors.New("localpipeline: Pipeline is required")
	}
	p := cfg.Pipeline
	if cfg.Table == "" {
		cfg.Table = topology.LocalLedgerTable
	}
	if cfg.WorkerVersion == "" {
		cfg.WorkerVersion = "local"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil))
	}
	if cfg.Metrics == nil {
		cfg.Metrics = io.Discard
	}
	l := &Local{Pipeline: p, Region: cfg.AWS.Region, SQS: sqs.NewFromConfig(cfg.AWS), DynamoDB: dynamodb.NewFromConfig(cfg.AWS),
		Table: cfg.Table, Logger: cfg.Logger, attempts: map[string]int{}, counted: map[string]int{}}
	if cfg.Queues != nil {
		l.Queues = *cfg.Queues
	} else {
		names := cfg.Names
		if names.Hot == "" {
			names = topology.LocalNames(p)
		}
		q, err := topology.CreateNamed(ctx, l.SQS, p, names)
		if err != nil {
			return nil, err
		}
		l.Queues = q
	}
	if err := topology.CreateLedgerTable(ctx, l.DynamoDB, cfg.Table); err != nil {
		return nil, err
	}
	ddb, workerSQS := l.DynamoDB, l.SQS
	if cfg.WorkerDynamoDB != nil {
		ddb = cfg.WorkerDynamoDB
	}
	if cfg.WorkerSQS != nil {
		workerSQS = cfg.WorkerSQS
	}
	l.Ledger = ledger.NewCounting(ledger.NewDynamo(ddb, cfg.Table))
	var workerLedger ledger.Ledger = l.Ledger
	if cfg.WrapLedger != nil {
		workerLedger = cfg.WrapLedger(l.Ledger)
	}
	w, err := sampleworker.New(sampleworker.Config{Pipeline: p, Queues: l.Queues, SQS: workerSQS, Ledger: workerLedger,
		BreakerStore:  dynamostore.New(ddb, cfg.Table), // the breakers on the ledger table, as in AWS
		Observe:       cfg.Observe,
		WorkerVersion: cfg.WorkerVersion, Logger: cfg.Logger, Metrics: cfg.Metrics, Concurrency: cfg.Concurrency, Dependencies: cfg.Dependencies,
		Effects: cfg.Effects, DLQMaxMessageBytes: p.DLQMaxMessageBytes()}) // the DLQ's size as the topology made it
	if err != nil {
		return nil, err
	}
	l.Worker = w
	return l, nil
}

// Send puts the tasks on the hot queue with `senders` concurrent senders,
// each task's tenant its MessageGroupId on a standard queue (fair queues,
// workload.FairQueue), as a producer of the pipeline does.
func (l *Local) Send(ctx context.Context, tasks []workload.Task, senders int) ([]workload.Sent, error) {
	return workload.Send(ctx, l.SQS, l.Queues.HotURL, l.Pipeline.FIFO, workload.FairQueue(l.Pipeline, tasks), senders)
}

// DrainOptions bound a drain. Every field is optional.
type DrainOptions struct {
	// Handler is the handler the mapping invokes (default the worker's).
	Handler esm.Handler
	// SQS is the mapping's client (default Local.SQS): a fault wrapper.
	SQS esm.API
	// Pollers overrides the pipeline's max_concurrency when > 0.
	Pollers int
	// IdleTimeout is how long the hot queue stays empty before a drain
	// ends (default 20 s).
	IdleTimeout time.Duration
	// Progress, when set, is called by Drain as Ticks calls it.
	Progress func(deleted int, done bool)
}

// Mapping builds the local event source mapping over the worker (or
// o.Handler), counting handler invocations per message; it runs until
// idle when untilIdle, else until its context ends.
func (l *Local) Mapping(o DrainOptions, untilIdle bool) (*esm.Mapping, esm.Config, error) {
	handler := o.Handler
	if handler == nil {
		handler = l.Worker.Handle
	}
	api := o.SQS
	if api == nil {
		api = l.SQS
	}
	counted := func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		l.mu.Lock()
		for _, r := range ev.Records {
			l.attempts[r.MessageId]++
			if n, err := strconv.Atoi(r.Attributes["ApproximateReceiveCount"]); err == nil {
				l.counted[r.MessageId] = max(l.counted[r.MessageId], n)
			}
		}
		l.mu.Unlock()
		start := time.Now()
		resp, err := handler(ctx, ev)
		l.mu.Lock()
		l.handlerTime += time.Since(start)
		l.lastEnd = time.Now()
		l.mu.Unlock()
		return resp, err
	}
	mc := esm.FromPipeline(l.Pipeline, l.Queues, l.Region)
	if o.Pollers > 0 {
		mc.Pollers = o.Pollers
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = 20 * time.Second
	}
	mc.Logger, mc.UntilIdle, mc.WaitTime, mc.IdleTimeout = l.Logger, untilIdle, time.Second, o.IdleTimeout
	m, err := esm.New(api, counted, mc)
	return m, mc, err
}

// Drain runs the mapping until the hot queue is idle.
func (l *Local) Drain(ctx context.Context, o DrainOptions) (esm.Stats, esm.Config, error) {
	m, mc, err := l.Mapping(o, true)
	if err != nil {
		return esm.Stats{}, mc, err
	}
	stop := Ticks(m, o.Progress)
	st, err := m.Run(ctx)
	stop()
	return st, mc, err
}

// Ticks reports the mapping's deleted count (records acknowledged:
// processed, or dead-lettered by the worker) to fn every 250 ms until the
// returned stop is called, which reports it a last time with done; a nil
// fn: nothing. Call stop once the mapping's Run has returned.
func Ticks(m *esm.Mapping, fn func(deleted int, done bool)) (stop func()) {
	if fn == nil {
		return func() {}
	}
	quit := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				fn(int(m.Stats().Deleted), false)
			}
		}
	}()
	return func() {
		close(quit)
		<-finished
		fn(int(m.Stats().Deleted), true)
	}
}

// LastInvocationEnd is when the last handler invocation returned.
func (l *Local) LastInvocationEnd() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastEnd
}

// Attempts returns the handler invocations of a hot-queue message.
func (l *Local) Attempts(messageID string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.attempts[messageID]
}

// LostReceives is how many receives of a hot-queue message the broker
// counted (its ApproximateReceiveCount at its last delivery) beyond the
// deliveries the handler saw: receives whose response never reached the
// mapping, which left the message in flight for its visibility timeout.
func (l *Local) LostReceives(messageID string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return max(0, l.counted[messageID]-l.attempts[messageID])
}

// HandlerTime is the time spent in the handler, summed over invocations.
func (l *Local) HandlerTime() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.handlerTime
}

// DeadLetters scans the DLQ read-only and tags every message as triage does.
func (l *Local) DeadLetters(ctx context.Context, o triage.ScanOptions) ([]dlq.Tagged, error) {
	msgs, _, err := triage.Scan(ctx, l.SQS, l.Queues.DLQURL, o)
	if err != nil {
		return nil, err
	}
	out := make([]dlq.Tagged, len(msgs))
	for i, m := range msgs {
		out[i] = triage.Tag(m)
	}
	return out, nil
}

// Depth is a queue's approximate count: visible, in flight and delayed.
func (l *Local) Depth(ctx context.Context, url string) (int, error) {
	return esm.Depth(ctx, l.SQS, url)
}

// Account says where every sent message ended up: processed (done is
// asked whether a key is done), dead-lettered by reason (the tagged DLQ),
// in flight (the hot queue's depth), or lost.
func (l *Local) Account(ctx context.Context, sent []workload.Sent, dead []dlq.Tagged, done func(key string) bool) (workload.Accounting, error) {
	depth, err := l.Depth(ctx, l.Queues.HotURL)
	if err != nil {
		return workload.Accounting{}, err
	}
	return workload.Account(l.Pipeline, sent, workload.DeadLetters(dead), depth, done), nil
}

// DoneInLedger is a done func for Account that reads the ledger; the first
// read error is kept in *errp.
func (l *Local) DoneInLedger(ctx context.Context, errp *error) func(key string) bool {
	return func(key string) bool {
		e, ok, err := l.Ledger.Get(ctx, key)
		if err != nil && *errp == nil {
			*errp = err
		}
		return ok && e.State == ledger.StateDone
	}
}

// WaitEmpty waits until a queue holds nothing visible, in flight or
// delayed, or timeout passes.
func (l *Local) WaitEmpty(ctx context.Context, url string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		n, err := l.Depth(ctx, url)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d messages still on %s after %s", n, url, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// KindCounts says how many tasks of each kind there are ("valid 12, ...").
func KindCounts(tasks []workload.Task) string {
	counts := map[workload.Kind]int{}
	for _, t := range tasks {
		counts[t.Kind]++
	}
	kinds := make([]string, 0, len(counts))
	for k := range counts {
		kinds = append(kinds, string(k))
	}
	sort.Strings(kinds)
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s %d", k, counts[workload.Kind(k)])
	}
	return strings.Join(parts, ", ")
}
