package capacity

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/agentdlq/agentdlq/pipeline"
)

// Input is what Plan needs. Pipeline and Rate are required.
type Input struct {
	Pipeline *pipeline.Pipeline
	// Rate is the sustained task rate, tasks a second.
	Rate float64
	// ToolP50 and ToolP99 are the tool call's latency (default 200 ms and
	// 1 s): the time a record waits on the team's tool, not the drain's.
	ToolP50, ToolP99 time.Duration
	// PayloadBytes is a task's size on the queue (default 1 KiB).
	PayloadBytes int
	// PerTask are the drain's requests per task (default MeasuredMostlyOK).
	PerTask *PerTask
	// Prices (default USEast1).
	Prices *Prices
	// CallLatency is one AWS call's latency from the worker (default 8 ms:
	// DynamoDB's "single-digit millisecond" plus the network).
	CallLatency time.Duration
	// AccountConcurrency is the Region's Lambda concurrency quota
	// (default 1,000), shared with the account's other functions.
	AccountConcurrency int
}

// MeasuredMostlyOK are the drain's requests per task on the mostly-ok mix
// (97 % valid, 90 % read-only), measured on 2026-12-07 with `agentdlq local
// bench --mix mostly-ok --tasks 2000` after a read-only tool's task went to
// one ledger write (docs/performance.md, "What a task costs"): the figures
// Size scales when Input.PerTask is nil. LogBytes holds Lambda's platform
// lines at the measured 0.1015 invocations a task.
var MeasuredMostlyOK = PerTask{
	SQSRequests: 0.2325, WorkerSQSRequests: 0.0295, WriteUnits: 1.08, ReadUnits: 0.09, LedgerCalls: 1.17,
	LogBytes: 89.928, Invocations: 0.1015, BilledMsPerInvocation: 18, Deliveries: 1.01, DeadLetters: 0.02,
}

// Recommendation is what to set: each field but ProcessorConcurrency (the
// worker's batch.Config.Concurrency) and VisibilityTimeoutSeconds (a
// floor) is a setting of pipelines.json; Plan.Checks compares them with the
// pipeline's.
type Recommendation struct {
	BatchSize          int `json:"batch_size"`
	BatchWindowSeconds int `json:"batch_window_seconds"`
	// MaxConcurrency is the mapping's maximum concurrency (on-demand
	// polling); 0 when ProvisionedPollers is recommended instead (the two
	// do not combine).
	MaxConcurrency     int      `json:"max_concurrency,omitempty"`
	ProvisionedPollers *Pollers `json:"provisioned_pollers,omitempty"`
	WorkerMemoryMB     int      `json:"worker_memory_mb"`
	// ProcessorConcurrency is the worker's batch.Config.Concurrency: the
	// records of a batch handled at once.
	ProcessorConcurrency int `json:"processor_concurrency"`
	// ReservedConcurrency is the worker's reserved concurrency: at least
	// the mapping's maximum, so that the mapping never invokes into a
	// throttle (a throttled batch returns to the queue with its receive
	// spent).
	ReservedConcurrency int `json:"reserved_concurrency"`
	// VisibilityTimeoutSeconds is the smallest safe visibility timeout:
	// six times the worker's timeout plus the batching window, Lambda's
	// advice for SQS event sources.
	VisibilityTimeoutSeconds int      `json:"visibility_timeout_seconds"`
	Why                      []string `json:"why"`
}

// Pollers are provisioned mode's minimum and maximum event pollers.
type Pollers struct {
	Min int `json:"min"`
	Max int `json:"max"`
}

