package sampleworker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/smithy-go"

	"github.com/agentdlq/agentdlq/breaker"
	"github.com/agentdlq/agentdlq/events/agenttask"
	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/functions/batch"
	"github.com/agentdlq/agentdlq/functions/batch/batchpipeline"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/pipeline"
)

// Config configures a Worker. New validates it and fails fast.
type Config struct {
	// Pipeline is required: its maxReceiveCount, FIFO setting, backoff and
	// redrive-loop threshold drive the processor.
	Pipeline *pipeline.Pipeline
	// Queues is required: DLQURL (dead letters go there); HotURL enables the
	// visibility backoff; HotARN is stamped in dlq_meta.
	Queues pipeline.Queues
	// SQS is required: an *sqs.Client (SendMessageBatch, ChangeMessageVisibility).
	SQS batch.SQSAPI
	// Ledger is required: the idempotency ledger (ledger.NewDynamo in AWS,
	// ledger.NewMemory in tests and `agentdlq invoke`).
	Ledger ledger.Ledger
	// Catalog is optional (default Catalog(nil), the sample tools).
	Catalog agenttask.Catalog
	// Dependencies is optional: with it, a task whose args.fault names a
	// dependency fails only while that dependency is down (DependencyDir
	// locally); without it, a fault fails on every receive.
	Dependencies Dependencies
	// Effects is optional: where the mutating tools' calls land (see
	// Effects; EffectDir locally), which their verifiers read. Without it
	// the calls leave no trace but the ledger's.
	Effects Effects
	// BreakerStore is required when the pipeline's breaker is on
	// (pipeline.Breaker.Enabled): where the breakers' state is shared by
	// every worker instance (dynamostore.Store on the ledger table in AWS
	// and locally; breaker.NewMemory in tests). A task whose args.fault
	// names a dependency needs that dependency, and runs under its breaker
	// (batch.Guarded). Ignored when the breaker is off.
	BreakerStore breaker.Store
	// Observe is optional: called after each task's handling with its
	// tenant and idempotency key, the receives it has spent of its budget
	// (batch.Record.ReceiveCount: this one and those a requeue carried)
	// and the handler's result (nil: done). The load bench's outage run
	// counts the receives a task spent with it. Safe for concurrent use.
	Observe func(tenant, key string, receives int, err error)
	// Concurrency is optional (default 1): records (standard queue) or
	// message groups (FIFO) handled at once; see batch.Config.Concurrency.
	Concurrency int
	// DLQMaxMessageBytes is optional (default batch.DefaultMaxMessageBytes,
	// 1 MiB): the DLQ's MaximumMessageSize (batch.Config.MaxMessageBytes).
	DLQMaxMessageBytes int
	// Evidence and EvidenceBucket are optional, together: where a dead
	// letter too large for the DLQ keeps what it gave up (a claim check; see
	// batch.Config.Evidence), an *s3.Client and the eval bucket.
	Evidence       batch.S3API
	EvidenceBucket string
	// WorkerVersion is optional: stamped in dlq_meta.
	WorkerVersion string
	// Logger is optional (default slog.Default()).
	Logger *slog.Logger
	// Metrics is optional (default os.Stdout): embedded metric format lines.
	Metrics io.Writer
	// Now is optional (default time.Now).
	Now func() time.Time
	// Rand is optional: the backoff jitter (see batch.Config.Rand).
	Rand func(n int64) int64
}

// Worker is the sample agent-task worker.
type Worker struct {
	catalog agenttask.Catalog
	deps    Dependencies
	effects Effects
	proc    *batch.Processor
	breaker *breaker.Breaker
	log     *slog.Logger
	observe func(tenant, key string, receives int, err error)
}

