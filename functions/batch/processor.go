package batch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/pipeline"
)

// Config configures a Processor. New applies the defaults, then validates.
type Config struct {
	// Handler is required: called once per record.
	Handler Handler
	// SQS is required: the client that sends dead letters to the DLQ and
	// changes the visibility of retried records (an *sqs.Client).
	SQS SQSAPI
	// DLQURL is required: the queue URL of this hot queue's own DLQ.
	DLQURL string
	// MaxReceiveCount is required: the hot queue's redrive policy
	// maxReceiveCount (1..1000). A retryable failure on a receive at or above
	// it is dead-lettered by the processor itself, with its reason.
	MaxReceiveCount int
	// Pipeline is required: the pipeline name, the metrics' Pipeline dimension.
	Pipeline string

	// FIFO is optional (default false): the hot queue and its DLQ are FIFO.
	FIFO bool
	// FIFOPoison is optional (default dead_letter): what a FIFO queue does
	// with a failure that is dead-lettered at once (see the package doc).
	FIFOPoison pipeline.FIFOPoison
	// HotQueueURL is optional: the hot queue's URL, needed for the
	// visibility backoff. Empty disables the backoff.
	HotQueueURL string
	// SourceQueueARN is optional: stamped in dlq_meta (default: each
	// record's eventSourceARN).
	SourceQueueARN string
	// Backoff is optional (default base 2 s, max 120 s).
	Backoff Backoff
	// Ledger is optional: the idempotency ledger that Record.Claim,
	// StartEffect and Done use. Without it, there is no duplicate detection.
	Ledger ledger.Ledger
	// Concurrency is optional (default 1: one record after the other): how
	// many records are handled at once. A standard queue's records are
	// handled by up to Concurrency goroutines; a FIFO queue's message groups
	// are, each group's records in order. Raise it when the handler waits
	// on the network (a DynamoDB ledger, a tool's API); the handler, the
	// ledger and the logger must then be safe for concurrent use.
	Concurrency int
	// DeadlineMargin is optional (default 2 s): no record is started when
	// the invocation's context deadline is nearer than this; such records
	// are reported as batch item failures, so that a Lambda timeout does
	// not fail the whole batch (records already acknowledged included).
	DeadlineMargin time.Duration
	// Lease is optional (default 5 minutes): how long a Claim holds a key.
	Lease time.Duration
	// RedriveLoopAfter is optional (default 2): a key dead-lettered again
	// after this many redrives is dead-lettered as redrive_loop.
	RedriveLoopAfter int
	// WorkerVersion is optional: stamped in dlq_meta.
	WorkerVersion string
	// Logger is optional (default slog.Default()). The processor logs
	// failures only: nothing per successful record.
	Logger *slog.Logger
	// Metrics is optional (default os.Stdout): where the embedded metric
	// format lines go, one document per invocation (plus one per reason
	// dead-lettered in it). io.Discard silences them.
	Metrics io.Writer
	// Now is optional (default time.Now).
	Now func() time.Time
	// Rand is optional (default math/rand/v2.Int64N): returns a value in
	// [0, n). It draws the backoff jitter; it must be safe for concurrent use.
	Rand func(n int64) int64
}

// Backoff is the exponential backoff with full jitter of retried records:
// before receive n+1 a record stays hidden for a random whole number of
// seconds in [0, min(Max, Base·2^(n-1))]. See the package doc for the schedule.
type Backoff struct {
	// Base is optional (default 2 s).
	Base time.Duration
	// Max is optional (default 120 s; at most 12 hours, the SQS maximum).
	Max time.Duration
	// Disabled is optional: leave retries to the queue's visibility timeout.
	Disabled bool
}

