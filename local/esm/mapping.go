package esm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/agentdlq/agentdlq/pipeline"
)

// Handler is a Lambda SQS handler with partial batch responses, such as
// (*worker.Worker).Handle.
type Handler func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error)

// API is the part of the SQS client the mapping uses.
type API interface {
	ReceiveMessage(ctx context.Context, params *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, params *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	GetQueueAttributes(ctx context.Context, params *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// Config configures a Mapping.
type Config struct {
	// QueueURL is required: the queue to poll.
	QueueURL string
	// QueueARN is required: the eventSourceARN of the records.
	QueueARN string
	// Enabled is optional (default: always enabled): asked before each
	// receive with QueueARN; while it returns false the mapping receives
	// nothing and messages wait on the queue, as with a disabled Lambda
	// event source mapping (Switch.Enabled: agentdlq pause and resume).
	Enabled func(queueARN string) bool
	// Region is optional (default us-east-1): the awsRegion of the records.
	Region string
	// BatchSize is optional (default 10): at most this many records a batch.
	BatchSize int
	// BatchWindow is optional (default 0: invoke with what one receive
	// returned): how long to gather records, from the first one, before
	// invoking with fewer than BatchSize.
	BatchWindow time.Duration
	// Pollers is optional (default 1): concurrent pollers, each invoking the
	// handler with one batch at a time.
	Pollers int
	// Timeout is optional (default 30 s): the handler's deadline, as the
	// Lambda timeout.
	Timeout time.Duration
	// WaitTime is optional (default 20 s, at most 20 s): the long-polling wait
	// of each receive.
	WaitTime time.Duration
	// UntilIdle is optional (default false: run until the context ends): stop
	// once the queue is drained — no batch in flight and the queue reports no
	// visible, in-flight or delayed message — or once no message was received
	// for IdleTimeout, whichever comes first.
	UntilIdle bool
	// IdleTimeout is optional (default 30 s): with UntilIdle, stop after this
	// long without a message even if the queue still reports messages in
	// flight (held by another consumer, or waiting out a long backoff).
	IdleTimeout time.Duration
	// Logger is optional (default slog.Default()).
	Logger *slog.Logger
	// Now is optional (default time.Now).
	Now func() time.Time
}

// FromPipeline is the configuration that Lambda's event source gets from the
// pipeline definition: batch size, batch window, maximum concurrency (the
// pollers) and the worker timeout. In provisioned mode the pollers are the
// invocations the minimum of provisioned pollers keeps ready (ten a
// poller): what Lambda runs before it scales.
func FromPipeline(p *pipeline.Pipeline, q pipeline.Queues, region string) Config {
	pollers := p.MaxConcurrency
	if pp := p.ProvisionedPollers; pp != nil {
		pollers = pp.Minimum * pipeline.PollerInvokes
	}
	return Config{
		QueueURL:    q.HotURL,
		QueueARN:    q.HotARN,
		Region:      region,
		BatchSize:   p.BatchSize,
		BatchWindow: p.BatchWindow(),
		Pollers:     pollers,
		Timeout:     p.WorkerTimeout(),
	}
}

func (c *Config) applyDefaults() {
	if c.Region == "" {
		c.Region = "us-east-1"
	}
	if c.BatchSize == 0 {
		c.BatchSize = 10
	}
	if c.Pollers == 0 {
		c.Pollers = 1
	}
	if c.Timeout == 0 {
		c.Timeout = 30 * time.Second
	}
	if c.WaitTime == 0 {
		c.WaitTime = 20 * time.Second
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

func (c *Config) validate() error {
	var errs []error
	if c.QueueURL == "" {
		errs = append(errs, errors.New("esm: QueueURL is required"))
	}
	if c.QueueARN == "" {
		errs = append(errs, errors.New("esm: QueueARN is required (the records' eventSourceARN)"))
	}
	if c.BatchSize < 1 || c.BatchSize > pipeline.MaxBatchSizeStandard {
		errs = append(errs, fmt.Errorf("esm: BatchSize %d is outside 1..%d", c.BatchSize, pipeline.MaxBatchSizeStandard))
	}
	if c.BatchWindow < 0 || c.BatchWindow > pipeline.MaxBatchWindow {
		errs = append(errs, fmt.Errorf("esm: BatchWindow %s is outside 0..%s", c.BatchWindow, pipeline.MaxBatchWindow))
	}
	if c.Pollers < 1 {
		errs = append(errs, fmt.Errorf("esm: Pollers %d must be at least 1", c.Pollers))
	}
	if c.Timeout < 0 || c.WaitTime < 0 || c.WaitTime > 20*time.Second || c.IdleTimeout < 0 {
		errs = append(errs, errors.New("esm: Timeout and IdleTimeout must be positive, WaitTime within 0..20s"))
	}
	return errors.Join(errs...)
}

// Stats counts what a mapping did. Every received record ends up deleted or
// failed (left to its visibility timeout), so Received = Deleted + Failed +
// DeleteErrors.
type Stats struct {
	Batches      int64 `json:"batches"`       // handler invocations
	Received     int64 `json:"received"`      // records received (a redelivered message counts again)
	Deleted      int64 `json:"deleted"`       // records deleted after the handler succeeded with them
	Failed       int64 `json:"failed"`        // records left to their visibility timeout
	BatchErrors  int64 `json:"batch_errors"`  // invocations that failed as a whole (error, panic, bad response, timeout)
	DeleteErrors int64 `json:"delete_errors"` // records whose delete failed (they will be redelivered)
	// ReceiveErrors counts receives that failed at the client, after the
	// SDK's retries (the context's own end aside): what a receive handed out
	// before it failed waits out its visibility timeout.
	ReceiveErrors int64 `json:"receive_errors"`
}

// EventCounts are a mapping's counts under the names of a Lambda event
// source mapping's EventCount metrics (MetricsConfig EventCount; namespace
// AWS/Lambda, dimension EventSourceMappingUUID), which the construct turns
// on, alarms on (esm-dropped-events, esm-failed-events) and graphs: so that
// a local run and a dashboard speak of the same events.
type EventCounts struct {
	// PolledEventCount: records the mapping read from the queue.
	PolledEventCount int64 `json:"PolledEventCount"`
	// FilteredOutEventCount: records filter criteria left out; always 0
	// (the construct sets none).
	FilteredOutEventCount int64 `json:"FilteredOutEventCount"`
	// InvokedEventCount: records the handler was invoked with. Every
	// polled record is handed over once (Lambda counts a record again
	// when it retries a failed invocation; the local mapping does not).
	InvokedEventCount int64 `json:"InvokedEventCount"`
	// FailedInvokeEventCount: records that came back failed, a batch item
	// failure or a whole failed invocation (error, panic, bad response,
	// timeout), as Lambda counts them with partial batch responses on.
	FailedInvokeEventCount int64 `json:"FailedInvokeEventCount"`
	// DroppedEventCount: records given up without the handler finishing
	// them; always 0 locally: a record the mapping cannot finish is left to
	// its visibility timeout and the queue's redrive policy.
	DroppedEventCount int64 `json:"DroppedEventCount"`
	// DeletedEventCount: records deleted from the queue after the handler
	// succeeded with them.
	DeletedEventCount int64 `json:"DeletedEventCount"`
}

// EventCounts returns s under the names of the event source mapping's
// metrics.
func (s Stats) EventCounts() EventCounts {
	return EventCounts{
		PolledEventCount:       s.Received,
		InvokedEventCount:      s.Received,
		FailedInvokeEventCount: s.Failed,
		DeletedEventCount:      s.Deleted,
	}
}

// Mapping polls one queue and invokes one handler.
type Mapping struct {
	api     API
	handler Handler
	cfg     Config

	batches, received, deleted, failed, batchErrors, deleteErrors, receiveErrors atomic.Int64

	inFlight     atomic.Int64
	failing      atomic.Int64 // pollers whose last receive failed
	stopping     atomic.Bool  // set by an idle stop or a failed poller: finish the current receive, then return
	stopped      atomic.Bool  // set by Stop (never reset): as stopping, for this Run and any later one
	lastActivity atomic.Int64 // unix nanos of the last received record or finished batch
	paused       atomic.Bool  // Enabled said false on the last look: logged once a pause, once a resume
}

// New validates cfg and returns a mapping.
func New(api API, handler Handler, cfg Config) (*Mapping, error) {
	if api == nil || handler == nil {
		return nil, errors.New("esm: an SQS client and a handler are required")
	}
	cfg.applyDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Mapping{api: api, handler: handler, cfg: cfg}, nil
}

// Stats returns the counts so far.
func (m *Mapping) Stats() Stats {
	return Stats{
		Batches: m.batches.Load(), Received: m.received.Load(), Deleted: m.deleted.Load(),
		Failed: m.failed.Load(), BatchErrors: m.batchErrors.Load(), DeleteErrors: m.deleteErrors.Load(), ReceiveErrors: m.receiveErrors.Load(),
	}
}

// Run polls until ctx ends or, with UntilIdle, the queue is drained. A batch
// being handled when ctx ends is finished first (its deletes use a fresh
// context), so that stopping never strands a success undeleted. An idle stop
// lets every poller finish its current receive and handle what it brought,
// instead of abandoning a long poll that SQS may still answer with a message
// (which would then sit invisible for its visibility timeout). It returns
// the stats and the first receive error that is not the context's.
func (m *Mapping) Run(ctx context.Context) (Stats, error) {
	m.touch()
	m.stopping.Store(false)
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	for i := range m.cfg.Pollers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := m.poll(ctx, i); err != nil {
				errOnce.Do(func() { firstErr = err; m.stopping.Store(true) })
			}
		}()
	}
	pollersDone := make(chan struct{})
	if m.cfg.UntilIdle {
		go func() {
			m.watchIdle(ctx, pollersDone)
		}()
	}
	wg.Wait()
	close(pollersDone)
	return m.Stats(), firstErr
}

// Stop asks Run to return as an idle stop does: every poller finishes its
// current receive (at most WaitTime) and handles what it brought, then
// returns. Cancelling Run's context instead abandons the long polls, and a
// poll abandoned is not always a poll ended: SQS may still answer it (and
// fauxqs does, with the next message sent within WaitTime), which costs that
// message one receive of its maxReceiveCount, seen by no worker. Stop may be
// called before Run and from any goroutine.
func (m *Mapping) Stop() { m.stopped.Store(true) }

// halting reports whether the pollers are to stop after their current receive.
func (m *Mapping) halting() bool { return m.stopping.Load() || m.stopped.Load() }

func (m *Mapping) touch() { m.lastActivity.Store(m.cfg.Now().UnixNano()) }

// poll is one poller's loop.
func (m *Mapping) poll(ctx context.Context, poller int) error {
	log := m.cfg.Logger.With("queue", m.cfg.QueueURL, "poller", poller)
	consecutiveErrs := 0
	for ctx.Err() == nil && !m.halting() {
		if m.cfg.Enabled != nil && !m.cfg.Enabled(m.cfg.QueueARN) {
			// Said once per pause (not per poller): a worker started while
			// paused would otherwise wait without a word and, with UntilIdle,
			// stop having received nothing.
			if m.paused.CompareAndSwap(false, true) {
				m.cfg.Logger.WarnContext(ctx, "paused: the event source mapping is disabled; receiving nothing, messages wait on the queue until it is enabled again (agentdlq resume)", "queue", m.cfg.QueueURL)
			}
			sleep(ctx, pausedPoll) // paused: receive nothing, look again
			continue
		}
		if m.paused.CompareAndSwap(true, false) {
			m.cfg.Logger.InfoContext(ctx, "resumed: the event source mapping is enabled; receiving again", "queue", m.cfg.QueueURL)
		}
		msgs, err := m.gather(ctx)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			if consecutiveErrs == 0 {
				m.failing.Add(1)
			}
			consecutiveErrs++
			log.WarnContext(ctx, "receive failed", "error", err.Error(), "consecutive", consecutiveErrs)
			if consecutiveErrs >= 5 {
				return fmt.Errorf("esm: receive from %s failed %d times: %w", m.cfg.QueueURL, consecutiveErrs, err)
			}
			sleep(ctx, time.Duration(consecutiveErrs)*200*time.Millisecond)
			continue
		}
		if consecutiveErrs > 0 {
			m.failing.Add(-1)
		}
		consecutiveErrs = 0
		if len(msgs) == 0 {
			continue
		}
		m.inFlight.Add(1)
		m.invoke(ctx, log, msgs)
		m.touch()
		m.inFlight.Add(-1)
	}
	return nil
}

// gather receives one batch: up to BatchSize records, for up to BatchWindow
// from the first one (a single receive when the window is 0).
func (m *Mapping) gather(ctx context.Context) ([]types.Message, error) {
	var msgs []types.Message
	var deadline time.Time
	for len(msgs) < m.cfg.BatchSize {
		if len(msgs) > 0 && m.halting() {
			break
		}
		wait := m.cfg.WaitTime
		if len(msgs) > 0 {
			left := deadline.Sub(m.cfg.Now())
			if left <= 0 {
				break
			}
			wait = min(wait, left)
		}
		out, err := m.api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(m.cfg.QueueURL),
			MaxNumberOfMessages:         int32(min(10, m.cfg.BatchSize-len(msgs))),
			WaitTimeSeconds:             int32(wait / time.Second), // under a second left: a short poll
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"All"},
		})
		if err != nil {
			if ctx.Err() == nil {
				m.receiveErrors.Add(1)
			}
			if len(msgs) > 0 {
				// Invoke with what was gathered; the error shows again on the next receive.
				break
			}
			return nil, err
		}
		if len(out.Messages) > 0 {
			if len(msgs) == 0 {
				deadline = m.cfg.Now().Add(m.cfg.BatchWindow)
			}
			m.received.Add(int64(len(out.Messages)))
			m.touch()
			msgs = append(msgs, out.Messages...)
		}
		if m.cfg.BatchWindow == 0 && len(msgs) > 0 {
			break
		}
		if len(msgs) == 0 {
			// Nothing yet: let Run's loop check the context and idleness.
			break
		}
	}
	return msgs, nil
}