// New builds a Worker. It fails when the pipeline, the DLQ, the SQS client
// or the ledger is missing, or when the queues disagree with the pipeline.
func New(cfg Config) (*Worker, error) {
	if cfg.Pipeline == nil {
		return nil, fmt.Errorf("%w: worker: Pipeline is required", batch.ErrConfig)
	}
	if cfg.Ledger == nil {
		return nil, fmt.Errorf("%w: worker: Ledger is required: without it a redelivered mutating task could repeat its effect", batch.ErrConfig)
	}
	if cfg.Queues.FIFO != cfg.Pipeline.FIFO {
		return nil, fmt.Errorf("%w: worker: pipeline %q has fifo=%v but its queues have fifo=%v", batch.ErrConfig, cfg.Pipeline.Name, cfg.Pipeline.FIFO, cfg.Queues.FIFO)
	}
	w := &Worker{catalog: cfg.Catalog, deps: cfg.Dependencies, effects: cfg.Effects}
	if w.catalog == nil {
		w.catalog = Catalog(nil)
	}
	if b := cfg.Pipeline.Breaker; b.Enabled {
		if cfg.BreakerStore == nil {
			return nil, fmt.Errorf("%w: worker: pipeline %q has its breaker on: BreakerStore is required", batch.ErrConfig, cfg.Pipeline.Name)
		}
		br, err := breaker.New(breaker.Config{Pipeline: cfg.Pipeline.Name, Store: cfg.BreakerStore, Settings: b.Settings(),
			Logger: cfg.Logger, Metrics: cfg.Metrics, Now: cfg.Now})
		if err != nil {
			return nil, fmt.Errorf("%w: worker: %w", batch.ErrConfig, err)
		}
		w.breaker = br
	}
	w.log, w.observe = cfg.Logger, cfg.Observe
	if w.log == nil {
		w.log = slog.Default()
	}
	bc := batchpipeline.Config(cfg.Pipeline)
	bc.Handler = w.handle
	bc.SQS = cfg.SQS
	bc.DLQURL = cfg.Queues.DLQURL
	bc.HotQueueURL = cfg.Queues.HotURL
	bc.SourceQueueARN = cfg.Queues.HotARN
	bc.Ledger = cfg.Ledger
	bc.WorkerVersion = cfg.WorkerVersion
	bc.Evidence, bc.EvidenceBucket = cfg.Evidence, cfg.EvidenceBucket
	bc.MaxMessageBytes = cfg.DLQMaxMessageBytes
	bc.Concurrency = cfg.Concurrency
	bc.Logger, bc.Metrics, bc.Now, bc.Rand = cfg.Logger, cfg.Metrics, cfg.Now, cfg.Rand
	p, err := batch.New(bc)
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	w.proc = p
	return w, nil
}

// ParsePipeline reads one pipeline definition as JSON (the
// AGENTDLQ_PIPELINE_JSON of docs/wiring.md: an entry of pipelines.json),
// rejecting unknown fields, applies the defaults and validates it.
func ParsePipeline(data []byte) (*pipeline.Pipeline, error) {
	return pipeline.ParseOne(data)
}

// Handle is the Lambda handler on aws-lambda-go's event type: the partial
// batch response of ev.
func (w *Worker) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	return w.proc.Handle(ctx, ev)
}

// Invoke makes the Worker a lambda.Handler (see batch.Processor.Invoke):
// the Lambda entry runs lambda.Start(w).
func (w *Worker) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	return w.proc.Invoke(ctx, payload)
}

// HandleEvent is Handle on an event decoded by batch.DecodeEvent.
func (w *Worker) HandleEvent(ctx context.Context, ev *batch.Event) (events.SQSEventResponse, error) {
	return w.proc.HandleEvent(ctx, ev)
}

// handle runs one agent task.
func (w *Worker) handle(ctx context.Context, r batch.Record) (err error) {
	// The tool is checked apart so that the catalog is searched once.
	task, err := agenttask.DecodeTask(r.Body(), nil)
	if err != nil {
		return err // a *agenttask.ValidationError: poison with its reason
	}
	tool, err := agenttask.CheckTool(&task, w.catalog)
	if err != nil {
		return err // tool_unknown or tool_version_unsupported
	}
	r.Describe(&task)
	if w.observe != nil {
		defer func() { w.observe(task.Tenant, task.IdempotencyKey, r.ReceiveCount, err) }()
	}
	// DecodeTask checked that args is a JSON object: the digest is taken.
	digest, err := agenttask.ArgsDigest(task.Args)
	if err != nil {
		return batch.Poison(deadletter.ReasonSchemaInvalid, err)
	}
	// The breaker first, before the ledger: a task deferred while its
	// dependency's breaker is open costs no ledger write. (A fault that
	// does not parse, or names no valid dependency, is judged below as
	// before.)
	dep := ""
	if f, ferr := ParseFault(task.Args); ferr == nil && f != nil && CheckDependencyName(f.Dependency) == nil {
		dep = f.Dependency
	}
	if err := batch.AdmitDependency(ctx, w.breaker, w.log, dep); err != nil {
		return err
	}
	if err := r.Begin(ctx, task.Tenant, task.IdempotencyKey, digest, tool.Mutates); err != nil {
		return err
	}
	fault, err := ParseFault(task.Args)
	if err != nil {
		// DecodeTask checked that args is JSON; a fault of the wrong shape
		// is the producer's bug.
		return batch.Poison(deadletter.ReasonSchemaInvalid, err)
	}
	if fault != nil && fault.Dependency != "" {
		// A name no dependency can have is the producer's bug, as a fault
		// of the wrong shape: no retry can make it valid (checked before
		// the health is read, which would fail on it as if it were an
		// outage, and whether or not health is kept at all).
		if err := CheckDependencyName(fault.Dependency); err != nil {
			return batch.Poison(deadletter.ReasonSchemaInvalid, fmt.Errorf("args.fault.dependency: %w", err))
		}
	}
	if fault == nil || fault.Dependency == "" {
		return w.run(ctx, r, &task, tool, fault)
	}
	// The task needs the dependency (admitted above): its result is the breaker's.
	return batch.ReportDependency(ctx, w.breaker, w.log, fault.Dependency, task.Tenant, r.ReceiveCount, w.run(ctx, r, &task, tool, fault))
}

