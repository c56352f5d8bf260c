package triage

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/agentdlq/agentdlq/internal/sqsio"
	"github.com/agentdlq/agentdlq/triage/dlq"
	"github.com/agentdlq/agentdlq/triage/report"
)

// ScanAPI is what a scan needs of SQS: receive, release and read the
// queue's attributes. Nothing that deletes, sends, purges or moves.
type ScanAPI interface {
	ReceiveMessage(ctx context.Context, params *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	ChangeMessageVisibilityBatch(ctx context.Context, params *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
	GetQueueAttributes(ctx context.Context, params *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// ScanOptions bound a scan. Every field is optional.
type ScanOptions struct {
	// VisibilityTimeout hides what the scan received from other consumers
	// while it runs (default 30 s, at most 12 h). It need not cover the whole
	// scan: a message seen twice stops the scan (see ScanStats.StopReason).
	VisibilityTimeout time.Duration
	// WaitTime is the long-polling wait of each receive (default 1 s; 0..20 s).
	// Long polling asks every SQS server, so an empty receive means empty.
	WaitTime time.Duration
	// MaxMessages bounds the distinct messages read (default 100000).
	MaxMessages int
	// MaxDuration bounds the scan's run time (default 240 s).
	MaxDuration time.Duration
	// Receivers is the number of parallel receivers (at most 32). The
	// default (0) is one per 2,000 messages of the queue's depth at the
	// start, from 1 to 8.
	Receivers int
	// KeepHidden leaves the messages hidden until their visibility timeout
	// lapses instead of releasing them at the end (default false: release).
	KeepHidden bool
	// Progress is called after every receive with the distinct messages seen
	// so far and the queue's approximate depth at the start (0 if unknown).
	// It may be called from several goroutines, never concurrently.
	Progress func(seen, approxTotal int)
	// Now is the clock (default time.Now); tests pass a fake.
	Now func() time.Time
}

func (o *ScanOptions) applyDefaults() error {
	if o.VisibilityTimeout == 0 {
		o.VisibilityTimeout = 30 * time.Second
	}
	if o.WaitTime == 0 {
		o.WaitTime = time.Second
	}
	if o.MaxMessages == 0 {
		o.MaxMessages = 100000
	}
	if o.MaxDuration == 0 {
		o.MaxDuration = 240 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	switch {
	case o.VisibilityTimeout < time.Second || o.VisibilityTimeout > 12*time.Hour:
		return fmt.Errorf("%w: visibility timeout %s is outside 1s..12h", ErrBadOptions, o.VisibilityTimeout)
	case o.WaitTime < 0 || o.WaitTime > 20*time.Second:
		return fmt.Errorf("%w: wait time %s is outside 0..20s", ErrBadOptions, o.WaitTime)
	case o.MaxMessages < 1 || o.MaxDuration < 0:
		return fmt.Errorf("%w: max messages and max duration must be positive", ErrBadOptions)
	case o.Receivers < 0 || o.Receivers > 32:
		return fmt.Errorf("%w: receivers %d is outside 1..32", ErrBadOptions, o.Receivers)
	}
	return nil
}

// Why a scan stopped (ScanStats.StopReason).
const (
	stopEmpty       = "empty"        // a receive returned nothing: everything visible was seen
	stopRepeats     = "repeats"      // a receive returned only messages already seen
	stopMaxMessages = "max_messages" // the message bound was reached
	stopMaxDuration = "max_duration" // the time bound was reached
	stopCanceled    = "canceled"     // the context ended
	stopError       = "error"        // a receive failed
)

// Why a scan is partial (ScanStats.PartialCause): what it could not see, and
// so what helps. RetryAfterSeconds says when a rerun may see everything.
const (
	// CauseInFlight: letters were in flight when the scan started, held by
	// another reader (another triage, a selective redrive, a receive whose
	// response was lost) until their visibility timeout lapses: retry then.
	CauseInFlight = "in_flight"
	// CauseHidden: letters the queue counted at the start were not handed
	// to the scan: received by another reader meanwhile, or taken by a
	// receive of this scan whose response was lost: retry when their
	// visibility timeout lapses.
	CauseHidden = "hidden"
	// CauseFIFOGroups: a FIFO queue hands out no further letter of a message
	// group while one of it is in flight, so a read-only scan sees at most a
	// batch a group; a rerun sees the same (see Scan).
	CauseFIFOGroups = "fifo_groups"
	// CauseVisibilityLapsed: letters came back before the scan ended: raise
	// the visibility timeout (ScanOptions.VisibilityTimeout) and rerun.
	CauseVisibilityLapsed = "visibility_lapsed"
	// CauseMaxMessages and CauseMaxDuration: a bound stopped the scan: raise
	// it (ScanOptions.MaxMessages, MaxDuration; the pipeline's triage settings).
	CauseMaxMessages = "max_messages"
	CauseMaxDuration = "max_duration"
	// CauseCanceled: the scan was canceled: rerun.
	CauseCanceled = "canceled"
	// CauseReceiveFailed: a receive failed; the letters it may have taken
	// on the server's side come back after the scan's visibility timeout.
	CauseReceiveFailed = "receive_failed"
)

// Errors of Scan; test with errors.Is.
var (
	// ErrQueueNotFound: the DLQ does not exist (bad input: nothing was read).
	ErrQueueNotFound = errors.New("triage: DLQ does not exist")
	// ErrBadOptions: the scan options are out of range.
	ErrBadOptions = errors.New("triage: bad scan options")
	// ErrScanPartial: the scan did not see every dead letter (ScanStats.Err).
	ErrScanPartial = errors.New("triage: the scan did not see every dead letter")
)

// Scan reads every visible message of a DLQ once, without changing it: it
// receives in batches of 10 with a short visibility timeout, tracks message
// ids, and stops on an empty receive, on a receive of only repeats, or on
// the count and time bounds; then it releases what it holds
// (ChangeMessageVisibilityBatch with timeout 0) so that the messages are
// visible again at once. It never deletes, sends, purges or moves.
//
// A scan that may have missed messages returns them with stats.Partial set
// and the reason. An error is returned only when nothing useful was read
// (the queue does not exist, the first receive failed); a failure later in
// the scan makes it partial.
//
// A FIFO queue hands out no further message of a group while one of it is in
// flight, so a read-only scan sees at most one batch per message group; the
// stats compare what was seen with the queue's depth and say so.
func Scan(ctx context.Context, api ScanAPI, dlqURL string, opts ScanOptions) ([]dlq.Message, report.ScanStats, error) {
	if err := opts.applyDefaults(); err != nil {
		return nil, report.ScanStats{}, err
	}
	st := report.ScanStats{
		Queue: dlqURL, StartedAt: opts.Now().UTC(),
		VisibilityTimeoutSeconds: int(opts.VisibilityTimeout / time.Second),
	}
	attrs, err := api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(dlqURL),
		AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeNameApproximateNumberOfMessages,
			types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
			types.QueueAttributeNameMessageRetentionPeriod,
			types.QueueAttributeNameFifoQueue,
			types.QueueAttributeNameVisibilityTimeout,
		},
	})
	if err != nil {
		return nil, st, queueError(dlqURL, err)
	}
	st.ApproxDepth = atoiAttr(attrs.Attributes, string(types.QueueAttributeNameApproximateNumberOfMessages))
	st.ApproxInFlight = atoiAttr(attrs.Attributes, string(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible))
	st.RetentionSeconds = atoiAttr(attrs.Attributes, string(types.QueueAttributeNameMessageRetentionPeriod))
	st.QueueVisibilityTimeoutSeconds = atoiAttr(attrs.Attributes, string(types.QueueAttributeNameVisibilityTimeout))
	st.FIFO = attrs.Attributes[string(types.QueueAttributeNameFifoQueue)] == "true" || strings.HasSuffix(dlqURL, ".fifo")
	if opts.Receivers == 0 {
		opts.Receivers = min(8, 1+st.ApproxDepth/2000)
	}
	st.Receivers = opts.Receivers

	s := &scanner{api: api, url: dlqURL, opts: opts, st: &st, seen: map[string]int{}, handles: map[string]string{}, start: opts.Now()}
	// A receiver that stops lets the others finish the receive they are in
	// (a long poll of at most WaitTime) rather than cancel it: a receive
	// abandoned mid-poll may still take messages on the server's side, and
	// hide them for the whole visibility timeout where no release reaches them.
	var wg sync.WaitGroup
	for range opts.Receivers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.receive(ctx)
		}()
	}
	wg.Wait()

	if !opts.KeepHidden {
		// Release with a context of its own: a canceled scan still gives back what it holds.
		relCtx, relCancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		s.release(relCtx)
		relCancel()
	}
	st.Unique = len(s.msgs)
	dur := opts.Now().Sub(s.start)
	st.DurationSeconds = dur.Seconds()
	if dur > 0 {
		st.MessagesPerSecond = float64(st.Unique) / dur.Seconds()
	}
	if s.firstErr != nil && st.Unique == 0 {
		return nil, st, s.firstErr
	}
	s.judge()
	return s.msgs, st, nil
}