// PipelineConfig returns a Config with the settings of a pipeline
// definition filled in: MaxReceiveCount, Pipeline, FIFO, FIFOPoison,
// Backoff, RedriveLoopAfter and Lease (the visibility timeout). The caller
// adds Handler, SQS, DLQURL and the rest.
func PipelineConfig(p *pipeline.Pipeline) Config {
	return Config{
		MaxReceiveCount:  p.MaxReceiveCount,
		Pipeline:         p.Name,
		FIFO:             p.FIFO,
		FIFOPoison:       p.FIFOPoison,
		Backoff:          Backoff{Base: time.Duration(p.Backoff.BaseSeconds) * time.Second, Max: time.Duration(p.Backoff.MaxSeconds) * time.Second, Disabled: p.Backoff.Disabled},
		RedriveLoopAfter: p.RedriveLoopAfter,
		Lease:            p.VisibilityTimeout(),
	}
}

// ErrConfig wraps every error of New and of Handle on a processor that New
// did not build.
var ErrConfig = errors.New("batch: invalid configuration")

// ErrNotSQSEvent is returned by Handle for an event whose records are not
// SQS messages (no messageId, or another eventSource): the function is wired
// to the wrong source, and nothing is acknowledged.
var ErrNotSQSEvent = errors.New("batch: not an SQS event")

// Processor runs a Handler over Lambda SQS events. It is safe for
// concurrent use.
type Processor struct {
	handler     Handler
	sqs         SQSAPI
	dlqURL      string
	hotURL      string
	sourceARN   string
	maxReceive  int
	pipeline    string
	fifo        bool
	holdGroup   bool
	backoff     Backoff
	ledger      ledger.Ledger
	lease       time.Duration
	concurrency int
	margin      time.Duration
	loopAfter   int
	version     string
	log         *slog.Logger
	metrics     io.Writer
	now         func() time.Time
	rand        func(int64) int64
	pipelineKey []byte // the JSON-quoted pipeline name, for the metrics
}

// New applies the defaults, validates cfg and returns a Processor. It fails
// fast, naming every problem, on a missing handler, SQS client or DLQ.
func New(cfg Config) (*Processor, error) {
	if cfg.Backoff.Base == 0 && cfg.Backoff.Max == 0 {
		cfg.Backoff.Base, cfg.Backoff.Max = 2*time.Second, 120*time.Second
	}
	if cfg.FIFOPoison == "" {
		cfg.FIFOPoison = pipeline.FIFOPoisonDeadLetter
	}
	if cfg.Lease == 0 {
		cfg.Lease = 5 * time.Minute
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = 1
	}
	if cfg.DeadlineMargin == 0 {
		cfg.DeadlineMargin = 2 * time.Second
	}
	if cfg.RedriveLoopAfter == 0 {
		cfg.RedriveLoopAfter = 2
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = os.Stdout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Int64N
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if cfg.Handler == nil {
		bad("Handler is required")
	}
	if cfg.SQS == nil {
		bad("SQS is required: dead letters are sent to the DLQ by the processor")
	}
	if strings.TrimSpace(cfg.DLQURL) == "" {
		bad("DLQURL is required: without a DLQ a poison message could only be retried or lost")
	} else if cfg.FIFO != strings.HasSuffix(cfg.DLQURL, ".fifo") {
		bad("DLQURL %q: a FIFO hot queue needs a FIFO DLQ and a standard one a standard DLQ (FIFO is %v)", cfg.DLQURL, cfg.FIFO)
	}
	if cfg.MaxReceiveCount < 1 || cfg.MaxReceiveCount > 1000 {
		bad("MaxReceiveCount %d is outside 1..1000 (it must be the hot queue's redrive policy maxReceiveCount)", cfg.MaxReceiveCount)
	}
	if strings.TrimSpace(cfg.Pipeline) == "" {
		bad("Pipeline is required: it names the metrics' Pipeline dimension")
	}
	if cfg.FIFOPoison != pipeline.FIFOPoisonDeadLetter && cfg.FIFOPoison != pipeline.FIFOPoisonHoldGroup {
		bad("FIFOPoison %q must be %q or %q", cfg.FIFOPoison, pipeline.FIFOPoisonDeadLetter, pipeline.FIFOPoisonHoldGroup)
	}
	if !cfg.Backoff.Disabled && (cfg.Backoff.Base < time.Second || cfg.Backoff.Max < cfg.Backoff.Base || cfg.Backoff.Max > 12*time.Hour) {
		bad("Backoff needs 1s <= Base <= Max <= 12h (got %v, %v)", cfg.Backoff.Base, cfg.Backoff.Max)
	}
	if cfg.Concurrency < 1 || cfg.Concurrency > 1000 {
		bad("Concurrency %d is outside 1..1000", cfg.Concurrency)
	}
	if cfg.Lease < 0 || cfg.RedriveLoopAfter < 1 {
		bad("Lease must be positive and RedriveLoopAfter at least 1 (got %v, %d)", cfg.Lease, cfg.RedriveLoopAfter)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrConfig, errors.Join(errs...))
	}
	return &Processor{
		handler: cfg.Handler, sqs: cfg.SQS, dlqURL: cfg.DLQURL, hotURL: cfg.HotQueueURL,
		sourceARN: cfg.SourceQueueARN, maxReceive: cfg.MaxReceiveCount, pipeline: cfg.Pipeline,
		fifo: cfg.FIFO, holdGroup: cfg.FIFO && cfg.FIFOPoison == pipeline.FIFOPoisonHoldGroup,
		backoff: cfg.Backoff, ledger: cfg.Ledger, lease: cfg.Lease, concurrency: cfg.Concurrency, margin: cfg.DeadlineMargin, loopAfter: cfg.RedriveLoopAfter,
		version: cfg.WorkerVersion, log: cfg.Logger, metrics: cfg.Metrics, now: cfg.Now, rand: cfg.Rand,
		pipelineKey: quoteJSON(cfg.Pipeline),
	}, nil
}

