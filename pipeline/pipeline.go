package pipeline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentdlq/agentdlq/breaker"
	"github.com/agentdlq/agentdlq/events/deadletter"
)

// DefaultFile is the pipeline definition file at the project root. cdk.json
// names it in its context ("agentdlq:pipelines"), and the local runner reads it
// too, so that what runs locally is what deploys.
const DefaultFile = "pipelines.json"

// Queues locates one pipeline's hot queue and its DLQ, as deployed (the
// stack's outputs, the worker's environment) or found by name and tag. The
// worker, redrive and the local runner all take this one type.
type Queues struct {
	HotURL, HotARN string
	DLQURL, DLQARN string
	FIFO           bool
	// Senders are the principals whose dead letters carry evidence (the
	// DLQ's TagSenders tag: the worker's and the redrive role's unique ids),
	// when the queues were found by name or tag; triage.Senders reads them.
	Senders []string
}

// Version is the only supported version of the pipeline definition file.
const Version = 1

// Limits that the definition is validated against. maxReceiveCount is kept to
// 3–5: fewer retries a transient blip cannot survive, more burn invocations on
// poison that the worker did not recognise.
const (
	MinMaxReceiveCount = 3
	MaxMaxReceiveCount = 5
	// SQS bounds message retention to 60 s .. 14 days.
	MaxRetention = 14 * 24 * time.Hour
	// SQS bounds the visibility timeout to 12 hours.
	MaxVisibilityTimeout = 12 * time.Hour
	// Lambda's maximum timeout.
	MaxWorkerTimeout = 15 * time.Minute
	// Lambda's SQS event source: batch size 1..10 for FIFO, 1..10000 for standard.
	MaxBatchSizeFIFO     = 10
	MaxBatchSizeStandard = 10000
	MaxBatchWindow       = 300 * time.Second
	// Lambda's maximum concurrency of an SQS event source (ScalingConfig).
	MinMaxConcurrency = 2
	MaxMaxConcurrency = 1000
	// Lambda's provisioned mode for SQS (ProvisionedPollerConfig): 2..200
	// minimum and 2..2,000 maximum event pollers, each of which invokes
	// the function at most PollerInvokes times at once (the Lambda
	// developer guide, "Lambda parameters for Amazon SQS event source
	// mappings" and "Configuring scaling behavior for SQS event source
	// mappings", read 2026-12-07).
	MinPollers        = 2
	MaxMinimumPollers = 200
	MaxMaximumPollers = 2000
	PollerInvokes     = 10
)

// Message sizes. SQS bounds a queue's MaximumMessageSize to 1,024 ..
// 1,048,576 bytes (1 MiB, the default of queues made since August 2025) and
// counts a message as its body plus each attribute's name, data type and
// value.
//
// A dead letter is the original body, byte for byte, plus dlq_reason and
// dlq_meta, so a DLQ must take deadletter.Reserve (16 KiB) more than its hot
// queue: the hot queue's MaximumMessageSize is at most 1 MiB less the
// reserve (max_message_bytes, default DefaultMaxMessageBytes), and its DLQ's
// is the hot queue's plus the reserve (Pipeline.DLQMaxMessageBytes). The
// construct and the local topology set both, and the worker learns its DLQ's
// from EnvDLQMaxMessageBytes, so that a body at the hot queue's maximum is
// dead-lettered at once with its reason instead of being retried until the
// broker moves it.
const (
	SQSMinMessageBytes = 1024
	SQSMaxMessageBytes = 1 << 20
	// DefaultMaxMessageBytes is the hot queue's default MaximumMessageSize,
	// the most it can be: 1 MiB less deadletter.Reserve (1,032,192 bytes).
	DefaultMaxMessageBytes = SQSMaxMessageBytes - deadletter.Reserve
)

// EnvDLQMaxMessageBytes is the worker's environment variable that states its
// DLQ's MaximumMessageSize in bytes, the most a dead letter it sends may be
// (docs/wiring.md). The construct sets it; Pipeline.WorkerDLQMaxMessageBytes
// reads it.
const EnvDLQMaxMessageBytes = "AGENTDLQ_DLQ_MAX_MESSAGE_BYTES"

// FIFOPoison says what a FIFO pipeline does with poison in a message group.
type FIFOPoison string

const (
	// FIFOPoisonDeadLetter dead-letters the poison message and lets the group
	// go on with its next message (the default): one bad step does not stall a run.
	FIFOPoisonDeadLetter FIFOPoison = "dead_letter"
	// FIFOPoisonHoldGroup holds the group instead: the poison message and every
	// later message of its group are reported as batch item failures until the
	// poison's last allowed receive (maxReceiveCount), when the worker
	// dead-letters it itself with its reason and the group moves on. Use it
	// when later steps must never run ahead of an earlier one that a fix (or
	// a person) might still rescue within the receive budget.
	FIFOPoisonHoldGroup FIFOPoison = "hold_group"
)

// File is the whole pipeline definition file.
type File struct {
	// Version is required and must be 1.
	Version int `json:"version"`
	// Pipelines is required: at least one, names unique.
	Pipelines []Pipeline `json:"pipelines"`
}

