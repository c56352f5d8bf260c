package loadbench

import (
	"context"
	"fmt"
	"io"
	"math"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentdlq/agentdlq/capacity"
	"github.com/agentdlq/agentdlq/internal/awsmeter"
	"github.com/agentdlq/agentdlq/local/workload"
)

// platformLogBytes is what Lambda itself writes to the function's log
// group per invocation (the START, END and REPORT lines, about 260 bytes
// in text format): not measured here, added to the log bytes.
const platformLogBytes = 260

// Requests are the AWS calls the drain made, counted at the SDK clients
// (internal/awsmeter) of the event source mapping ("mapping": billed to
// the account as SQS requests like any consumer's), the worker ("worker":
// the ledger, dead-letter sends, visibility changes, evidence in S3), the
// producer ("producer": the sends, the same for any consumer, not the
// drain's overhead) and the bench's read-only triage scan of the DLQ
// ("triage"). Per1000 are per 1,000 tasks sent.
type Requests struct {
	Mix   string    `json:"mix"`
	Tasks int       `json:"tasks"`
	Ops   []OpCount `json:"ops"`
	// LogBytes and LogLines are the worker's log and EMF metric lines
	// (its stdout in Lambda, ingested by CloudWatch Logs), measured.
	LogBytes int64 `json:"log_bytes"`
	LogLines int64 `json:"log_lines"`
	// Items describe the ledger table's items at the end of the run, sized
	// as DynamoDB sizes them (attribute names and values).
	Items ItemSizes `json:"ledger_items"`
	// PerTask is the drain's own overhead per task, the input of the cost.
	PerTask capacity.PerTask `json:"per_task"`
	// Cost is the drain's own overhead per million tasks at Prices, with
	// the pipeline's worker memory; Powertools the same work done with a
	// BatchProcessor and Idempotency on DynamoDB (PowertoolsPerTask, a
	// model: see powertoolsModel).
	Prices capacity.Prices `json:"prices"`
	// MeasuredMsPerInvocation is the handler's time an invocation on the
	// local emulators (not what Lambda would bill: see PerTask).
	MeasuredMsPerInvocation float64          `json:"measured_ms_per_invocation_locally"`
	MemoryMB                int              `json:"worker_memory_mb"`
	Cost                    capacity.Cost    `json:"cost_per_million_tasks"`
	PowertoolsPerTask       capacity.PerTask `json:"powertools_per_task"`
	PowertoolsCost          capacity.Cost    `json:"powertools_cost_per_million_tasks"`
	// Options are the ledger changes the lead may schedule, each with the
	// write units and dollars per million tasks it would save on this run.
	Options []Option `json:"ledger_options"`
	// EmptyReceives are the mapping's receives that returned nothing (the
	// local mapping's 1 s polls while idle): not per task, left out of the
	// cost; Lambda's mapping long-polls 20 s with 2 to 5 pollers when idle.
	EmptyReceives int64 `json:"empty_receives"`
}

// OpCount is one operation's counts, and per 1,000 tasks.
type OpCount struct {
	awsmeter.Stats
	CallsPer1000      float64 `json:"calls_per_1000_tasks"`
	BilledPer1000     float64 `json:"billed_requests_per_1000_tasks,omitempty"`
	WriteUnitsPer1000 float64 `json:"write_units_per_1000_tasks,omitempty"`
	ReadUnitsPer1000  float64 `json:"read_units_per_1000_tasks,omitempty"`
}

// ItemSizes summarize the ledger items' sizes in bytes.
type ItemSizes struct {
	Count int `json:"count"`
	Mean  int `json:"mean_bytes"`
	Max   int `json:"max_bytes"`
	// Over1KB are the items larger than one write unit (1 KB): each write
	// of them costs 2 or more.
	Over1KB int `json:"over_1kb"`
}

// Option is a ledger change and what it saves on this run's mix.
type Option struct {
	Name            string  `json:"name"`
	Tradeoff        string  `json:"tradeoff"`
	WriteUnitsSaved float64 `json:"write_units_saved_per_task"`
	DollarsSaved    float64 `json:"dollars_saved_per_million_tasks"`
	CostAfter       float64 `json:"drain_cost_after_per_million_tasks"`
}

// CallLatency is the latency of one AWS call from the worker the cost
// assumes (DynamoDB's "single-digit millisecond" and the network).
const CallLatency = 8 * time.Millisecond