// invoke runs the handler on one batch and deletes what succeeded.
func (m *Mapping) invoke(ctx context.Context, log *slog.Logger, msgs []types.Message) {
	ev := Event(msgs, m.cfg.QueueARN, m.cfg.Region)
	m.batches.Add(1)
	resp, err := m.call(ctx, ev)
	o := Decide(ev, resp, err)
	if o.BatchFailed {
		m.batchErrors.Add(1)
		log.WarnContext(ctx, "batch failed: every record left to its visibility timeout",
			"records", len(ev.Records), "error", o.Reason)
	}
	m.failed.Add(int64(len(o.Failed)))
	m.delete(log, ev, o.Delete)
}

// call invokes the handler with the Lambda timeout as deadline, turning a
// panic or a deadline overrun into an error.
func (m *Mapping) call(ctx context.Context, ev events.SQSEvent) (resp events.SQSEventResponse, err error) {
	// The invocation runs to its own deadline even when Run is stopping: a
	// Lambda invocation is not cut short by the event source.
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.cfg.Timeout)
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("handler panic: %v\n%s", r, debug.Stack())
		}
	}()
	resp, err = m.handler(hctx, ev)
	if err == nil && hctx.Err() != nil {
		err = fmt.Errorf("handler ran past its %s timeout: %w", m.cfg.Timeout, hctx.Err())
	}
	return resp, err
}