// Pipeline is one hot queue, its DLQ, its worker and its alarms.
type Pipeline struct {
	// Name is required: lower-case letters, digits and dashes, 3–40 characters.
	// It names the local queues and tags the deployed resources; it is never a
	// physical name in AWS.
	Name string `json:"name"`
	// Owner is required: the team or person who alone may redrive this pipeline.
	Owner string `json:"owner"`
	// Description is optional.
	Description string `json:"description,omitempty"`
	// FIFO is optional (default false): a FIFO hot queue and a FIFO DLQ.
	FIFO bool `json:"fifo"`
	// MaxReceiveCount is required: 3, 4 or 5.
	MaxReceiveCount int `json:"max_receive_count"`
	// RetentionHours is optional (default 96, four days): the hot queue's retention.
	RetentionHours int `json:"retention_hours,omitempty"`
	// DLQRetentionHours is optional (default 336, fourteen days, the SQS maximum);
	// it must exceed RetentionHours, because a standard queue keeps the original
	// enqueue time when the broker moves a message to its DLQ.
	DLQRetentionHours int `json:"dlq_retention_hours,omitempty"`
	// WorkerTimeoutSeconds is optional (default 30): the worker Lambda's timeout.
	WorkerTimeoutSeconds int `json:"worker_timeout_seconds,omitempty"`
	// VisibilityTimeoutSeconds is optional (default six times the worker timeout);
	// it must be at least six times the worker timeout, as AWS advises for SQS
	// event sources.
	VisibilityTimeoutSeconds int `json:"visibility_timeout_seconds,omitempty"`
	// BatchSize is optional (default 10): records a worker invocation receives.
	BatchSize int `json:"batch_size,omitempty"`
	// BatchWindowSeconds is optional (default 0): how long the event source
	// gathers records before invoking. FIFO queues accept 0 only.
	BatchWindowSeconds int `json:"batch_window_seconds,omitempty"`
	// MaxConcurrency is optional (default 10, 2..1000, not with
	// ProvisionedPollers): the event source's maximum concurrency
	// (ScalingConfig.MaximumConcurrency), and the local poller count.
	MaxConcurrency int `json:"max_concurrency,omitempty"`
	// ProvisionedPollers is optional (default: none, Lambda's standard
	// scaling under MaxConcurrency): Lambda's provisioned mode for the
	// event source, dedicated event pollers between a minimum and a
	// maximum. Lambda refuses it together with a maximum concurrency.
	ProvisionedPollers *ProvisionedPollers `json:"provisioned_pollers,omitempty"`
	// ReservedConcurrency is optional (default MappingConcurrency(): the
	// most invocations the event source can make at once): the worker's
	// reserved concurrency. It must be at least MappingConcurrency(): an
	// invocation the function's own limit throttles hands its messages
	// back with their receive spent, so that a healthy task could reach
	// the DLQ as receive_limit without the worker ever seeing it.
	ReservedConcurrency int `json:"reserved_concurrency,omitempty"`
	// WorkerMemoryMB is optional (default 256).
	WorkerMemoryMB int `json:"worker_memory_mb,omitempty"`
	// MaxMessageBytes is optional (default DefaultMaxMessageBytes, 1,032,192):
	// the hot queue's MaximumMessageSize, 1,024 up to 1 MiB less
	// deadletter.Reserve; its DLQ's is this plus the reserve.
	MaxMessageBytes int `json:"max_message_bytes,omitempty"`
	// Backoff is optional: the visibility backoff of transient failures.
	Backoff Backoff `json:"backoff"`
	// RedriveLoopAfter is optional (default 2): a key dead-lettered again after
	// this many redrives becomes redrive_loop.
	RedriveLoopAfter int `json:"redrive_loop_after,omitempty"`
	// FIFOPoison is optional (default dead_letter); only read for FIFO pipelines.
	FIFOPoison FIFOPoison `json:"fifo_poison,omitempty"`
	// RetryAfterRequeues is optional (default 0: off), 0..100, standard
	// queues only: how many times the worker sends a message whose tool
	// returned the provider's Retry-After (of at most 15 minutes) back to
	// the hot queue with that delay, so that the receive does not count
	// against max_receive_count (batch.Config.RetryAfterRequeues). Off, a
	// Retry-After hides the message for that long and the receive counts.
	RetryAfterRequeues int `json:"retry_after_requeues,omitempty"`
	// FairQueueTenant is optional (default true on a standard queue, false
	// on a FIFO queue): producers (agentdlq send, the sample producer,
	// examples/worker's producer helper) set each task's MessageGroupId to
	// its tenant on the standard hot queue, which makes it an SQS fair
	// queue: a tenant with a backlog no longer raises the other tenants'
	// dwell time (FairQueueTenants). True is an error on a FIFO queue,
	// whose MessageGroupId is the ordering group (the run).
	FairQueueTenant *bool `json:"fair_queue_tenant,omitempty"`
	// SLO is optional: the dead-letter service level objective (defaults below).
	SLO SLO `json:"slo"`
	// Breaker is optional (default off): the per-dependency circuit breaker
	// of the worker (package breaker), which defers the tasks that need a
	// dependency that is failing with uncounted requeues.
	Breaker Breaker `json:"breaker,omitzero"`
	// Alarms is optional: thresholds of the alarms (defaults below).
	Alarms Alarms `json:"alarms"`
	// Triage is optional: how the triage scans and warns.
	Triage Triage `json:"triage"`
	// Eval is optional: the eval dataset export.
	Eval Eval `json:"eval"`
}