type scanner struct {
	api   ScanAPI
	url   string
	opts  ScanOptions
	start time.Time

	mu       sync.Mutex
	st       *report.ScanStats
	seen     map[string]int // message id -> index in msgs
	msgs     []dlq.Message
	handles  map[string]string // message id -> latest receipt handle, to release
	stopped  string
	firstErr error
}

func (s *scanner) receive(ctx context.Context) {
	in := &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(s.url),
		MaxNumberOfMessages:         10,
		VisibilityTimeout:           int32(s.opts.VisibilityTimeout / time.Second),
		WaitTimeSeconds:             int32(s.opts.WaitTime / time.Second),
		MessageAttributeNames:       []string{"All"},
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		// Deprecated for MessageSystemAttributeNames, but older endpoints
		// read only this one: both are sent.
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}, //nolint:staticcheck // SA1019: see above
	}
	for {
		if s.stop(ctx) {
			return
		}
		out, err := s.api.ReceiveMessage(ctx, in)
		s.mu.Lock()
		if err != nil {
			if ctx.Err() != nil {
				s.setStop(stopCanceled)
			} else {
				if s.firstErr == nil {
					s.firstErr = queueError(s.url, err)
				}
				s.setStop(stopError)
			}
			s.mu.Unlock()
			return
		}
		s.st.Receives++
		s.st.Received += len(out.Messages)
		fresh := 0
		for _, m := range out.Messages {
			id := aws.ToString(m.MessageId)
			s.handles[id] = aws.ToString(m.ReceiptHandle) // only the latest handle can change the visibility
			if i, ok := s.seen[id]; ok {
				s.st.Duplicates++
				s.msgs[i].ReceiptHandle = aws.ToString(m.ReceiptHandle)
				continue
			}
			if len(s.msgs) >= s.opts.MaxMessages {
				continue // held, released below, not counted
			}
			fresh++
			s.seen[id] = len(s.msgs)
			s.msgs = append(s.msgs, fromSQS(m))
		}
		switch {
		case len(out.Messages) == 0:
			s.st.EmptyReceives++
			s.setStop(stopEmpty)
		case fresh == 0 && len(s.msgs) < s.opts.MaxMessages:
			s.setStop(stopRepeats)
		}
		if s.opts.Progress != nil {
			s.opts.Progress(len(s.msgs), s.st.ApproxDepth)
		}
		done := s.stopped != ""
		s.mu.Unlock()
		if done {
			return
		}
	}
}