// requests turns the meter's counts into the Requests of a run.
func requests(meter *awsmeter.Meter, logs *awsmeter.ByteCounter, items ItemSizes, tasks []workload.Task, invocations int64, handlerMs float64,
	memoryMB, maxReceive, receives, concurrency int, acct workload.Accounting) *Requests {
	n := float64(len(tasks))
	per := func(v float64) float64 { return v / n * 1000 }
	r := &Requests{Tasks: len(tasks), Items: items, Prices: capacity.USEast1, MemoryMB: memoryMB, MeasuredMsPerInvocation: handlerMs}
	r.LogBytes, r.LogLines = logs.Counts()
	var pt capacity.PerTask
	for _, s := range meter.Snapshot() {
		oc := OpCount{Stats: s, CallsPer1000: per(float64(s.Calls)), WriteUnitsPer1000: per(s.WriteUnits + float64(s.ConditionFailed)), ReadUnitsPer1000: per(s.ReadUnits)}
		billed := s.BilledRequests
		if s.Operation == "ReceiveMessage" {
			r.EmptyReceives += s.Empty
			billed -= s.Empty // an empty receive moved no payload: one request each
		}
		if s.Service == "SQS" {
			oc.BilledPer1000 = per(float64(billed))
		}
		r.Ops = append(r.Ops, oc)
		if s.Role != "worker" && s.Role != "mapping" {
			continue
		}
		if s.Role == "mapping" && s.Operation == "GetQueueAttributes" {
			continue // the local mapping's idle check; Lambda's makes none
		}
		switch s.Service {
		case "SQS":
			pt.SQSRequests += float64(billed) / n
			if s.Role == "worker" {
				pt.WorkerSQSRequests += float64(billed) / n
			}
		case "DynamoDB":
			pt.LedgerCalls += float64(s.Calls) / n
			// A write refused on its condition reports no capacity;
			// DynamoDB bills it one write unit (the ledger's items are
			// under 1 KB: see Items).
			pt.WriteUnits += (s.WriteUnits + float64(s.ConditionFailed)) / n
			pt.ReadUnits += s.ReadUnits / n
		case "S3":
			if s.Operation == "PutObject" {
				pt.S3Puts += float64(s.Calls) / n
			}
		}
	}
	pt.LogBytes = float64(r.LogBytes+invocations*platformLogBytes) / n
	pt.Invocations = float64(invocations) / n
	pt.Deliveries = float64(receives) / n
	pt.DeadLetters = float64(acct.DeadLettered) / n
	// Billed duration: the local handler time is the emulators' (dynalite
	// answers in tens of ms on a shared machine), not DynamoDB's: the cost
	// uses capacity.DrainMs at 8 ms a call with the records per invocation
	// and the ledger calls per record measured here; the sample tools take
	// no time. MeasuredMsPerInvocation keeps the local figure.
	records := float64(receives) / float64(max(invocations, 1))
	pt.BilledMsPerInvocation = math.Ceil(capacity.DrainMs(records, concurrency, pt.LedgerCalls/math.Max(pt.Deliveries, 1e-9), CallLatency))
	r.PerTask = pt
	r.Cost = r.Prices.PerMillion(pt, memoryMB, false)
	r.PowertoolsPerTask = powertoolsModel(tasks, pt, maxReceive)
	r.PowertoolsCost = r.Prices.PerMillion(r.PowertoolsPerTask, memoryMB, false)
	r.Options = options(r, tasks, acct)
	return r
}

// powertoolsModel is the same tasks handled the Powertools way: a
// BatchProcessor (partial batch response) with Idempotency on DynamoDB,
// its calls per record from its DynamoDBPersistenceLayer: a conditional
// PutItem (INPROGRESS) before the handler, an UpdateItem (COMPLETED, with
// the response) after a success, a DeleteItem after a failure (so that the
// retry can run), and on a key already completed the PutItem's condition
// fails and returns the record (ReturnValuesOnConditionCheckFailure; older
// versions read it with a GetItem) — one write unit each, the items under
// 1 KB. It has no poison classification and no dead letter of its own:
// every failure is retried until the queue's maxReceiveCount moves it to
// the DLQ; a transient that recovers costs its failed attempts too. The
// SQS requests scale with the deliveries (a receive and a delete per batch
// of ten), the invocations likewise; each invocation is billed as long as
// the drain's (an underestimate: Powertools' own CPU per record is higher,
// docs/performance.md). Log bytes: the platform lines only. Guarantees
// it does not give: a reused key is not told from a duplicate unless
// payload validation is on; a timeout after an effect is retried blindly.
func powertoolsModel(tasks []workload.Task, drain capacity.PerTask, maxReceive int) capacity.PerTask {
	var deliveries, writes float64
	for _, t := range tasks {
		switch t.Kind {
		case workload.OK, workload.OKMutating:
			deliveries, writes = deliveries+1, writes+2 // put + update
		case workload.Duplicate:
			deliveries, writes = deliveries+1, writes+1 // put refused, record returned
		case workload.TransientRecovers:
			deliveries, writes = deliveries+2, writes+4 // put + delete, then put + update
		case workload.JSONInvalid, workload.SchemaInvalid:
			// No key to claim (the record cannot be parsed, or has no
			// idempotency key): no ledger write, retried to the DLQ.
			deliveries += float64(maxReceive)
		default:
			// Every other failure: put + delete on each receive until
			// maxReceiveCount.
			deliveries += float64(maxReceive)
			writes += 2 * float64(maxReceive)
		}
	}
	n := float64(len(tasks))
	perDelivery := deliveries / n
	return capacity.PerTask{
		SQSRequests:           perDelivery * 2 / 10, // receive + delete, batches of ten
		WriteUnits:            writes / n,
		Invocations:           perDelivery / 10,
		BilledMsPerInvocation: drain.BilledMsPerInvocation,
		LogBytes:              perDelivery / 10 * platformLogBytes,
	}
}