// result is what happened to one record.
type result uint8

const (
	resultAck result = iota
	resultRetry
	resultDeadLettered
)

// Handle is the Lambda handler: it runs the Handler over every record and
// returns the partial batch response. Record failures never make it return
// an error; it returns one (and acknowledges nothing) only when the
// processor was not built by New or the event is not an SQS event.
func (p *Processor) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var resp events.SQSEventResponse
	if p == nil || p.handler == nil {
		return resp, fmt.Errorf("%w: use batch.New", ErrConfig)
	}
	if err := CheckSQSEvent(ev); err != nil {
		return resp, err
	}
	states := getStates(len(ev.Records))
	defer putStates(states)
	var m counters
	now := p.now()
	switch {
	case p.concurrency <= 1 || len(ev.Records) < 2:
		p.runSequential(ctx, ev.Records, states, now, &m)
	case p.fifo:
		p.runGroups(ctx, ev.Records, states, now, &m)
	default:
		p.runConcurrent(ctx, ev.Records, states, now, &m)
	}
	// The response lists the retried records in event order.
	notStarted := 0
	for i := range ev.Records {
		if states[i].notStarted {
			notStarted++
		}
		switch states[i].result {
		case resultRetry:
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: ev.Records[i].MessageId})
			m.retried++
		case resultDeadLettered:
			m.deadLettered++
		}
	}
	if notStarted > 0 {
		logAttrs(ctx, p.log, slog.LevelWarn, "invocation out of time: records not started, reported as batch item failures",
			slog.Int("records", notStarted), slog.Duration("margin", p.margin))
	}
	p.emit(&m)
	return resp, nil
}