// Prediction is what the rate costs with the recommendation.
type Prediction struct {
	RecordsPerInvocation  float64 `json:"records_per_invocation"`
	InvocationsPerSecond  float64 `json:"invocations_per_second"`
	BilledMsP50           float64 `json:"billed_ms_per_invocation_p50"`
	BilledMsP99           float64 `json:"billed_ms_per_invocation_p99"`
	LambdaConcurrency     float64 `json:"lambda_concurrency"`
	LambdaConcurrencyP99  float64 `json:"lambda_concurrency_p99"`
	GBSecondsPerSecond    float64 `json:"gb_seconds_per_second"`
	GBSecondsPerMonth     float64 `json:"gb_seconds_per_month"`
	LedgerWriteUnitsPerS  float64 `json:"ledger_write_units_per_second"`
	LedgerReadUnitsPerS   float64 `json:"ledger_read_units_per_second"`
	SQSRequestsPerSecond  float64 `json:"sqs_requests_per_second"`
	InFlightMessages      float64 `json:"in_flight_messages"`
	SecondsToScale        float64 `json:"seconds_to_scale"`
	DrainCostPerMillion   Cost    `json:"drain_cost_per_million_tasks"`
	WorkerCostPerMillion  Cost    `json:"worker_cost_per_million_tasks"`
	DrainCostPerMonth     float64 `json:"drain_cost_per_month"`
	WorkerCostPerMonth    float64 `json:"worker_cost_per_month"`
	DrainPerTask          PerTask `json:"drain_per_task"`
	BilledMsDrainOnly     float64 `json:"billed_ms_per_invocation_drain_only"`
	DeadLettersPerSecond  float64 `json:"dead_letters_per_second"`
	RedriveSecondsPerHour float64 `json:"redrive_seconds_per_hour_of_dead_letters"`
}

// Quota is a documented limit and how much of it the rate uses.
type Quota struct {
	Name   string  `json:"name"`
	Limit  float64 `json:"limit"`
	Unit   string  `json:"unit"`
	Used   float64 `json:"used"`
	Share  float64 `json:"share"` // Used / Limit
	Source string  `json:"source"`
	Note   string  `json:"note,omitempty"`
	// Fixed is true for a limit the rate does not move toward (one key's
	// writes on a partition): it is listed, and left out of FirstQuota.
	Fixed bool `json:"fixed,omitempty"`
}

// Plan is Size's answer.
type Plan struct {
	Pipeline  string         `json:"pipeline"`
	FIFO      bool           `json:"fifo"`
	Rate      float64        `json:"rate"`
	ToolP50Ms float64        `json:"tool_p50_ms"`
	ToolP99Ms float64        `json:"tool_p99_ms"`
	Payload   int            `json:"payload_bytes"`
	Recommend Recommendation `json:"recommend"`
	Predict   Prediction     `json:"predict"`
	// Quotas are sorted by Share, the nearest first; FirstQuota names it
	// and MaxRate is the rate at which it is reached (the rate divided by
	// its share).
	Quotas     []Quota `json:"quotas"`
	FirstQuota string  `json:"first_quota"`
	MaxRate    float64 `json:"max_rate"`
	Prices     Prices  `json:"prices"`
	// Checks compare the pipeline's own settings (pipelines.json, with
	// their defaults) with what the rate needs: a Check that is not OK
	// says what goes wrong at this rate with the pipeline as it is.
	Checks []Check `json:"checks"`
}

// Check is one pipeline setting against the rate.
type Check struct {
	Setting string `json:"setting"`
	// Pipeline is the setting as the pipeline has it; Recommended what
	// Plan.Recommend says.
	Pipeline    string `json:"pipeline"`
	Recommended string `json:"recommended"`
	// OK is false when the setting, as it is, fails the rate (a backlog,
	// throttles, a setting Lambda refuses); a setting that only differs
	// from the recommendation (more than needed, another mode) is OK with
	// a Note.
	OK   bool   `json:"ok"`
	Note string `json:"note,omitempty"`
}

// Failed returns the checks that are not OK.
func (pl *Plan) Failed() []Check {
	var out []Check
	for _, c := range pl.Checks {
		if !c.OK {
			out = append(out, c)
		}
	}
	return out
}