// Breaker is a pipeline's circuit breaker settings (breaker.Settings). On,
// it needs a standard queue and retry_after_requeues of at least
// RequiredRequeues: every deferral is an uncounted requeue, and a task
// must be able to ride out tolerance_seconds of them.
type Breaker struct {
	// Enabled is optional (default false): the worker runs the breaker.
	Enabled bool `json:"enabled,omitempty"`
	// Threshold is optional (default 5): dependency failures (dependency_open,
	// rate_limited, auth_config, a Retry-After) within the window that open it.
	Threshold int `json:"threshold,omitempty"`
	// MinTenants is optional (default 2): the distinct tenants whose
	// failures must be among them for it to open (at most
	// breaker.MaxTenants), so that one tenant's failures (its revoked key,
	// its exhausted quota, a hostile producer) cannot defer every tenant's
	// tasks: they keep counting, and that tenant's tasks are retried and
	// dead-lettered as any failure of their class. 1 opens on any
	// tenant's failures: set it for a pipeline of a single tenant, whose
	// outage would otherwise never open the breaker.
	MinTenants int `json:"min_tenants,omitempty"`
	// WindowSeconds is optional (default 60): the failure window, which
	// slides (breaker.Settings.Window).
	WindowSeconds int `json:"window_seconds,omitempty"`
	// OpenSeconds is optional (default 30): how long it stays open before
	// probing (longer when the provider's Retry-After asks).
	OpenSeconds int `json:"open_seconds,omitempty"`
	// Probes is optional (default 3): probes half-open, and the successes
	// that close it.
	Probes int `json:"probes,omitempty"`
	// RampSeconds is optional (default 60): after it closes, how long the
	// share of admitted tasks takes to reach all of them.
	RampSeconds int `json:"ramp_seconds,omitempty"`
	// ToleranceSeconds is optional (default 600): an outage shorter than
	// this dead-letters no task that needs the dependency (bounded by
	// retry_after_requeues, see RequiredRequeues).
	ToleranceSeconds int `json:"tolerance_seconds,omitempty"`
}

// Settings returns the breaker's decision settings.
func (b Breaker) Settings() breaker.Settings {
	return breaker.Settings{Threshold: b.Threshold, MinTenants: b.MinTenants, Window: time.Duration(b.WindowSeconds) * time.Second,
		OpenFor: time.Duration(b.OpenSeconds) * time.Second, Probes: b.Probes, Ramp: time.Duration(b.RampSeconds) * time.Second}
}

// RequiredRequeues is the retry_after_requeues a task needs to be deferred
// for ToleranceSeconds: every deferral while open or half-open waits at
// least a quarter of open_seconds (breaker.Admit), and two more cover the
// ramp.
func (b Breaker) RequiredRequeues() int {
	q := max(b.OpenSeconds/4, 1)
	return (b.ToleranceSeconds+q-1)/q + 2
}

// ProvisionedPollers is the event source's provisioned mode: Lambda keeps
// Minimum event pollers ready and scales up to Maximum, each invoking the
// worker at most PollerInvokes times at once.
type ProvisionedPollers struct {
	// Minimum is optional (default 2): 2..200.
	Minimum int `json:"minimum,omitempty"`
	// Maximum is required: Minimum..2000. It bounds the worker's
	// concurrency at PollerInvokes times Maximum, which the reserved
	// concurrency must cover (Lambda's own default of 200 pollers would
	// reserve 2,000), so it is never left to Lambda's default.
	Maximum int `json:"maximum"`
}

// Backoff is the exponential backoff with full jitter that the worker applies
// to transient failures through ChangeMessageVisibility: before receive n+1
// the message stays hidden for a random time in [0, min(Max, Base*2^(n-1))].
type Backoff struct {
	// BaseSeconds is optional (default 2); 0 with MaxSeconds 0 means defaults.
	BaseSeconds int `json:"base_seconds,omitempty"`
	// MaxSeconds is optional (default 120); at most the SQS maximum of 12 hours.
	MaxSeconds int `json:"max_seconds,omitempty"`
	// Disabled is optional (default false): leave retries to the visibility timeout.
	Disabled bool `json:"disabled,omitempty"`
}

// Alarms holds the alarm thresholds. Every field is optional; zero means the default.
type Alarms struct {
	DLQDepth            int `json:"dlq_depth,omitempty"`              // default 1 message
	NewDeadLetters      int `json:"new_dead_letters,omitempty"`       // default 1 in 5 minutes
	DLQOldestAgeSeconds int `json:"dlq_oldest_age_seconds,omitempty"` // default 86400 (1 day)
	ExpiryRiskHours     int `json:"expiry_risk_hours,omitempty"`      // default 48: alarm when the soonest expiry is nearer
	HotOldestAgeSeconds int `json:"hot_oldest_age_seconds,omitempty"` // default 900
	WorkerErrors        int `json:"worker_errors,omitempty"`          // default 1 in 5 minutes
	WorkerThrottles     int `json:"worker_throttles,omitempty"`       // default 1 in 5 minutes
	DLQSendFailures     int `json:"dlq_send_failures,omitempty"`      // default 1 in 5 minutes
	// ESMDroppedEvents: events the event source mapping dropped without
	// invoking the worker to the end (its DroppedEventCount).
	ESMDroppedEvents int `json:"esm_dropped_events,omitempty"` // default 1 in 5 minutes
	// ESMFailedPercent: the share of the events the mapping invoked the
	// worker with that came back failed (its FailedInvokeEventCount over
	// InvokedEventCount: failed invocations, throttles, and batch item
	// failures, each a receive spent).
	ESMFailedPercent int `json:"esm_failed_percent,omitempty"` // default 50 % in 5 minutes, 1..100
}