// runOne handles record i unless its FIFO group is already held. batchNow
// is the clock read once when the batch started: without a deadline the
// record's ledger calls use it (each time.Now cost ~0.1 µs a record); with
// one, the reading taken for the deadline check serves the record.
func (p *Processor) runOne(ctx context.Context, msg *events.SQSMessage, st *recordState, held bool, batchNow time.Time, m *counters) {
	if held {
		st.result = resultRetry // reported, not handled: the group's order holds
		return
	}
	now := batchNow
	if dl, ok := ctx.Deadline(); ok {
		if now = p.now(); !now.Before(dl.Add(-p.margin)) {
			// Out of time: a record started now could be cut off with the
			// whole batch. Reported, not handled; its receive count is not
			// spent on it by the worker (the broker counts the receive).
			st.result, st.notStarted = resultRetry, true
			return
		}
	}
	rec := p.newRecord(msg, st, now)
	if st.badCount {
		logAttrs(ctx, p.log, slog.LevelWarn, "unreadable ApproximateReceiveCount; counted as 1",
			slog.String("message_id", msg.MessageId), slog.String("queue", queueName(msg.EventSourceARN)),
			slog.String("value", truncate(msg.Attributes[attrReceiveCount], 32)))
	}
	st.result = p.process(ctx, rec, m)
}

// runSequential handles the records one after the other, in event order.
func (p *Processor) runSequential(ctx context.Context, records []events.SQSMessage, states []recordState, now time.Time, m *counters) {
	var held map[string]struct{} // FIFO message groups stopped at a failure
	for i := range records {
		group := ""
		if p.fifo {
			group = records[i].Attributes[attrGroupID]
		}
		_, stop := held[group]
		p.runOne(ctx, &records[i], &states[i], p.fifo && stop, now, m)
		if p.fifo && states[i].result == resultRetry {
			if held == nil {
				held = make(map[string]struct{})
			}
			held[group] = struct{}{}
		}
	}
}

// runConcurrent handles the records of a standard queue with up to
// Concurrency goroutines.
func (p *Processor) runConcurrent(ctx context.Context, records []events.SQSMessage, states []recordState, now time.Time, m *counters) {
	p.fanOut(len(records), m, func(i int, part *counters) {
		p.runOne(ctx, &records[i], &states[i], false, now, part)
	})
}

// runGroups handles the message groups of a FIFO queue with up to
// Concurrency goroutines, each group's records in order.
func (p *Processor) runGroups(ctx context.Context, records []events.SQSMessage, states []recordState, now time.Time, m *counters) {
	var order []string
	groups := map[string][]int{}
	for i := range records {
		g := records[i].Attributes[attrGroupID]
		if _, ok := groups[g]; !ok {
			order = append(order, g)
		}
		groups[g] = append(groups[g], i)
	}
	p.fanOut(len(order), m, func(k int, part *counters) {
		held := false
		for _, i := range groups[order[k]] {
			p.runOne(ctx, &records[i], &states[i], held, now, part)
			held = held || states[i].result == resultRetry
		}
	})
}

// fanOut calls do(k, part) for every k in [0, n) on up to Concurrency
// goroutines, each counting into its own part, and adds the parts into m.
func (p *Processor) fanOut(n int, m *counters, do func(k int, part *counters)) {
	workers := min(p.concurrency, n)
	parts := make([]counters, workers)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for {
				k := int(next.Add(1) - 1)
				if k >= n {
					return
				}
				do(k, &parts[w])
			}
		})
	}
	wg.Wait()
	for i := range parts {
		m.add(&parts[i])
	}
}

// statePool recycles the per-record state of a batch between invocations
// (a record's state is only valid during its handler call).
var statePool sync.Pool

func getStates(n int) []recordState {
	if p, ok := statePool.Get().(*[]recordState); ok && cap(*p) >= n {
		return (*p)[:n]
	}
	return make([]recordState, n)
}

func putStates(s []recordState) {
	clear(s) // drop the strings, so that a pooled slice keeps no message alive
	statePool.Put(&s)
}