// delete removes the records at idx in batches of ten.
func (m *Mapping) delete(log *slog.Logger, ev events.SQSEvent, idx []int) {
	// Deletes complete even when Run is stopping.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for start := 0; start < len(idx); start += 10 {
		chunk := idx[start:min(start+10, len(idx))]
		entries := make([]types.DeleteMessageBatchRequestEntry, len(chunk))
		for j, i := range chunk {
			entries[j] = types.DeleteMessageBatchRequestEntry{
				Id:            aws.String(strconv.Itoa(j)),
				ReceiptHandle: aws.String(ev.Records[i].ReceiptHandle),
			}
		}
		out, err := m.api.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(m.cfg.QueueURL), Entries: entries})
		if err != nil {
			m.deleteErrors.Add(int64(len(chunk)))
			log.ErrorContext(ctx, "delete failed: the records will be redelivered", "records", len(chunk), "error", err.Error())
			continue
		}
		m.deleted.Add(int64(len(out.Successful)))
		for _, f := range out.Failed {
			m.deleteErrors.Add(1)
			j, _ := strconv.Atoi(aws.ToString(f.Id))
			log.ErrorContext(ctx, "delete failed: the record will be redelivered",
				"message_id", ev.Records[chunk[j]].MessageId, "error", aws.ToString(f.Code)+": "+aws.ToString(f.Message))
		}
	}
}