// SLO is the pipeline's service level objective on dead letters: every task
// the worker finishes is a good event (its Processed metric), every task it
// dead-letters a bad one (DeadLettered), over a rolling 30 days. The
// construct makes it a CloudWatch Application Signals SLO with burn-rate
// alarms; triage states the error budget a period spent.
type SLO struct {
	// TargetPercent is optional (default 99.9): the share of tasks that
	// must not be dead-lettered, above 50 and below 100 (at 100 any one
	// dead letter breaks the objective, and no budget is left to burn).
	TargetPercent float64 `json:"target_percent,omitempty"`
}

// DefaultSLOTargetPercent is SLO.TargetPercent's default.
const DefaultSLOTargetPercent = 99.9

// ErrorBudget is the share of tasks the objective allows to be
// dead-lettered, as a fraction (0.001 for 99.9 %).
func (s SLO) ErrorBudget() float64 { return (100 - s.TargetPercent) / 100 }

// Triage configures the read-only triage.
type Triage struct {
	ScheduleMinutes int `json:"schedule_minutes,omitempty"` // default 60
	WarningHours    int `json:"warning_hours,omitempty"`    // default 48: "expiring soon" window
	MaxMessages     int `json:"max_messages,omitempty"`     // default 100000 a scan
	MaxSeconds      int `json:"max_seconds,omitempty"`      // default 240 a scan
}