// CheckSQSEvent returns an error wrapping ErrNotSQSEvent when a record of ev
// is not an SQS message: it has no messageId, or an eventSource other than
// aws:sqs. An event with no records is an SQS event with nothing to do.
func CheckSQSEvent(ev events.SQSEvent) error {
	for i := range ev.Records {
		r := &ev.Records[i]
		if r.MessageId == "" {
			return fmt.Errorf("%w: record %d has no messageId", ErrNotSQSEvent, i)
		}
		if r.EventSource != "" && r.EventSource != "aws:sqs" {
			return fmt.Errorf("%w: record %d has eventSource %q", ErrNotSQSEvent, i, truncate(r.EventSource, 64))
		}
	}
	return nil
}

// process runs the handler on one record and acts on its outcome.
func (p *Processor) process(ctx context.Context, rec Record, m *counters) result {
	err := p.call(ctx, rec)
	st := rec.st
	if err == nil {
		if st.claimed && p.ledger != nil {
			if lerr := p.ledger.Complete(ctx, st.key, rec.Message.MessageId, st.receipt, st.now); lerr != nil {
				p.logFailure(ctx, slog.LevelError, "ledger unavailable: could not record done; retried", rec, "", lerr)
				return resultRetry
			}
		}
		m.processed++
		return resultAck
	}
	if errors.Is(err, ErrDuplicate) {
		m.duplicates++
		return resultAck
	}
	if errors.Is(err, errLedger) {
		// Never dead-letter on a ledger outage: the message is retried.
		p.logFailure(ctx, slog.LevelError, "ledger unavailable; retried", rec, "", err)
		return resultRetry
	}
	c := classify(err, st.effectStarted)
	lastReceive := rec.ReceiveCount >= p.maxReceive
	if c.Kind.Retryable() && !lastReceive {
		p.retry(ctx, rec, c, err)
		return resultRetry
	}
	if p.holdGroup && !c.Kind.Retryable() && !lastReceive {
		// hold_group: the record and the rest of its group wait; on the last
		// allowed receive the record is dead-lettered with its own reason.
		p.logFailure(ctx, slog.LevelWarn, "FIFO group held at a failure that dead-letters at its last receive", rec, c.Reason, err)
		p.release(ctx, rec)
		return resultRetry
	}
	return p.deadLetter(ctx, rec, c, err, m)
}

// call runs the handler, turning a panic into that record's error.
func (p *Processor) call(ctx context.Context, rec Record) (err error) {
	defer func() {
		if v := recover(); v != nil {
			// The program counters only: runtime.Stack, which formats the
			// traceback at once, cost ~45 µs a panic (10% of the CPU of the
			// sqs-mixed bench); the frames are formatted for the log only.
			pe := &panicError{value: fmt.Sprint(v)}
			pe.pcs = pe.pcBuf[:runtime.Callers(3, pe.pcBuf[:])]
			err = pe
		}
	}()
	return p.handler(ctx, rec)
}

// panicError is a recovered panic: unclassified.
type panicError struct {
	value string
	pcs   []uintptr // the panicking goroutine's stack, innermost first
	pcBuf [32]uintptr
}

func (e *panicError) Error() string { return "panic: " + e.value }

// stack formats the frames as runtime.Stack lays them out ("function" then
// a tab and "file:line"), without the goroutine header and arguments.
//
// The text is kept by program counters: a bug that panics on many records
// panics at the same place each time, and formatting the frames (file and
// line lookups) cost ~5% of the sqs-mixed bench, where 1 record in 18
// panics. At most maxCachedStacks texts are kept; past that, stacks are
// formatted each time.
func (e *panicError) stack() string {
	key := stackKey{n: len(e.pcs)}
	copy(key.pcs[:], e.pcs)
	if s, ok := stackCache.Load(key); ok {
		return s.(string)
	}
	s := e.format()
	if stackCacheLen.Load() < maxCachedStacks {
		if _, loaded := stackCache.LoadOrStore(key, s); !loaded {
			stackCacheLen.Add(1)
		}
	}
	return s
}

// stackKey identifies a stack by its program counters.
type stackKey struct {
	n   int
	pcs [32]uintptr
}

const maxCachedStacks = 64

var (
	stackCache    sync.Map // stackKey → string
	stackCacheLen atomic.Int32
)