// The documented figures Plan checks against (docs/deploying.md, "Sizing a
// pipeline", cites each).
const (
	// ESMScalePerMinute: a standard queue's mapping adds up to 300
	// concurrent invocations a minute, from 5, up to 1,000 batches.
	ESMScalePerMinute = 300
	ESMStartBatches   = 5
	ESMMaxBatches     = 1000
	// PollerBytesPerSecond: an event poller of provisioned mode moves
	// about 5 MB/s.
	PollerBytesPerSecond = 5e6
	// PollerInvocations: the concurrent invocations one poller is assumed
	// to keep going (not a documented figure; see Size's Why).
	PollerInvocations = 10
	// MinPollers, MaxPollers: provisioned mode's bounds for SQS.
	MinPollers = 2
	MaxPollers = 2000
	// FIFOCallsPerSecond: a FIFO queue (not high throughput) supports 300
	// calls a second per action, 3,000 messages with batches of ten.
	FIFOCallsPerSecond = 300
	// PartitionWCU, PartitionRCU: one DynamoDB partition's ceiling (one
	// key's writes cannot exceed it).
	PartitionWCU = 1000
	PartitionRCU = 3000
	// TableWRU: an on-demand table's default throughput quota.
	TableWRU = 40000
	// MoveTaskPerSecond: StartMessageMoveTask's maximum rate.
	MoveTaskPerSecond = 500
	// InFlightStandard, InFlightFIFO: messages received and not deleted.
	InFlightStandard = 120000
	InFlightFIFO     = 120000
	// DefaultAccountConcurrency: a Region's Lambda concurrency quota.
	DefaultAccountConcurrency = 1000
	// UnreservedMinimum: Lambda keeps this much of the account's
	// concurrency unreserved; a function's reserved concurrency may take
	// the rest.
	UnreservedMinimum = 100
)

// Sources of the figures, each checked on 2026-12-07 (docs/deploying.md).
var Sources = map[string]string{
	"esm":        "https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html",
	"pollers":    "https://docs.aws.amazon.com/lambda/latest/api/API_ProvisionedPollerConfig.html",
	"account":    "https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html",
	"fifo":       "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-messages.html",
	"partition":  "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/warm-throughput-scenarios.html",
	"table":      "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/on-demand-capacity-mode.html",
	"movetask":   "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_StartMessageMoveTask.html",
	"inflight":   "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-fifo.html",
	"visibility": "https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html",
	"reserved":   "https://docs.aws.amazon.com/lambda/latest/dg/configuration-concurrency.html",
}

// ErrInput is returned (wrapped) for inputs Plan cannot use.
var ErrInput = errors.New("capacity: bad input")