// Eval configures the export of recurring poison to eval datasets.
type Eval struct {
	// Threshold is optional (default 3): a group recurring at least this often is exported.
	Threshold int `json:"threshold,omitempty"`
	// DropFields are dotted paths removed from the exported input ("args.password").
	DropFields []string `json:"drop_fields,omitempty"`
	// HashFields are dotted paths replaced by a SHA-256 of their value ("tenant").
	HashFields []string `json:"hash_fields,omitempty"`
}

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9-]{1,38}[a-z0-9]$`)

// Parse decodes a definition file, rejecting unknown fields, applies the
// defaults and validates it.
func Parse(data []byte) (*File, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("pipeline definition: %w", decodeError(data, err, "an object {\"version\": 1, \"pipelines\": [...]}"))
	}
	// One object and nothing after it but white space: text after the
	// object is a mistake (a second object, a half-finished edit), not
	// something to ignore.
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("pipeline definition: text after the JSON object at byte %d", dec.InputOffset())
	}
	if err := f.ApplyDefaultsAndValidate(); err != nil {
		return nil, err
	}
	return &f, nil
}

// ParseOne decodes one pipeline definition, an entry of pipelines.json as
// a worker's AGENTDLQ_PIPELINE_JSON carries it (docs/wiring.md), rejecting
// unknown fields and text after the object, applies the defaults and
// validates it. batchpipeline.Config (functions/batch/batchpipeline) turns the result into a processor's
// settings.
func ParseOne(data []byte) (*Pipeline, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var p Pipeline
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("pipeline JSON: %w", decodeError(data, err, "one pipeline's object {\"name\": ..., \"owner\": ..., ...}"))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("pipeline JSON: text after the JSON object at byte %d", dec.InputOffset())
	}
	p.ApplyDefaults()
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("pipeline JSON: %w", err)
	}
	return &p, nil
}

// Load reads and parses a definition file.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("pipeline definition: %w", err)
	}
	f, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// ApplyDefaultsAndValidate fills optional fields and reports every problem at once.
func (f *File) ApplyDefaultsAndValidate() error {
	var errs []error
	if f.Version != Version {
		errs = append(errs, fmt.Errorf("version %d is not supported (want %d)", f.Version, Version))
	}
	if len(f.Pipelines) == 0 {
		errs = append(errs, errors.New("no pipelines defined"))
	}
	seen := map[string]bool{}
	for i := range f.Pipelines {
		p := &f.Pipelines[i]
		p.ApplyDefaults()
		if err := p.Validate(); err != nil {
			errs = append(errs, err)
		}
		if seen[p.Name] {
			errs = append(errs, fmt.Errorf("pipeline %q is defined twice", p.Name))
		}
		seen[p.Name] = true
	}
	return errors.Join(errs...)
}

// Get returns the pipeline of that name, or an error that lists the known ones.
func (f *File) Get(name string) (*Pipeline, error) {
	names := make([]string, 0, len(f.Pipelines))
	for i := range f.Pipelines {
		if f.Pipelines[i].Name == name {
			return &f.Pipelines[i], nil
		}
		names = append(names, f.Pipelines[i].Name)
	}
	return nil, fmt.Errorf("unknown pipeline %q (known: %s)", name, strings.Join(names, ", "))
}

// ApplyDefaults fills the optional fields that are zero.
func (p *Pipeline) ApplyDefaults() {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&p.RetentionHours, 96)
	def(&p.DLQRetentionHours, 336)
	def(&p.WorkerTimeoutSeconds, 30)
	def(&p.VisibilityTimeoutSeconds, 6*p.WorkerTimeoutSeconds)
	def(&p.BatchSize, 10)
	if p.ProvisionedPollers == nil {
		def(&p.MaxConcurrency, 10)
	} else {
		def(&p.ProvisionedPollers.Minimum, MinPollers)
	}
	def(&p.ReservedConcurrency, p.MappingConcurrency())
	def(&p.WorkerMemoryMB, 256)
	def(&p.MaxMessageBytes, DefaultMaxMessageBytes)
	if !p.Backoff.Disabled {
		def(&p.Backoff.BaseSeconds, 2)
		def(&p.Backoff.MaxSeconds, 120)
	}
	def(&p.RedriveLoopAfter, 2)
	if p.SLO.TargetPercent == 0 {
		p.SLO.TargetPercent = DefaultSLOTargetPercent
	}
	if b := &p.Breaker; b.Enabled {
		def(&b.Threshold, breaker.DefaultThreshold)
		def(&b.MinTenants, breaker.DefaultMinTenants)
		def(&b.WindowSeconds, int(breaker.DefaultWindow/time.Second))
		def(&b.OpenSeconds, int(breaker.DefaultOpenFor/time.Second))
		def(&b.Probes, breaker.DefaultProbes)
		def(&b.RampSeconds, int(breaker.DefaultRamp/time.Second))
		def(&b.ToleranceSeconds, 600)
	}
	if p.FIFOPoison == "" {
		p.FIFOPoison = FIFOPoisonDeadLetter
	}
	a := &p.Alarms
	def(&a.DLQDepth, 1)
	def(&a.NewDeadLetters, 1)
	def(&a.DLQOldestAgeSeconds, 86400)
	def(&a.ExpiryRiskHours, 48)
	def(&a.HotOldestAgeSeconds, 900)
	def(&a.WorkerErrors, 1)
	def(&a.WorkerThrottles, 1)
	def(&a.DLQSendFailures, 1)
	def(&a.ESMDroppedEvents, 1)
	def(&a.ESMFailedPercent, 50)
	def(&p.Triage.ScheduleMinutes, 60)
	def(&p.Triage.WarningHours, 48)
	def(&p.Triage.MaxMessages, 100000)
	def(&p.Triage.MaxSeconds, 240)
	def(&p.Eval.Threshold, 3)
}

// Validate reports every problem of one pipeline, each naming the field.
func (p *Pipeline) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("pipeline %q: "+format, append([]any{p.Name}, args...)...))
	}
	p.validateIdentity(bad)
	p.validateTimes(bad)
	p.validateMapping(bad)
	p.validateWorker(bad)
	p.validateAlarms(bad)
	return errors.Join(errs...)
}

// validateIdentity reports the problems of the name, the owner and the
// receive count.
func (p *Pipeline) validateIdentity(bad func(format string, args ...any)) {
	if !nameRE.MatchString(p.Name) {
		bad("name must be 3-40 lower-case letters, digits and dashes, starting with a letter")
	}
	switch {
	case strings.TrimSpace(p.Owner) == "":
		bad("owner is required: the named owner is the only one who may redrive")
	case strings.TrimSpace(p.Owner) != p.Owner:
		bad("owner %q has spaces around it: it is stamped as the %s tag value and compared as it stands", p.Owner, TagOwner)
	case utf8.RuneCountInString(p.Owner) > MaxTagValueRunes || !tagValueRE.MatchString(p.Owner):
		bad("owner %q is not a valid AWS tag value: at most %d letters, digits, spaces and _ . : / = + - @", p.Owner, MaxTagValueRunes)
	}
	if p.MaxReceiveCount < MinMaxReceiveCount || p.MaxReceiveCount > MaxMaxReceiveCount {
		bad("max_receive_count %d is outside %d..%d: fewer cannot ride out a transient failure, more burn invocations on poison",
			p.MaxReceiveCount, MinMaxReceiveCount, MaxMaxReceiveCount)
	}
}

// validateTimes reports the problems of the retention periods and the timeouts.
func (p *Pipeline) validateTimes(bad func(format string, args ...any)) {
	// The raw integers are bounded before any becomes a time.Duration:
	// 5124095576030527 hours would overflow into about 96 hours.
	retOK := within(p.RetentionHours, 1, int(MaxRetention/time.Hour))
	if !retOK {
		bad("retention_hours %d is outside SQS's 1..%d hours (14 days)", p.RetentionHours, int(MaxRetention/time.Hour))
	}
	dlqRetOK := within(p.DLQRetentionHours, 1, int(MaxRetention/time.Hour))
	if !dlqRetOK {
		bad("dlq_retention_hours %d is outside SQS's 1..%d hours (14 days)", p.DLQRetentionHours, int(MaxRetention/time.Hour))
	}
	if retOK && dlqRetOK && p.DLQRetention() <= p.Retention() {
		bad("dlq_retention_hours %d must exceed retention_hours %d: a standard queue keeps the original enqueue time when a message moves to its DLQ, so a shorter DLQ retention deletes evidence on arrival",
			p.DLQRetentionHours, p.RetentionHours)
	}
	workerOK := within(p.WorkerTimeoutSeconds, 1, int(MaxWorkerTimeout/time.Second))
	if !workerOK {
		bad("worker_timeout_seconds %d is outside 1..900", p.WorkerTimeoutSeconds)
	}
	switch {
	case !within(p.VisibilityTimeoutSeconds, 0, int(MaxVisibilityTimeout/time.Second)):
		bad("visibility_timeout_seconds %d is outside SQS's 0..43200 (12 hours)", p.VisibilityTimeoutSeconds)
	case workerOK && p.VisibilityTimeout() < 6*p.WorkerTimeout():
		bad("visibility_timeout_seconds %d must be at least six times worker_timeout_seconds (%d)",
			p.VisibilityTimeoutSeconds, 6*p.WorkerTimeoutSeconds)
	}
}

// validateMapping reports the problems of the event source: batches,
// concurrency or pollers, and the reserved concurrency that covers them.
func (p *Pipeline) validateMapping(bad func(format string, args ...any)) {
	maxBatch := MaxBatchSizeStandard
	if p.FIFO {
		maxBatch = MaxBatchSizeFIFO
	}
	if p.BatchSize < 1 || p.BatchSize > maxBatch {
		bad("batch_size %d is outside 1..%d", p.BatchSize, maxBatch)
	}
	if !within(p.BatchWindowSeconds, 0, int(MaxBatchWindow/time.Second)) {
		bad("batch_window_seconds %d is outside 0..300", p.BatchWindowSeconds)
	}
	if p.FIFO && p.BatchWindowSeconds != 0 {
		bad("batch_window_seconds must be 0 for a FIFO queue")
	}
	if !p.FIFO && p.BatchSize > 10 && p.BatchWindowSeconds == 0 {
		bad("batch_size above 10 needs batch_window_seconds of at least 1 (a Lambda rule)")
	}
	if pp := p.ProvisionedPollers; pp == nil {
		if !within(p.MaxConcurrency, MinMaxConcurrency, MaxMaxConcurrency) {
			bad("max_concurrency %d is outside Lambda's %d..%d", p.MaxConcurrency, MinMaxConcurrency, MaxMaxConcurrency)
		}
	} else {
		if p.MaxConcurrency != 0 {
			bad("max_concurrency %d cannot go with provisioned_pollers: Lambda takes either a maximum concurrency or provisioned mode on an SQS event source, and provisioned_pollers.maximum bounds the concurrency (%d invocations a poller)",
				p.MaxConcurrency, PollerInvokes)
		}
		minOK := within(pp.Minimum, MinPollers, MaxMinimumPollers)
		if !minOK {
			bad("provisioned_pollers.minimum %d is outside Lambda's %d..%d", pp.Minimum, MinPollers, MaxMinimumPollers)
		}
		switch {
		case pp.Maximum == 0:
			bad("provisioned_pollers.maximum is required: Lambda's default of 200 pollers can invoke the worker %d times at once, which the reserved concurrency would have to cover", 200*PollerInvokes)
		case !within(pp.Maximum, MinPollers, MaxMaximumPollers):
			bad("provisioned_pollers.maximum %d is outside Lambda's %d..%d", pp.Maximum, MinPollers, MaxMaximumPollers)
		case minOK && pp.Maximum < pp.Minimum:
			bad("provisioned_pollers.maximum %d is below its minimum %d", pp.Maximum, pp.Minimum)
		}
	}
	// Bounded before MappingConcurrency multiplies the maximum.
	if mc := p.MappingConcurrency(); p.ReservedConcurrency < mc && mc > 0 && mc <= MaxMaximumPollers*PollerInvokes {
		bad("reserved_concurrency %d is below %d, the most invocations the event source can make at once (%s): a throttled invocation returns its messages with the receive spent, and a healthy task can reach the DLQ as receive_limit; set it to at least %d, or lower the event source's concurrency",
			p.ReservedConcurrency, mc, p.mappingConcurrencySource(), mc)
	}
}

// validateWorker reports the problems of the worker: memory, message size,
// backoff, redrive loops, requeues, fair queues, the SLO, the breaker and
// FIFO poison.
func (p *Pipeline) validateWorker(bad func(format string, args ...any)) {
	if p.WorkerMemoryMB < 128 || p.WorkerMemoryMB > 10240 {
		bad("worker_memory_mb %d is outside 128..10240", p.WorkerMemoryMB)
	}
	if !within(p.MaxMessageBytes, SQSMinMessageBytes, DefaultMaxMessageBytes) {
		bad("max_message_bytes %d is outside %d..%d: SQS allows 1 MiB (%d bytes) a message, and the DLQ needs %d bytes more than the hot queue for dlq_reason and dlq_meta",
			p.MaxMessageBytes, SQSMinMessageBytes, DefaultMaxMessageBytes, SQSMaxMessageBytes, deadletter.Reserve)
	}
	if !p.Backoff.Disabled {
		if p.Backoff.BaseSeconds < 1 || p.Backoff.MaxSeconds < p.Backoff.BaseSeconds || p.Backoff.MaxSeconds > int(MaxVisibilityTimeout/time.Second) {
			bad("backoff needs 1 <= base_seconds <= max_seconds <= 43200 (got %d, %d)", p.Backoff.BaseSeconds, p.Backoff.MaxSeconds)
		}
	}
	if p.RedriveLoopAfter < 1 {
		bad("redrive_loop_after %d must be at least 1", p.RedriveLoopAfter)
	}
	switch {
	case p.RetryAfterRequeues < 0 || p.RetryAfterRequeues > 100:
		bad("retry_after_requeues %d is outside 0..100", p.RetryAfterRequeues)
	case p.RetryAfterRequeues > 0 && p.FIFO:
		bad("retry_after_requeues needs a standard queue: a FIFO queue takes no per-message delay, and a requeued copy would leave its message group's order")
	}
	if p.FIFO && p.FairQueueTenant != nil && *p.FairQueueTenant {
		bad("fair_queue_tenant needs a standard queue: on a FIFO queue MessageGroupId is the ordering group (the run), not the tenant")
	}
	if t := p.SLO.TargetPercent; !(t > 50 && t < 100) { // NaN fails too
		bad("slo.target_percent %g is outside 50..100 (both excluded): at 100 one dead letter breaks the objective", t)
	}
	if b := p.Breaker; b.Enabled {
		if err := b.Settings().Validate(); err != nil {
			bad("breaker: %v", err)
		}
		switch {
		case p.FIFO:
			bad("breaker needs a standard queue: it defers tasks with uncounted requeues, which a FIFO queue cannot take")
		case !within(b.ToleranceSeconds, 1, 24*3600):
			bad("breaker.tolerance_seconds %d is outside 1..86400", b.ToleranceSeconds)
		case p.RetryAfterRequeues < b.RequiredRequeues():
			bad("breaker needs retry_after_requeues of at least %d to defer a task for tolerance_seconds %d (every deferral is an uncounted requeue of at least open_seconds/4 = %ds, two more for the ramp); got %d",
				b.RequiredRequeues(), b.ToleranceSeconds, max(b.OpenSeconds/4, 1), p.RetryAfterRequeues)
		}
	}
	if p.FIFOPoison != FIFOPoisonDeadLetter && p.FIFOPoison != FIFOPoisonHoldGroup {
		bad("fifo_poison %q must be %q or %q", p.FIFOPoison, FIFOPoisonDeadLetter, FIFOPoisonHoldGroup)
	}
}

// validateAlarms reports the problems of the alarms, the triage and the
// eval export.
func (p *Pipeline) validateAlarms(bad func(format string, args ...any)) {
	a := p.Alarms
	for name, v := range map[string]int{
		"alarms.dlq_depth": a.DLQDepth, "alarms.new_dead_letters": a.NewDeadLetters,
		"alarms.dlq_oldest_age_seconds": a.DLQOldestAgeSeconds, "alarms.expiry_risk_hours": a.ExpiryRiskHours,
		"alarms.hot_oldest_age_seconds": a.HotOldestAgeSeconds, "alarms.worker_errors": a.WorkerErrors,
		"alarms.worker_throttles": a.WorkerThrottles, "alarms.dlq_send_failures": a.DLQSendFailures,
		"alarms.esm_dropped_events": a.ESMDroppedEvents, "alarms.esm_failed_percent": a.ESMFailedPercent,
	} {
		if v < 1 {
			bad("%s %d must be at least 1", name, v)
		}
	}
	if a.ESMFailedPercent > 100 {
		bad("alarms.esm_failed_percent %d is a share of the invoked events: at most 100", a.ESMFailedPercent)
	}
	if a.ExpiryRiskHours >= p.DLQRetentionHours {
		bad("alarms.expiry_risk_hours %d must be below dlq_retention_hours %d", a.ExpiryRiskHours, p.DLQRetentionHours)
	}
	if p.Triage.ScheduleMinutes < 1 || p.Triage.WarningHours < 1 || p.Triage.MaxMessages < 1 || p.Triage.MaxSeconds < 1 {
		bad("triage schedule_minutes, warning_hours, max_messages and max_seconds must be positive")
	}
	if p.Triage.ScheduleMinutes > maxScheduleMinutes || p.Triage.WarningHours > int(MaxRetention/time.Hour) || p.Triage.MaxSeconds > maxTriageSeconds {
		bad("triage schedule_minutes %d, warning_hours %d and max_seconds %d must be at most %d (a week), %d (14 days) and %d (a day)",
			p.Triage.ScheduleMinutes, p.Triage.WarningHours, p.Triage.MaxSeconds, maxScheduleMinutes, int(MaxRetention/time.Hour), maxTriageSeconds)
	}
	for name, v := range map[string]int{"alarms.dlq_oldest_age_seconds": a.DLQOldestAgeSeconds, "alarms.hot_oldest_age_seconds": a.HotOldestAgeSeconds} {
		if v > int(MaxRetention/time.Second) {
			bad("%s %d exceeds SQS's 14-day retention (%d s): the alarm could never fire", name, v, int(MaxRetention/time.Second))
		}
	}
	if p.Eval.Threshold < 1 {
		bad("eval.threshold %d must be at least 1", p.Eval.Threshold)
	}
}

// within reports whether lo <= v <= hi.
func within(v, lo, hi int) bool { return lo <= v && v <= hi }

// Bounds of the raw integers of a definition that become durations.
const (
	maxScheduleMinutes = 7 * 24 * 60
	maxTriageSeconds   = 24 * 60 * 60
)

// MaxTagValueRunes is the length limit of an AWS tag value.
const MaxTagValueRunes = 256

// tagValueRE is the character set AWS allows in a tag value (the Tagging
// API's [\p{L}\p{Z}\p{N}_.:/=+\-@]*).
var tagValueRE = regexp.MustCompile(`^[\p{L}\p{Z}\p{N}_.:/=+\-@]*$`)

// Retention is the hot queue's message retention.
func (p *Pipeline) Retention() time.Duration { return time.Duration(p.RetentionHours) * time.Hour }

// DLQRetention is the DLQ's message retention.
func (p *Pipeline) DLQRetention() time.Duration {
	return time.Duration(p.DLQRetentionHours) * time.Hour
}

// WorkerTimeout is the worker Lambda's timeout.
func (p *Pipeline) WorkerTimeout() time.Duration {
	return time.Duration(p.WorkerTimeoutSeconds) * time.Second
}

// VisibilityTimeout is the hot queue's visibility timeout.
func (p *Pipeline) VisibilityTimeout() time.Duration {
	return time.Duration(p.VisibilityTimeoutSeconds) * time.Second
}

// BatchWindow is the event source's maximum batching window.
func (p *Pipeline) BatchWindow() time.Duration {
	return time.Duration(p.BatchWindowSeconds) * time.Second
}

// FairQueueTenants reports whether producers set each task's
// MessageGroupId to its tenant (SQS fair queues): FairQueueTenant, which
// defaults to true on a standard queue; always false on a FIFO queue.
func (p *Pipeline) FairQueueTenants() bool {
	if p.FIFO {
		return false
	}
	return p.FairQueueTenant == nil || *p.FairQueueTenant
}

// MappingConcurrency is the most invocations of the worker the event
// source makes at once: MaxConcurrency, or in provisioned mode
// PollerInvokes for each of ProvisionedPollers.Maximum pollers. The
// worker's reserved concurrency must be at least this.
func (p *Pipeline) MappingConcurrency() int {
	if p.ProvisionedPollers != nil {
		return p.ProvisionedPollers.Maximum * PollerInvokes
	}
	return p.MaxConcurrency
}

func (p *Pipeline) mappingConcurrencySource() string {
	if p.ProvisionedPollers != nil {
		return fmt.Sprintf("provisioned_pollers.maximum %d × %d invocations a poller", p.ProvisionedPollers.Maximum, PollerInvokes)
	}
	return fmt.Sprintf("max_concurrency %d", p.MaxConcurrency)
}

// DLQMaxMessageBytes is the DLQ's MaximumMessageSize: the hot queue's plus
// deadletter.Reserve, so that the dead letter of any message the hot
// queue accepted fits.
func (p *Pipeline) DLQMaxMessageBytes() int { return p.MaxMessageBytes + deadletter.Reserve }

// WorkerDLQMaxMessageBytes is the DLQ's MaximumMessageSize as a worker's
// environment states it: getenv(EnvDLQMaxMessageBytes), which the construct
// sets, or, when that is unset, DLQMaxMessageBytes (what the construct and
// the local topology create for the definition). A value that is not an
// integer in SQS's 1,024..1,048,576 is an error. getenv is os.Getenv in a
// Lambda's main.
func (p *Pipeline) WorkerDLQMaxMessageBytes(getenv func(string) string) (int, error) {
	v := getenv(EnvDLQMaxMessageBytes)
	if v == "" {
		return p.DLQMaxMessageBytes(), nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || !within(n, SQSMinMessageBytes, SQSMaxMessageBytes) {
		return 0, fmt.Errorf("%s %q is not a message size in SQS's %d..%d bytes", EnvDLQMaxMessageBytes, v, SQSMinMessageBytes, SQSMaxMessageBytes)
	}
	return n, nil
}

// HotQueueName is the hot queue's name where the name is ours to choose
// (locally). In AWS, CloudFormation names the queues and the resources are
// found by their tags.
func (p *Pipeline) HotQueueName() string { return p.queueName("") }

// DLQName is the DLQ's name where the name is ours to choose (locally).
func (p *Pipeline) DLQName() string { return p.queueName("-dlq") }

func (p *Pipeline) queueName(suffix string) string {
	if p.FIFO {
		return p.Name + suffix + ".fifo"
	}
	return p.Name + suffix
}

// Tag keys stamped on every deployed resource of a pipeline (and on the local
// queues), so that tools find them without physical names.
const (
	TagPipeline = "agentdlq:pipeline"
	TagOwner    = "agentdlq:owner"
	TagRole     = "agentdlq:role" // "hot" or "dlq"
	// TagRedriveRole is on the DLQ only: the ARN (or, locally, the name) of
	// the pipeline's redrive role. The CDK app sets it; in AWS the redrive
	// gate admits only an assumed-role session of that role.
	TagRedriveRole = "agentdlq:redrive-role"
	// TagSenders is on the DLQ only: the IAM unique ids (AROA…) of the roles
	// that may send to it — the worker's and the redrive role's — separated
	// by spaces. Triage takes a letter's dlq_reason/dlq_meta as evidence only
	// when its SenderId is one of them (triage.Senders).
	TagSenders = "agentdlq:dlq-senders"
)

// SendersOfTag splits a TagSenders value into its sender ids (nil when it
// names none).
func SendersOfTag(v string) []string {
	if f := strings.Fields(v); len(f) > 0 {
		return f
	}
	return nil
}

// MaxMessageGroupIDLen is SQS's limit on a MessageGroupId: 128 characters,
// each a letter, a digit or ASCII punctuation.
const MaxMessageGroupIDLen = 128

// TenantGroupID is the MessageGroupId of a task of tenant on a fair
// (standard) queue: the tenant itself, or "" when it cannot be one (empty,
// longer than 128 characters, or holding a character SQS refuses in a
// MessageGroupId: a space, a non-ASCII letter). A message sent without a
// MessageGroupId is a tenant of its own to SQS, which keeps it from being
// held behind a noisy tenant but makes no tenant of it either; a producer
// whose tenants are not such identifiers should map them to ones that are.
func TenantGroupID(tenant string) string {
	if tenant == "" || len(tenant) > MaxMessageGroupIDLen {
		return ""
	}
	for i := 0; i < len(tenant); i++ {
		c := tenant[i]
		if c <= ' ' || c > '~' { // ASCII letters, digits and punctuation are '!'..'~'
			return ""
		}
	}
	return tenant
}
