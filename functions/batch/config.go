package batch

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/agentdlq/agentdlq/ledger"
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
	FIFOPoison FIFOPoison
	// HotQueueURL is optional: the hot queue's URL, needed for the
	// visibility backoff. Empty disables the backoff.
	HotQueueURL string
	// SourceQueueARN is optional: stamped in dlq_meta (default: each
	// record's eventSourceARN).
	SourceQueueARN string
	// Backoff is optional (default base 2 s, max 120 s).
	Backoff Backoff
	// Ledger is optional: the idempotency ledger that Record.Begin,
	// StartEffect and SetReceipt use. Without it, there is no duplicate detection.
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
	// Lease is optional (default 5 minutes): how long Record.Begin holds a key.
	Lease time.Duration
	// RedriveLoopAfter is optional (default 2): a key dead-lettered again
	// after this many redrives is dead-lettered as redrive_loop.
	RedriveLoopAfter int
	// RetryAfterRequeues is optional (default 0: off): how many times a
	// message whose handler returned a retryable outcome with the
	// provider's Retry-After (Outcome.After) of at most MaxRequeueDelay is
	// sent back to the hot queue with that delay (SendMessageBatch, IAM
	// sqs:SendMessage on the hot queue) and acknowledged, so that the
	// receive does not count against MaxReceiveCount. The copy carries
	// AttrRequeued, which keeps the count of the receives spent before; past
	// the limit, and for a longer delay, the message is hidden for the
	// Retry-After instead (ChangeMessageVisibility, counted). 0..100;
	// standard queues only (a FIFO queue takes no per-message delay, and a
	// copy would leave its group's order); needs HotQueueURL. docs/worker.md
	// has the trade-off.
	RetryAfterRequeues int
	// Classify is optional (default none): the caller's own error
	// classification, asked about every failure that is not a typed outcome
	// before the built-in rules (see Classify and ClassifyFunc). Use it for
	// a dependency's own error types, as asynq's IsFailure and Watermill's
	// poison filter allow, instead of wrapping every error in the handler.
	Classify ClassifyFunc
	// MaxMessageBytes is optional (default 1048576, 1 MiB: SQS's maximum
	// and the MaximumMessageSize of a new queue): the DLQ's
	// MaximumMessageSize, 1024..1048576. A dead letter that would be larger
	// gives up, in order, its history, folded attributes, kept attributes
	// and all but the identity of its metadata (deadletter.FitDeadLetter);
	// the body stays byte for byte. A body within deadletter.Reserve of it
	// is dead-lettered with its reason all the same, so a hot queue whose
	// MaximumMessageSize is this less deadletter.Reserve sends the
	// processor nothing it cannot dead-letter. Set it to the DLQ's own
	// value: a larger one makes SQS refuse the send (the record is then
	// retried, and moved by the broker as receive_limit).
	MaxMessageBytes int
	// Evidence is optional: where the processor keeps, as a claim check,
	// what a dead letter had to give up to fit (an *s3.Client). Without it,
	// what was given up is lost from the dead letter (logged by name).
	Evidence S3API
	// EvidenceBucket is required with Evidence: the bucket (the pipeline's
	// eval bucket) under whose <Pipeline>/evidence/<yyyy-mm-dd>/ prefix
	// each claim check is put as <message id>.json.
	EvidenceBucket string
	// WorkerVersion is optional: stamped in dlq_meta.
	WorkerVersion string
	// Logger is optional (default slog.Default()). The processor logs
	// failures only: nothing per successful record. With a handler from
	// NewLogHandler (slog's JSON handler), the processor writes its line per
	// dead letter itself, the same bytes, at a fraction of the cost.
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

// FIFOPoison says what a FIFO queue does with a failure that is
// dead-lettered at once (Config.FIFOPoison); the values are a pipeline
// definition's fifo_poison.
type FIFOPoison string

const (
	// FIFOPoisonDeadLetter dead-letters the record with its reason and lets
	// the rest of its message group go on.
	FIFOPoisonDeadLetter FIFOPoison = "dead_letter"
	// FIFOPoisonHoldGroup holds the group instead: the record and the rest
	// of its group are retried until the record's last allowed receive, when
	// it is dead-lettered with its own reason.
	FIFOPoisonHoldGroup FIFOPoison = "hold_group"
)