// options computes the ledger changes of issue 31 on this run.
func options(r *Requests, tasks []workload.Task, acct workload.Accounting) []Option {
	n := float64(len(tasks))
	price := r.Prices.DynamoDBPerMillionWRU
	var out []Option
	add := func(name, tradeoff string, saved float64) {
		d := saved * price
		out = append(out, Option{Name: name, Tradeoff: tradeoff, WriteUnitsSaved: saved, DollarsSaved: d, CostAfter: r.Cost.Total - d})
	}
	// Items within one write unit: every write unit above one a write.
	var writes, units float64
	for _, o := range r.Ops {
		if o.Service == "DynamoDB" && (o.Role == "worker") && o.Operation != "GetItem" {
			writes += float64(o.Calls)
			units += o.WriteUnits + float64(o.ConditionFailed)
		}
	}
	add("items within one write unit", "trim or shorten attribute names until every ledger item is under 1 KB; nothing is lost",
		max(0, units-writes)/n)
	// One write for a read-only tool is taken (Ledger.CompleteReadOnly,
	// issue 31): a processed read-only task now writes once, and the counts
	// above already show it.
	// TTL on settled rows saves storage, not write units: TTL deletes are
	// free. Storage of a month of rows at the mean item size (plus
	// DynamoDB's 100 bytes of overhead an item).
	if r.Items.Count > 0 {
		gb := float64(r.Items.Mean+100) * 1e6 / 1e9
		out = append(out, Option{Name: "shorter TTL on settled rows (done, dead-lettered)",
			Tradeoff:  fmt.Sprintf("TTL deletes cost no write units: the saving is storage, %.3f GB a million rows, $%.3f a month per million rows kept a month less; a redelivery or redrive after the TTL runs the task again", gb, gb*r.Prices.DynamoDBPerGBMonth),
			CostAfter: r.Cost.Total})
	}
	return out
}

// itemSizes scans the ledger table and sizes every item as DynamoDB does.
func itemSizes(ctx context.Context, api *dynamodb.Client, table string) (ItemSizes, error) {
	var s ItemSizes
	total := 0
	pages := dynamodb.NewScanPaginator(api, &dynamodb.ScanInput{TableName: aws.String(table)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return s, fmt.Errorf("size the ledger items: %w", err)
		}
		for _, item := range page.Items {
			b := ItemSize(item)
			s.Count++
			total += b
			s.Max = max(s.Max, b)
			if b > 1024 {
				s.Over1KB++
			}
		}
	}
	if s.Count > 0 {
		s.Mean = total / s.Count
	}
	return s, nil
}

// ItemSize is an item's size as DynamoDB counts it for capacity: the
// UTF-8 bytes of every attribute name plus its value (strings and binary
// their length, numbers about one byte per two digits plus one, booleans
// and null one byte, lists and maps 3 bytes plus their elements, a byte
// each).
func ItemSize(item map[string]ddbtypes.AttributeValue) int {
	n := 0
	for k, v := range item {
		n += len(k) + valueSize(v)
	}
	return n
}

func valueSize(v ddbtypes.AttributeValue) int {
	switch v := v.(type) {
	case *ddbtypes.AttributeValueMemberS:
		return len(v.Value)
	case *ddbtypes.AttributeValueMemberN:
		return (len(v.Value)+1)/2 + 1
	case *ddbtypes.AttributeValueMemberB:
		return len(v.Value)
	case *ddbtypes.AttributeValueMemberBOOL, *ddbtypes.AttributeValueMemberNULL:
		return 1
	case *ddbtypes.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	case *ddbtypes.AttributeValueMemberNS:
		n := 0
		for _, s := range v.Value {
			n += (len(s)+1)/2 + 1
		}
		return n
	case *ddbtypes.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *ddbtypes.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + valueSize(e)
		}
		return n
	}
	return 0
}