// watchIdle tells the pollers to stop once the queue is drained, or after
// IdleTimeout without a received message.
func (m *Mapping) watchIdle(ctx context.Context, pollersDone <-chan struct{}) {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-pollersDone:
			return
		case <-tick.C:
		}
		if m.inFlight.Load() > 0 || m.failing.Load() > 0 {
			continue
		}
		idle := m.cfg.Now().Sub(time.Unix(0, m.lastActivity.Load()))
		if idle >= m.cfg.IdleTimeout {
			m.cfg.Logger.InfoContext(ctx, "idle: stopping", "queue", m.cfg.QueueURL, "idle_seconds", idle.Seconds())
			m.stopping.Store(true)
			return
		}
		if idle < time.Second {
			continue
		}
		n, err := m.depth(ctx)
		if err == nil && n == 0 && m.inFlight.Load() == 0 {
			m.stopping.Store(true)
			return
		}
	}
}

// depth is the queue's visible + in-flight + delayed message count.
func (m *Mapping) depth(ctx context.Context) (int, error) { return Depth(ctx, m.api, m.cfg.QueueURL) }

// AttributesAPI is the SQS call Depth makes.
type AttributesAPI interface {
	GetQueueAttributes(ctx context.Context, params *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// Depth is a queue's approximate visible + in-flight + delayed message count.
func Depth(ctx context.Context, api AttributesAPI, url string) (int, error) {
	names := []types.QueueAttributeName{
		types.QueueAttributeNameApproximateNumberOfMessages,
		types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		types.QueueAttributeNameApproximateNumberOfMessagesDelayed,
	}
	out, err := api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: names})
	if err != nil {
		return 0, err
	}
	total := 0
	for _, k := range names {
		n, err := strconv.Atoi(out.Attributes[string(k)])
		if err != nil {
			return 0, fmt.Errorf("queue attribute %s: %w", k, err)
		}
		total += n
	}
	return total, nil
}

// pausedPoll is how often a paused mapping looks whether it was resumed.
const pausedPoll = 250 * time.Millisecond

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