// run calls the tool, with the fault the task asks for when it applies.
func (w *Worker) run(ctx context.Context, r batch.Record, task *agenttask.Task, tool agenttask.Tool, fault *Fault) error {
	if fault != nil && fault.Dependency != "" && w.deps != nil {
		down, err := w.deps.Down(ctx, fault.Dependency)
		if err != nil {
			// The health could not be read: retry inside the budget.
			return batch.Transient(err)
		}
		if !down {
			fault = nil // the dependency is up: the call succeeds
		}
	}
	receipt := Receipt(task.Args)
	if fault != nil {
		if err := w.inject(ctx, r, tool, fault); err != nil {
			if tool.Mutates && errors.Is(err, context.DeadlineExceeded) && (fault.Kind == FaultTimeoutAfterEffect || fault.Kind == FaultLostReply) {
				// The call started (inject marked it) and reached the
				// system; with lost_reply it took effect too, and only
				// its reply was lost.
				if cerr := w.call(ctx, task.IdempotencyKey, receipt, fault.Kind == FaultLostReply); cerr != nil {
					return cerr
				}
			}
			return err
		}
	}
	if tool.Mutates {
		if err := r.StartEffect(ctx); err != nil {
			return err
		}
		if err := w.call(ctx, task.IdempotencyKey, receipt, true); err != nil {
			return err // after the call started: effect_unknown
		}
	}
	r.SetReceipt(receipt)
	return nil
}

// call records a mutating call in Effects, when there is a store: it
// reached the system and, when applied, took effect with receipt.
func (w *Worker) call(ctx context.Context, key, receipt string, applied bool) error {
	if w.effects == nil {
		return nil
	}
	if err := w.effects.Reached(ctx, key); err != nil {
		return err
	}
	if !applied {
		return nil
	}
	return w.effects.Applied(ctx, key, receipt)
}

// Receipt is a sample tool's work and its effect receipt: the hex SHA-256
// of the raw args bytes.
func Receipt(args []byte) string {
	sum := sha256.Sum256(args)
	var buf [2 * sha256.Size]byte
	hex.Encode(buf[:], sum[:])
	return string(buf[:])
}

// inject raises the failure a fault asks for (nil when it does not apply on
// this receive).
func (w *Worker) inject(ctx context.Context, r batch.Record, tool agenttask.Tool, f *Fault) error {
	if f.Retryable || f.Kind == FaultRateLimited {
		if f.UntilReceive > 0 && r.ReceiveCount >= f.UntilReceive {
			return nil // the upstream recovered
		}
		// A retryable status, with the provider's Retry-After when it gave
		// one; rate_limited is a 429 that always gives one.
		status, msg, secs := f.Status, f.Error, f.RetryAfterSeconds
		if f.Kind == FaultRateLimited {
			status, secs = 429, max(secs, 1)
			if msg == "" {
				msg = "upstream returned 429 Too Many Requests, Retry-After: " + strconv.Itoa(secs)
			}
		}
		o := batch.Transient(&statusError{status: status, msg: msg})
		if secs > 0 {
			return o.After(time.Duration(secs) * time.Second)
		}
		return o
	}
	switch f.Kind {
	case FaultTimeoutAfterEffect, FaultLostReply:
		if tool.Mutates {
			if err := r.StartEffect(ctx); err != nil {
				return err
			}
		}
		// Effect-aware classification: effect_unknown once the effect started.
		return fmt.Errorf("%s: no reply after the call started: %w", tool.Name, context.DeadlineExceeded)
	case FaultAuth:
		code := f.Code
		if code == "" {
			code = "AccessDenied"
		}
		return batch.AuthConfig(&smithy.GenericAPIError{Code: code, Message: "the tool's credentials were refused", Fault: smithy.FaultClient})
	case FaultDependencyOpen:
		return batch.DependencyOpen(fmt.Errorf("circuit breaker open for %q", f.Dependency))
	case FaultPolicyLimit:
		return batch.PolicyLimit(errors.New("the task exceeded its step, turn or cost limit"))
	case FaultSignatureInvalid:
		return batch.Security(deadletter.ReasonSignatureInvalid, errors.New("the task's signature did not verify"))
	case FaultGuardrailReject:
		return batch.Security(deadletter.ReasonGuardrailReject, errors.New("a guardrail rejected the task"))
	case FaultPanic:
		panic(fmt.Sprintf("%s: injected panic", tool.Name))
	case FaultError:
		msg := f.Error
		if msg == "" {
			msg = "injected error"
		}
		return errors.New(msg)
	}
	return fmt.Errorf("%w: kind %q", errNoFaultKind, f.Kind)
}