// DefaultMaxMessageBytes is the default Config.MaxMessageBytes: 1 MiB,
// SQS's maximum message size and the MaximumMessageSize of a queue made
// without one. A DLQ made before August 2025 with the then default of 256
// KiB needs Config.MaxMessageBytes set to 262144.
const DefaultMaxMessageBytes = 1024 * 1024

// ErrConfig wraps every error of New and of Handle on a processor that New
// did not build.
var ErrConfig = errors.New("batch: invalid configuration")

// New applies the defaults, validates cfg and returns a Processor. It fails
// fast, naming every problem, on a missing handler, SQS client or DLQ.
func New(cfg Config) (*Processor, error) {
	if cfg.Backoff.Base == 0 && cfg.Backoff.Max == 0 {
		cfg.Backoff.Base, cfg.Backoff.Max = 2*time.Second, 120*time.Second
	}
	if cfg.FIFOPoison == "" {
		cfg.FIFOPoison = FIFOPoisonDeadLetter
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
	if cfg.MaxMessageBytes == 0 {
		cfg.MaxMessageBytes = DefaultMaxMessageBytes
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
	if cfg.FIFOPoison != FIFOPoisonDeadLetter && cfg.FIFOPoison != FIFOPoisonHoldGroup {
		bad("FIFOPoison %q must be %q or %q", cfg.FIFOPoison, FIFOPoisonDeadLetter, FIFOPoisonHoldGroup)
	}
	if !cfg.Backoff.Disabled && (cfg.Backoff.Base < time.Second || cfg.Backoff.Max < cfg.Backoff.Base || cfg.Backoff.Max > 12*time.Hour) {
		bad("Backoff needs 1s <= Base <= Max <= 12h (got %v, %v)", cfg.Backoff.Base, cfg.Backoff.Max)
	}
	if cfg.MaxMessageBytes < 1024 || cfg.MaxMessageBytes > 1048576 {
		bad("MaxMessageBytes %d is outside SQS's 1024..1048576", cfg.MaxMessageBytes)
	}
	if (cfg.Evidence == nil) != (strings.TrimSpace(cfg.EvidenceBucket) == "") {
		bad("Evidence and EvidenceBucket go together: the client and the bucket the claim checks are put in")
	}
	if cfg.Concurrency < 1 || cfg.Concurrency > 1000 {
		bad("Concurrency %d is outside 1..1000", cfg.Concurrency)
	}
	switch {
	case cfg.RetryAfterRequeues < 0 || cfg.RetryAfterRequeues > 100:
		bad("RetryAfterRequeues %d is outside 0..100", cfg.RetryAfterRequeues)
	case cfg.RetryAfterRequeues > 0 && cfg.FIFO:
		bad("RetryAfterRequeues needs a standard queue: a FIFO queue takes no per-message delay, and a requeued copy would leave its group's order")
	case cfg.RetryAfterRequeues > 0 && strings.TrimSpace(cfg.HotQueueURL) == "":
		bad("RetryAfterRequeues needs HotQueueURL: the requeued copy is sent there")
	}
	if cfg.Lease < 0 || cfg.RedriveLoopAfter < 1 {
		bad("Lease must be positive and RedriveLoopAfter at least 1 (got %v, %d)", cfg.Lease, cfg.RedriveLoopAfter)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrConfig, errors.Join(errs...))
	}
	var l ledger.Ledger
	if cfg.Ledger != nil {
		l = recoveringLedger{cfg.Ledger} // a panicking ledger call is that call's error
	}
	return &Processor{
		handler: cfg.Handler, sqs: cfg.SQS, dlqURL: cfg.DLQURL, hotURL: cfg.HotQueueURL,
		sourceARN: cfg.SourceQueueARN, maxReceive: cfg.MaxReceiveCount, pipeline: cfg.Pipeline,
		fifo: cfg.FIFO, holdGroup: cfg.FIFO && cfg.FIFOPoison == FIFOPoisonHoldGroup,
		backoff: cfg.Backoff, ledger: l, lease: cfg.Lease, concurrency: cfg.Concurrency, margin: cfg.DeadlineMargin, loopAfter: cfg.RedriveLoopAfter, requeues: cfg.RetryAfterRequeues,
		classify: cfg.Classify, version: cfg.WorkerVersion, log: cfg.Logger, metrics: cfg.Metrics, now: cfg.Now, rand: cfg.Rand,
		pipelineKey: quoteJSON(cfg.Pipeline),
		maxMessage:  cfg.MaxMessageBytes, evidence: cfg.Evidence, evidenceBucket: cfg.EvidenceBucket,
	}, nil
}