// stop checks the bounds before a receive.
func (s *scanner) stop(ctx context.Context) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.stopped != "":
	case ctx.Err() != nil:
		s.setStop(stopCanceled)
	case len(s.msgs) >= s.opts.MaxMessages:
		s.setStop(stopMaxMessages)
	case s.opts.Now().Sub(s.start) >= s.opts.MaxDuration:
		s.setStop(stopMaxDuration)
	}
	return s.stopped != ""
}

// setStop records the first reason to stop (s.mu held).
func (s *scanner) setStop(reason string) {
	if s.stopped == "" {
		s.stopped = reason
		s.st.StopReason = reason
	}
}

// release makes everything the scan holds visible again, ten at a time. A
// failure is not fatal: the messages come back when the visibility timeout
// lapses.
func (s *scanner) release(ctx context.Context) {
	released, failed, _ := sqsio.Release(ctx, s.api, s.url, s.handles)
	s.st.Released += released
	s.st.ReleaseFailed += failed
}

// judge decides whether the scan covered the queue, and if not, why, what
// helps and when a rerun may see everything.
func (s *scanner) judge() {
	st := s.st
	// A letter held elsewhere comes back when its holder's visibility
	// timeout lapses: the queue's own when the holder set none, the scan's
	// when it was a receive of a scan like this one whose response was lost.
	// A holder may set a longer one: a rerun then says so again.
	holdBack := max(st.QueueVisibilityTimeoutSeconds, st.VisibilityTimeoutSeconds)
	held := fmt.Sprintf("until their visibility timeout lapses (about %ds: the longer of the queue's and this scan's; a reader may set a longer one)", holdBack)
	partial := func(cause, why string, retryAfter int) {
		st.Partial, st.PartialCause, st.PartialReason, st.RetryAfterSeconds = true, cause, why, retryAfter
	}
	switch st.StopReason {
	case stopMaxMessages:
		partial(CauseMaxMessages, fmt.Sprintf("stopped at the message bound (%d); the queue held about %d: raise the bound", s.opts.MaxMessages, st.ApproxDepth+st.ApproxInFlight), 0)
	case stopMaxDuration:
		partial(CauseMaxDuration, fmt.Sprintf("stopped at the time bound (%s) after %d messages; the queue held about %d: raise the bound", s.opts.MaxDuration, st.Unique, st.ApproxDepth+st.ApproxInFlight), 0)
	case stopCanceled:
		partial(CauseCanceled, fmt.Sprintf("canceled after %d messages", st.Unique), 0)
	case stopError:
		partial(CauseReceiveFailed, fmt.Sprintf("a receive failed after %d messages: %v; what it took comes back after the scan's visibility timeout (%ds)", st.Unique, s.firstErr, st.VisibilityTimeoutSeconds), st.VisibilityTimeoutSeconds)
	case stopRepeats, stopEmpty:
		if st.Unique >= st.ApproxDepth {
			break
		}
		why := fmt.Sprintf("saw %d of about %d messages", st.Unique, st.ApproxDepth)
		switch {
		case st.StopReason == stopRepeats:
			partial(CauseVisibilityLapsed, why+fmt.Sprintf(": messages came back before the scan ended (visibility timeout %ds lapsed); raise it", st.VisibilityTimeoutSeconds), 0)
		case st.FIFO:
			partial(CauseFIFOGroups, why+": the rest were not visible (behind an in-flight message of the same FIFO group, or in flight elsewhere)", 0)
		default:
			partial(CauseHidden, why+": the rest were hidden during the scan (received by another reader, or by a receive whose response was lost) "+held, holdBack)
		}
	}
	// Letters in flight at the start are missed unless they came back and
	// were read during the scan (then it saw as many as the queue held).
	if st.ApproxInFlight > 0 && !st.Partial && st.Unique < st.ApproxDepth+st.ApproxInFlight {
		partial(CauseInFlight, fmt.Sprintf("%s in flight when the scan started could not be read: held by another reader %s", plural(st.ApproxInFlight, "message"), held), holdBack)
	}
}