// Print writes the requests per 1,000 tasks, the log bytes, the item sizes,
// the cost per million tasks side by side with Powertools, and the options.
func (r *Requests) Print(out io.Writer) {
	fmt.Fprintf(out, "\nrequests per 1,000 tasks (%s mix, %d tasks), counted at the SDK clients:\n", r.Mix, r.Tasks)
	fmt.Fprintf(out, "  %-9s %-9s %-28s %9s %9s %9s %9s\n", "role", "service", "operation", "calls", "billed", "WRU", "RRU")
	ops := append([]OpCount(nil), r.Ops...)
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].Role < ops[j].Role })
	for _, o := range ops {
		fmt.Fprintf(out, "  %-9s %-9s %-28s %9.1f %9.1f %9.1f %9.1f\n", o.Role, o.Service, o.Operation, o.CallsPer1000, o.BilledPer1000, o.WriteUnitsPer1000, o.ReadUnitsPer1000)
	}
	fmt.Fprintf(out, "  (%d empty receives of the idle local mapping left out; billed SQS requests count 64 KiB chunks; WRU includes a unit for each write refused on its condition)\n", r.EmptyReceives)
	fmt.Fprintf(out, "worker log lines: %.0f bytes per task (%d lines, %d bytes) + %d bytes of Lambda platform lines per invocation\n",
		float64(r.LogBytes)/float64(max(1, r.Tasks)), r.LogLines, r.LogBytes, platformLogBytes)
	fmt.Fprintf(out, "ledger items: %d, mean %d bytes, max %d, %d over 1 KB\n", r.Items.Count, r.Items.Mean, r.Items.Max, r.Items.Over1KB)
	fmt.Fprintf(out, "cost per million tasks (%s %s %s, %d MB worker, %.3f invocations per task, %.0f ms billed each: %.2f ledger calls a record at %v each; %.0f ms locally on the emulators):\n",
		r.Prices.Region, r.Prices.Arch, r.Prices.Date, r.MemoryMB, r.PerTask.Invocations, r.PerTask.BilledMsPerInvocation,
		r.PerTask.LedgerCalls/math.Max(r.PerTask.Deliveries, 1e-9), CallLatency, r.MeasuredMsPerInvocation)
	fmt.Fprintf(out, "  %-22s %10s %10s\n", "", "agentdlq", "powertools")
	row := func(name string, a, b float64) { fmt.Fprintf(out, "  %-22s %10.4f %10.4f\n", name, a, b) }
	row("SQS", r.Cost.SQS, r.PowertoolsCost.SQS)
	row("DynamoDB", r.Cost.DynamoDB, r.PowertoolsCost.DynamoDB)
	row("S3", r.Cost.S3, r.PowertoolsCost.S3)
	row("Lambda requests", r.Cost.LambdaRequests, r.PowertoolsCost.LambdaRequests)
	row("Lambda duration", r.Cost.LambdaDuration, r.PowertoolsCost.LambdaDuration)
	row("CloudWatch Logs", r.Cost.Logs, r.PowertoolsCost.Logs)
	row("total ($)", r.Cost.Total, r.PowertoolsCost.Total)
	for _, o := range r.Options {
		fmt.Fprintf(out, "option %q: saves %.3f WRU a task, $%.4f per million tasks (drain $%.4f after): %s\n", o.Name, o.WriteUnitsSaved, o.DollarsSaved, o.CostAfter, o.Tradeoff)
	}
}

// PrintCostSummary writes one line per run: the drain's billed requests,
// write units and log bytes per task, and its cost per million tasks beside
// Powertools'.
func PrintCostSummary(out io.Writer, results []*Result) {
	fmt.Fprintf(out, "\ncost per million tasks, the drain's own overhead (%s %s, prices of %s):\n", capacity.USEast1.Region, capacity.USEast1.Arch, capacity.USEast1.Date)
	fmt.Fprintf(out, "  %-12s %7s %9s %9s %9s %10s %10s %11s\n", "mix", "tasks", "SQS req", "WRU", "log B", "agentdlq", "powertools", "lost/dupes")
	for _, r := range results {
		if r.Requests == nil {
			continue
		}
		q := r.Requests
		fmt.Fprintf(out, "  %-12s %7d %9.3f %9.3f %9.0f %10.4f %10.4f %5d/%-5d\n", q.Mix, r.Tasks, q.PerTask.SQSRequests, q.PerTask.WriteUnits, q.PerTask.LogBytes,
			q.Cost.Total, q.PowertoolsCost.Total, r.Lost, r.DuplicateEffects)
		if rc := r.Recovery; rc != nil {
			fmt.Fprintf(out, "  %-12s %7d %9.3f %9.3f %9s %10.4f   (per million tasks redriven: the redrive and the processing again)\n", "  recovery", rc.Moved, rc.PerTask.SQSRequests, rc.PerTask.WriteUnits, "", rc.Cost.Total)
		}
	}
}