// callFunction is the frame name of (*Processor).call, where the frames
// that say something about a panic end: below it are the processor's own
// loop and the Lambda runtime, the same for every panic.
var callFunction = reflect.TypeFor[Processor]().PkgPath() + ".(*Processor).call"

// format formats the frames (see stack), from the panic down to the
// processor's call of the handler: a third of the text of the whole stack
// in the sample worker, and only the frames an operator reads.
func (e *panicError) format() string {
	var b strings.Builder
	frames := runtime.CallersFrames(e.pcs)
	for {
		f, more := frames.Next()
		b.WriteString(f.Function)
		b.WriteString("\n\t")
		b.WriteString(f.File)
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(f.Line))
		b.WriteByte('\n')
		if !more || f.Function == callFunction {
			return b.String()
		}
	}
}

// retry leaves the record to be redelivered, hidden for a backoff.
func (p *Processor) retry(ctx context.Context, rec Record, c Classification, err error) {
	p.release(ctx, rec)
	var delay int32 = -1
	if !p.backoff.Disabled && p.hotURL != "" && rec.Message.ReceiptHandle != "" {
		delay = p.backoff.delaySeconds(rec.ReceiveCount, p.rand)
		if verr := p.changeVisibility(ctx, rec.Message.ReceiptHandle, delay); verr != nil {
			p.logFailure(ctx, slog.LevelWarn, "visibility backoff failed; the visibility timeout applies", rec, c.Reason, verr)
		}
	}
	logAttrs(ctx, p.log, slog.LevelWarn, "retried",
		slog.String("message_id", rec.Message.MessageId), slog.String("queue", queueName(rec.Message.EventSourceARN)),
		slog.String("reason", string(c.Reason)), slog.Int("attempt", rec.ReceiveCount), slog.String("trace_id", rec.st.task.TraceID),
		slog.String("kind", c.Kind.String()), slog.String("error_code", c.Code), slog.Int("backoff_s", int(delay)),
		slog.String("error", deadletter.Redact(err.Error(), deadletter.MaxErrorRunes)))
}

func (p *Processor) release(ctx context.Context, rec Record) {
	if rec.st.claimed && p.ledger != nil {
		if err := p.ledger.Release(ctx, rec.st.key, rec.Message.MessageId, p.now()); err != nil {
			p.logFailure(ctx, slog.LevelWarn, "ledger release failed; the lease expires by itself", rec, "", err)
		}
	}
}

// delaySeconds draws the backoff before receive n+1: full jitter over
// [0, min(Max, Base·2^(n-1))], in whole seconds.
func (b Backoff) delaySeconds(receive int, rnd func(int64) int64) int32 {
	ceil := b.Ceiling(receive)
	return int32(rnd(int64(ceil/time.Second) + 1))
}

// Ceiling is the upper bound of the backoff after a failed receive n (1 for
// the first delivery): min(Max, Base·2^(n-1)).
func (b Backoff) Ceiling(receive int) time.Duration {
	if receive < 1 {
		receive = 1
	}
	d := b.Base
	for i := 1; i < receive && d < b.Max; i++ {
		d *= 2
	}
	return min(d, b.Max)
}

func (p *Processor) logFailure(ctx context.Context, level slog.Level, msg string, rec Record, reason deadletter.Reason, err error) {
	logAttrs(ctx, p.log, level, msg,
		slog.String("message_id", rec.Message.MessageId), slog.String("queue", queueName(rec.Message.EventSourceARN)),
		slog.String("reason", string(reason)), slog.Int("attempt", rec.ReceiveCount), slog.String("trace_id", rec.st.task.TraceID),
		slog.String("error", deadletter.Redact(err.Error(), deadletter.MaxErrorRunes)))
}

// queueName is the last part of a queue ARN.
func queueName(arn string) string {
	if i := strings.LastIndexByte(arn, ':'); i >= 0 {
		return arn[i+1:]
	}
	return arn
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