// Size sizes in.Pipeline for in.Rate. Its error wraps ErrInput for inputs
// it cannot use.
func Size(in Input) (*Plan, error) {
	p := in.Pipeline
	if p == nil {
		return nil, fmt.Errorf("%w: a pipeline is required", ErrInput)
	}
	if err := in.check(); err != nil {
		return nil, err
	}
	pt := MeasuredMostlyOK
	if in.PerTask != nil {
		pt = *in.PerTask
	}
	prices := USEast1
	if in.Prices != nil {
		prices = *in.Prices
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	out := &Plan{Pipeline: p.Name, FIFO: p.FIFO, Rate: in.Rate, ToolP50Ms: ms(in.ToolP50), ToolP99Ms: ms(in.ToolP99), Payload: in.PayloadBytes, Prices: prices}
	rec := &out.Recommend
	pr := &out.Predict

	rec.batching(pr, in.Rate, in.PayloadBytes)
	B := float64(rec.BatchSize)
	r := pr.RecordsPerInvocation
	// The processor's Concurrency: every record of a batch at once (each
	// waits on DynamoDB and on the tool); a FIFO batch's message groups in
	// order.
	rec.ProcessorConcurrency = rec.BatchSize
	rec.Why = append(rec.Why, fmt.Sprintf("processor Concurrency %d: a record spends its time waiting (ledger calls, the tool), so a batch's records run together", rec.ProcessorConcurrency))

	// Invocation duration: the records in waves of Concurrency, each wave
	// the ledger calls in sequence plus the tool; then the batch's dead
	// letters and visibility changes.
	waves := math.Ceil(r / float64(rec.ProcessorConcurrency))
	drainMs := DrainMs(r, rec.ProcessorConcurrency, pt.LedgerCalls/math.Max(pt.Deliveries, 1), in.CallLatency)
	pr.BilledMsDrainOnly = math.Ceil(drainMs)
	pr.BilledMsP50 = math.Ceil(drainMs + waves*ms(in.ToolP50))
	pr.BilledMsP99 = math.Ceil(drainMs + waves*ms(in.ToolP99))

	// Worker memory: the construct's 256 MB, more when a batch's payloads
	// (held about four times: the event, the decoded records, a dead
	// letter's copy, the response) need it.
	need := 128 + 4*B*float64(in.PayloadBytes)/(1<<20)
	rec.WorkerMemoryMB = 256
	if need > 192 {
		rec.WorkerMemoryMB = int(math.Ceil(need/64)*64) + 64
		rec.Why = append(rec.Why, fmt.Sprintf("worker memory %d MB: a batch of %d payloads of %d bytes", rec.WorkerMemoryMB, rec.BatchSize, in.PayloadBytes))
	}
	memGB := float64(rec.WorkerMemoryMB) / 1024

	// Concurrency by Little's law: invocations a second times their
	// duration.
	deliveries := math.Max(pt.Deliveries, 1)
	pr.InvocationsPerSecond = in.Rate * deliveries / r
	pr.LambdaConcurrency = pr.InvocationsPerSecond * pr.BilledMsP50 / 1000
	pr.LambdaConcurrencyP99 = pr.InvocationsPerSecond * pr.BilledMsP99 / 1000
	pr.GBSecondsPerSecond = pr.InvocationsPerSecond * pr.BilledMsP50 / 1000 * memGB
	pr.GBSecondsPerMonth = pr.GBSecondsPerSecond * 730 * 3600

	// Maximum concurrency, or provisioned pollers: the p99 concurrency with
	// half again as headroom. When reaching it from the mapping's five
	// takes more than a minute of scaling (300 a minute), or the payload
	// bytes need more than a few pollers, provisioned mode (about three
	// times faster scaling, pollers always on) is the answer.
	target := rec.concurrency(pr, p.FIFO, p.ProvisionedPollers != nil, in.Rate*deliveries*float64(in.PayloadBytes))
	rec.Why = append(rec.Why, fmt.Sprintf("reserved concurrency %d: not below the mapping's maximum, so the drain never throttles itself (a throttled batch returns with its receive count spent, and can reach the DLQ as receive_limit unseen)", rec.ReservedConcurrency))
	timeout := p.WorkerTimeoutSeconds
	if timeout == 0 {
		timeout = 30
	}
	if need := int(math.Ceil(pr.BilledMsP99 / 1000 * 2)); need > timeout {
		rec.Why = append(rec.Why, fmt.Sprintf("worker timeout: a p99 batch takes %.1f s, more than half the worker's %d s: raise worker_timeout_seconds or lower the batch", pr.BilledMsP99/1000, timeout))
	}
	rec.VisibilityTimeoutSeconds = 6*timeout + rec.BatchWindowSeconds

	// The drain's requests at this batch fill: the mapping's receive and
	// delete a batch (payload in 64 KiB chunks), the worker's SQS calls
	// as measured; the ledger's units as measured.
	pr.requests(in, pt, prices, rec.WorkerMemoryMB, p.FIFO)
	// In flight: every message from its receive to its delete (the window
	// and the batch), and the retried ones hidden for their backoff.
	backoff := float64(p.Backoff.BaseSeconds)
	if backoff == 0 {
		backoff = 2
	}
	pr.InFlightMessages = in.Rate*deliveries*(float64(rec.BatchWindowSeconds)+pr.BilledMsP99/1000) + in.Rate*(deliveries-1)*backoff
	pr.DeadLettersPerSecond = in.Rate * pt.DeadLetters
	pr.RedriveSecondsPerHour = pr.DeadLettersPerSecond * 3600 / MoveTaskPerSecond

	out.Checks = checks(in, out)
	out.Quotas = quotas(in, out, target)
	sort.SliceStable(out.Quotas, func(i, j int) bool { return out.Quotas[i].Share > out.Quotas[j].Share })
	for _, q := range out.Quotas {
		if !q.Fixed && q.Share > 0 {
			out.FirstQuota, out.MaxRate = q.Name, in.Rate/q.Share
			break
		}
	}
	return out, nil
}

// batching chooses the batch size and window for rate tasks a second of
// payload bytes, and predicts the records an invocation gets.
func (rec *Recommendation) batching(pr *Prediction, rate float64, payload int) {
	// Batch size: ten (a receive returns at most ten; FIFO's maximum),
	// fewer when ten payloads would not fit Lambda's 6 MB invocation.
	rec.BatchSize = 10
	if n := int(6e6 / float64(payload+500)); n < rec.BatchSize {
		rec.BatchSize = max(1, n)
		rec.Why = append(rec.Why, fmt.Sprintf("batch size %d: %d payloads of %d bytes fit Lambda's 6 MB synchronous invocation", rec.BatchSize, rec.BatchSize, payload))
	}
	B := float64(rec.BatchSize)
	// Batching window: batches fill by themselves above about five full
	// batches a second (the mapping starts with five pollers); below, a
	// one-second window fills them (fewer invocations and requests, up to
	// a second more latency).
	if rate >= ESMStartBatches*B {
		rec.BatchWindowSeconds = 0
		rec.Why = append(rec.Why, fmt.Sprintf("batching window 0: at %.0f tasks/s batches of %d fill without waiting", rate, rec.BatchSize))
	} else {
		rec.BatchWindowSeconds = 1
		rec.Why = append(rec.Why, fmt.Sprintf("batching window 1 s: at %.1f tasks/s a batch of %d would not fill; the window trades up to 1 s of latency for fewer invocations and requests", rate, rec.BatchSize))
	}
	pr.RecordsPerInvocation = math.Min(B, math.Max(1, rate*float64(max(rec.BatchWindowSeconds, 1))/ESMStartBatches))
	if rate >= ESMStartBatches*B {
		pr.RecordsPerInvocation = B
	}
}

// check checks in, and fills in the defaults of what it leaves zero. Its
// error wraps ErrInput.
func (in *Input) check() error {
	p := in.Pipeline
	if !(in.Rate > 0) || math.IsInf(in.Rate, 0) {
		return fmt.Errorf("%w: the rate must be a positive number of tasks a second, not %v", ErrInput, in.Rate)
	}
	if in.ToolP50 == 0 {
		in.ToolP50 = 200 * time.Millisecond
	}
	if in.ToolP99 == 0 {
		in.ToolP99 = max(in.ToolP50, time.Second)
	}
	if in.ToolP50 < 0 || in.ToolP99 < in.ToolP50 {
		return fmt.Errorf("%w: tool latency p50 %v, p99 %v: want 0 <= p50 <= p99", ErrInput, in.ToolP50, in.ToolP99)
	}
	if in.PayloadBytes == 0 {
		in.PayloadBytes = 1024
	}
	maxMsg := p.MaxMessageBytes
	if maxMsg == 0 {
		maxMsg = 1 << 20
	}
	if in.PayloadBytes < 0 || in.PayloadBytes > maxMsg {
		return fmt.Errorf("%w: payload %d bytes: the pipeline's messages hold 1 to %d", ErrInput, in.PayloadBytes, maxMsg)
	}
	if in.CallLatency == 0 {
		in.CallLatency = 8 * time.Millisecond
	}
	if in.AccountConcurrency == 0 {
		in.AccountConcurrency = DefaultAccountConcurrency
	}
	return nil
}

// concurrency chooses the maximum concurrency, or provisioned pollers (for
// a pipeline already in provisioned mode too), and the reserved
// concurrency, for the predicted p99 concurrency and the payload bytes a
// second; it returns the target concurrency.
func (rec *Recommendation) concurrency(pr *Prediction, fifo, provisioned bool, bytesPerS float64) int {
	target := int(math.Ceil(pr.LambdaConcurrencyP99 * 1.5))
	target = max(target, 2)
	pr.SecondsToScale = math.Max(0, (float64(target)-ESMStartBatches)/ESMScalePerMinute*60)
	if provisioned || !fifo && (target > ESMScalePerMinute || bytesPerS > 2*PollerBytesPerSecond) {
		// The minimum covers the bytes (about 5 MB/s a poller, documented);
		// the maximum also the concurrency at about ten invocations a
		// poller (an assumption: the figure is not in the API reference).
		minP := max(MinPollers, int(math.Ceil(bytesPerS/PollerBytesPerSecond)))
		maxP := max(2*minP, int(math.Ceil(float64(target)/PollerInvocations)))
		rec.ProvisionedPollers = &Pollers{Min: min(minP, 200), Max: min(MaxPollers, maxP)}
		// The reserved concurrency covers every invocation the pollers can
		// make (pipeline.MappingConcurrency), as the pipeline requires.
		rec.ReservedConcurrency = max(target, rec.ProvisionedPollers.Max*pipeline.PollerInvokes)
		why := fmt.Sprintf("%d concurrent invocations take %.0f s to reach at 300 a minute from 5", target, pr.SecondsToScale)
		if provisioned {
			why = "the pipeline is in provisioned mode"
		}
		rec.Why = append(rec.Why, fmt.Sprintf("provisioned pollers %d..%d (no maximum concurrency: the two do not combine): %s; a poller moves about 5 MB/s (%.1f MB/s here), and is assumed to keep about %d invocations going",
			rec.ProvisionedPollers.Min, rec.ProvisionedPollers.Max, why, bytesPerS/1e6, PollerInvocations))
	} else {
		rec.MaxConcurrency = min(max(target, 2), ESMMaxBatches)
		rec.ReservedConcurrency = rec.MaxConcurrency
		rec.Why = append(rec.Why, fmt.Sprintf("maximum concurrency %d: the p99 concurrency %.1f with half again as headroom", rec.MaxConcurrency, pr.LambdaConcurrencyP99))
	}
	return target
}

// requests predicts the drain's and the worker's requests and costs at the
// predicted batch fill.
func (pr *Prediction) requests(in Input, pt PerTask, prices Prices, memoryMB int, fifo bool) {
	r := pr.RecordsPerInvocation
	deliveries := math.Max(pt.Deliveries, 1)
	chunks := math.Max(1, math.Ceil(r*float64(in.PayloadBytes)/(64*1024)))
	drain := pt
	drain.Invocations = deliveries / r
	drain.SQSRequests = deliveries/r*(chunks+1) + pt.WorkerSQSRequests
	drain.BilledMsPerInvocation = pr.BilledMsDrainOnly
	drain.LogBytes = pt.LogBytes
	pr.DrainPerTask = drain
	pr.DrainCostPerMillion = prices.PerMillion(drain, memoryMB, fifo)
	worker := drain
	worker.BilledMsPerInvocation = pr.BilledMsP50
	pr.WorkerCostPerMillion = prices.PerMillion(worker, memoryMB, fifo)
	perMonth := in.Rate * 730 * 3600 / 1e6
	pr.DrainCostPerMonth = pr.DrainCostPerMillion.Total * perMonth
	pr.WorkerCostPerMonth = pr.WorkerCostPerMillion.Total * perMonth
	pr.LedgerWriteUnitsPerS = in.Rate * pt.WriteUnits
	pr.LedgerReadUnitsPerS = in.Rate * pt.ReadUnits
	pr.SQSRequestsPerSecond = in.Rate * drain.SQSRequests
}

// quotas lists the documented limits with what the plan uses of each.
func quotas(in Input, pl *Plan, target int) []Quota {
	pr := &pl.Predict
	conc := math.Max(pr.LambdaConcurrencyP99, 1)
	qs := []Quota{
		{Name: "event source mapping concurrency", Limit: ESMMaxBatches, Unit: "concurrent batches", Used: conc, Source: Sources["esm"],
			Note: fmt.Sprintf("scales from 5 by up to 300 a minute: %.0f s to reach %d; provisioned mode scales about 3x faster", pr.SecondsToScale, target)},
		{Name: "account concurrency", Limit: float64(in.AccountConcurrency), Unit: "concurrent executions", Used: conc, Source: Sources["account"],
			Note: "shared with every function of the account in the Region; new accounts start lower"},
		{Name: "DynamoDB table throughput (on-demand default)", Limit: TableWRU, Unit: "write units/s", Used: pr.LedgerWriteUnitsPerS, Source: Sources["table"]},
		{Name: "DynamoDB partition", Limit: PartitionWCU, Unit: "write units/s on one key", Used: pr.DrainPerTask.WriteUnits / math.Max(pr.BilledMsP50/1000, 0.001), Source: Sources["partition"], Fixed: true,
			Note: "each ledger key takes a few writes; only a hot key (one idempotency key reused at a high rate) or a brand-new table's first partitions come near; 3,000 read units/s a partition"},
		{Name: "StartMessageMoveTask rate", Limit: MoveTaskPerSecond, Unit: "messages/s", Used: pr.DeadLettersPerSecond, Source: Sources["movetask"],
			Note: fmt.Sprintf("a redrive of one hour of dead letters takes %.0f s at 500/s; dead letters arriving faster than 500/s cannot be redriven as fast as they come", pr.RedriveSecondsPerHour)},
	}
	inflight := float64(InFlightStandard)
	if pl.FIFO {
		inflight = InFlightFIFO
	}
	qs = append(qs, Quota{Name: "in-flight messages", Limit: inflight, Unit: "messages", Used: pr.InFlightMessages, Source: Sources["inflight"],
		Note: "standard 120,000; FIFO 120,000 on the current quotas page (20,000 before)"})
	if pl.FIFO {
		qs = append(qs, Quota{Name: "FIFO throughput (not high-throughput)", Limit: FIFOCallsPerSecond, Unit: "ReceiveMessage calls/s", Used: in.Rate * math.Max(pr.DrainPerTask.Invocations, 0.1), Source: Sources["fifo"],
			Note: "300 calls/s per action, 3,000 messages/s in batches of ten; high-throughput mode raises it per partition"})
	}
	if pl.Recommend.ProvisionedPollers != nil {
		qs = append(qs, Quota{Name: "provisioned pollers", Limit: MaxPollers, Unit: "pollers", Used: float64(pl.Recommend.ProvisionedPollers.Max), Source: Sources["pollers"],
			Note: "minimum 2..200, maximum up to 2,000; about 5 MB/s a poller"})
	}
	for i := range qs {
		qs[i].Share = qs[i].Used / qs[i].Limit
	}
	return qs
}

// checks compares the pipeline's settings with the rate's needs.
func checks(in Input, pl *Plan) []Check {
	p, rec, pr := in.Pipeline, pl.Recommend, pl.Predict
	need := int(math.Ceil(pr.LambdaConcurrencyP99)) // invocations at once at p99
	var out []Check
	add := func(setting, have, want string, ok bool, note string) {
		out = append(out, Check{Setting: setting, Pipeline: have, Recommended: want, OK: ok, Note: note})
	}
	itoa := func(n int) string { return fmt.Sprint(n) }
	pollers := func(pp *Pollers) string { return fmt.Sprintf("%d..%d", pp.Min, pp.Max) }

	// The event source's concurrency: what it can invoke at once.
	mapping := p.MappingConcurrency()
	have := fmt.Sprintf("max_concurrency %d", p.MaxConcurrency)
	if pp := p.ProvisionedPollers; pp != nil {
		have = fmt.Sprintf("provisioned_pollers %d..%d (%d invocations at once)", pp.Minimum, pp.Maximum, mapping)
	}
	want := fmt.Sprintf("max_concurrency %d", rec.MaxConcurrency)
	if rec.ProvisionedPollers != nil {
		want = "provisioned_pollers " + pollers(rec.ProvisionedPollers)
	}
	switch {
	case mapping < need:
		add("event source concurrency", have, want, false, fmt.Sprintf(
			"the event source invokes the worker at most %d times at once and the rate needs %d at p99 (%.1f): the backlog grows and tasks wait until their retention runs out", mapping, need, pr.LambdaConcurrencyP99))
	case p.ProvisionedPollers == nil && rec.ProvisionedPollers != nil:
		add("event source concurrency", have, want, true, fmt.Sprintf(
			"enough at the rate's pace, but on-demand polling takes %.0f s to scale to it (300 a minute from 5): provisioned mode scales about 3x faster", pr.SecondsToScale))
	default:
		add("event source concurrency", have, want, true, fmt.Sprintf("room for the p99 concurrency %.1f", pr.LambdaConcurrencyP99))
	}
	if pp := p.ProvisionedPollers; pp != nil && rec.ProvisionedPollers != nil && pp.Minimum < rec.ProvisionedPollers.Min {
		add("provisioned_pollers.minimum", itoa(pp.Minimum), itoa(rec.ProvisionedPollers.Min), true, fmt.Sprintf(
			"%d pollers move about %.0f MB/s and the tasks bring %.1f MB/s: the pollers scale up from the minimum before the backlog clears", pp.Minimum, float64(pp.Minimum)*PollerBytesPerSecond/1e6, in.Rate*math.Max(pr.DrainPerTask.Deliveries, 1)*float64(pl.Payload)/1e6))
	}

	// The worker's reserved concurrency: the drain's own ceiling.
	reserved := p.ReservedConcurrency
	switch {
	case reserved == 0:
		add("reserved_concurrency", "unset (the account's unreserved pool)", itoa(rec.ReservedConcurrency), true,
			"the worker shares the account's unreserved concurrency: another function's burst can throttle the drain, and a throttled batch returns with its receive spent")
	case reserved < need:
		add("reserved_concurrency", itoa(reserved), itoa(rec.ReservedConcurrency), false, fmt.Sprintf(
			"below the %d invocations at once the rate needs at p99 (%.1f): the worker is throttled or the backlog grows; raise it to at least %d", need, pr.LambdaConcurrencyP99, need))
	case reserved < mapping:
		add("reserved_concurrency", itoa(reserved), itoa(rec.ReservedConcurrency), false, fmt.Sprintf(
			"below the %d invocations the event source can make at once: a throttled invocation returns its messages with the receive spent, and a healthy task can reach the DLQ as receive_limit", mapping))
	case reserved > in.AccountConcurrency-UnreservedMinimum:
		add("reserved_concurrency", itoa(reserved), itoa(rec.ReservedConcurrency), false, fmt.Sprintf(
			"more than the account's %d less the %d Lambda keeps unreserved: Lambda refuses it (%s)", in.AccountConcurrency, UnreservedMinimum, Sources["reserved"]))
	default:
		add("reserved_concurrency", itoa(reserved), itoa(rec.ReservedConcurrency), true, fmt.Sprintf("covers the event source's %d and the rate's %d at p99", mapping, need))
	}
	if rec.ReservedConcurrency > in.AccountConcurrency-UnreservedMinimum {
		out = append(out, Check{Setting: "account concurrency", Pipeline: itoa(in.AccountConcurrency), Recommended: itoa(rec.ReservedConcurrency + UnreservedMinimum), OK: false,
			Note: fmt.Sprintf("the rate needs a reserved concurrency of %d and Lambda keeps %d of the account's %d unreserved: ask for a higher quota (%s)", rec.ReservedConcurrency, UnreservedMinimum, in.AccountConcurrency, Sources["account"])})
	}

	// Batching and memory: a difference costs money or latency, not tasks.
	fits := float64(p.BatchSize)*float64(pl.Payload+500) <= 6e6
	add("batch_size", itoa(p.BatchSize), itoa(rec.BatchSize), fits,
		unless(fits, fmt.Sprintf("%d payloads of %d bytes exceed Lambda's 6 MB invocation", p.BatchSize, pl.Payload)))
	add("batch_window_seconds", itoa(p.BatchWindowSeconds), itoa(rec.BatchWindowSeconds), true,
		unless(p.BatchWindowSeconds == rec.BatchWindowSeconds, "a different window changes the invocations and requests a task (the prediction uses the recommended one), not what the drain can take"))
	enough := p.WorkerMemoryMB >= rec.WorkerMemoryMB
	add("worker_memory_mb", itoa(p.WorkerMemoryMB), itoa(rec.WorkerMemoryMB), enough,
		unless(enough, "a batch's payloads need more: the worker can run out of memory"))
	// Lambda's advice: six times the function's timeout plus the window
	// (a slower batch's messages reappear while it runs: a second delivery,
	// which the ledger catches, and a receive spent).
	floor := 6*p.WorkerTimeoutSeconds + p.BatchWindowSeconds
	add("visibility_timeout_seconds", itoa(p.VisibilityTimeoutSeconds), ">= "+itoa(floor), true,
		unless(p.VisibilityTimeoutSeconds >= floor, fmt.Sprintf("%d s below Lambda's advice of six times worker_timeout_seconds plus the batching window (%s): a batch that runs to its timeout has its messages delivered again and a receive spent", floor-p.VisibilityTimeoutSeconds, Sources["visibility"])))
	return out
}

// unless is note when ok is false, else "".
func unless(ok bool, note string) string {
	if ok {
		return ""
	}
	return note
}

// DrainMs is the drain's own time in one invocation of records records
// handled concurrency at a time: each wave the ledger's calls per record in
// sequence, then one round of SQS calls for the batch (dead letters,
// visibility), a call's latency each. The worker's CPU per record (a few
// µs, docs/performance.md) is left out.
func DrainMs(records float64, concurrency int, callsPerRecord float64, callLatency time.Duration) float64 {
	waves := math.Ceil(records / float64(max(concurrency, 1)))
	lat := float64(callLatency) / float64(time.Millisecond)
	return waves*callsPerRecord*lat + lat
}