// fromSQS converts an SDK message.
func fromSQS(m types.Message) dlq.Message {
	out := dlq.Message{
		MessageID:     aws.ToString(m.MessageId),
		ReceiptHandle: aws.ToString(m.ReceiptHandle),
		Body:          aws.ToString(m.Body),
		Attributes:    sqsio.DeadLetterAttributes(m.MessageAttributes),
		System:        make(map[string]string, len(m.Attributes)),
	}
	for name, v := range m.Attributes {
		switch types.MessageSystemAttributeName(name) {
		case types.MessageSystemAttributeNameSentTimestamp:
			if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
				out.SentTimestamp = time.UnixMilli(ms).UTC()
			}
		case types.MessageSystemAttributeNameApproximateReceiveCount:
			out.ReceiveCount, _ = strconv.Atoi(v)
		case types.MessageSystemAttributeNameMessageGroupId:
			out.MessageGroupID = v
		default:
			out.System[name] = v
		}
	}
	return out
}

func atoiAttr(m map[string]string, name string) int {
	n, _ := strconv.Atoi(m[name])
	return n
}

// queueError turns "queue does not exist" into ErrQueueNotFound and wraps the rest.
func queueError(url string, err error) error {
	var nf *types.QueueDoesNotExist
	var api smithy.APIError
	if errors.As(err, &nf) || (errors.As(err, &api) && (api.ErrorCode() == "AWS.SimpleQueueService.NonExistentQueue" || api.ErrorCode() == "QueueDoesNotExist")) {
		return fmt.Errorf("%w: %s", ErrQueueNotFound, url)
	}
	return fmt.Errorf("triage: scan %s: %w", url, err)
}
