package loadbench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/agentdlq/agentdlq/capacity"
	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/functions/sampleworker"
	"github.com/agentdlq/agentdlq/internal/awsmeter"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/local/esm"
	"github.com/agentdlq/agentdlq/local/runner"
	"github.com/agentdlq/agentdlq/redrive"
	"github.com/agentdlq/agentdlq/redrive/audit"
)

// Recovery is what the outage's end costs: the dependency back up, the
// dependency_open dead letters redriven with the gated selective redrive
// (`agentdlq redrive select --reason dependency_open --canary 1`, its own
// SQS and ledger clients counted as "redrive"), and the worker processing
// them again. Ops are the calls of that phase alone, per 1,000 tasks
// redriven.
type Recovery struct {
	Redriven int       `json:"redriven"`
	Moved    int       `json:"moved"`
	Ops      []OpCount `json:"ops"`
	// PerTask is the phase's billed requests and units per task redriven:
	// the redrive's own and the worker's re-processing.
	PerTask capacity.PerTask `json:"per_task"`
	Cost    capacity.Cost    `json:"cost_per_million_redriven"`
}

// recoverOutage runs the recovery phase of the outage mix: search-api up, a
// selective redrive of dependency_open with a canary of one while the
// mapping consumes the hot queue, until the hot queue is idle.
func recoverOutage(ctx context.Context, awsCfg aws.Config, l *runner.Local, meter *awsmeter.Meter, deps sampleworker.DependencyDir, mappingSQS esm.API,
	idle time.Duration, memoryMB, concurrency int, dead int) (*Recovery, error) {
	if err := deps.Set(OutageDependency, false); err != nil {
		return nil, err
	}
	before := map[awsmeter.Op]awsmeter.Stats{}
	for _, s := range meter.Snapshot() {
		before[s.Op] = s
	}
	dir, err := os.MkdirTemp("", "agentdlq-recovery-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }() // a temporary directory: a leftover costs nothing
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	redriveAWS := meter.Config(awsCfg, "redrive")
	r, err := redrive.New(redrive.Config{Pipeline: l.Pipeline, Queues: l.Queues, SQS: sqs.NewFromConfig(redriveAWS),
		Ledger: ledger.NewDynamo(dynamodb.NewFromConfig(redriveAWS), l.Table), Logger: quiet,
		Audit: &audit.Auditor{Store: &audit.FileStore{Path: filepath.Join(dir, "audit.jsonl")}, Logger: quiet}})
	if err != nil {
		return nil, err
	}
	m, _, err := l.Mapping(runner.DrainOptions{SQS: mappingSQS, IdleTimeout: idle}, true)
	if err != nil {
		return nil, err
	}
	type result struct {
		st  esm.Stats
		err error
	}
	done := make(chan result, 1)
	go func() {
		st, err := m.Run(ctx)
		done <- result{st, err}
	}()
	res, err := r.Select(ctx, redrive.SelectRequest{
		Who:     redrive.Who{Owner: l.Pipeline.Owner, Why: OutageDependency + " is back up (load bench)"},
		Reasons: []deadletter.Reason{deadletter.ReasonDependencyOpen},
		Rate:    500, Canary: 1, CanaryTimeout: 2 * time.Minute,
	})
	worker := <-done // the mapping ends when the hot queue has been idle
	if err != nil {
		return nil, fmt.Errorf("recovery: redrive select: %w", err)
	}
	if worker.err != nil {
		return nil, worker.err
	}
	rec := &Recovery{Redriven: dead, Moved: res.Moved}
	n := float64(max(res.Moved, 1))
	var pt capacity.PerTask
	for _, s := range meter.Snapshot() {
		b := before[s.Op]
		d := s
		d.Calls -= b.Calls
		d.Attempts -= b.Attempts
		d.Errors -= b.Errors
		d.ConditionFailed -= b.ConditionFailed
		d.Entries -= b.Entries
		d.Empty -= b.Empty
		d.PayloadBytes -= b.PayloadBytes
		d.BilledRequests -= b.BilledRequests
		d.WriteUnits -= b.WriteUnits
		d.ReadUnits -= b.ReadUnits
		if d.Calls == 0 {
			continue
		}
		billed := d.BilledRequests
		if d.Operation == "ReceiveMessage" {
			billed -= d.Empty
		}
		per := func(v float64) float64 { return v / n * 1000 }
		oc := OpCount{Stats: d, CallsPer1000: per(float64(d.Calls)), WriteUnitsPer1000: per(d.WriteUnits + float64(d.ConditionFailed)), ReadUnitsPer1000: per(d.ReadUnits)}
		if d.Service == "SQS" {
			oc.BilledPer1000 = per(float64(billed))
		}
		rec.Ops = append(rec.Ops, oc)
		if d.Role == "triage" || (d.Role == "mapping" && d.Operation == "GetQueueAttributes") {
			continue
		}
		switch d.Service {
		case "SQS":
			pt.SQSRequests += float64(billed) / n
		case "DynamoDB":
			pt.WriteUnits += (d.WriteUnits + float64(d.ConditionFailed)) / n
			pt.ReadUnits += d.ReadUnits / n
			if d.Role == "worker" {
				pt.LedgerCalls += float64(d.Calls) / n
			}
		}
	}
	pt.Invocations = float64(worker.st.Batches) / n
	pt.Deliveries = 1
	records := n / float64(max(worker.st.Batches, 1))
	pt.BilledMsPerInvocation = capacity.DrainMs(records, concurrency, pt.LedgerCalls, CallLatency)
	rec.PerTask = pt
	rec.Cost = capacity.USEast1.PerMillion(pt, memoryMB, false)
	return rec, nil
}

// Print writes the recovery's requests per 1,000 tasks redriven.
func (r *Recovery) Print(out io.Writer) {
	fmt.Fprintf(out, "recovery: %s back up, %d dead letters redriven (redrive select, canary 1), requests per 1,000 redriven:\n", OutageDependency, r.Moved)
	for _, o := range r.Ops {
		fmt.Fprintf(out, "  %-9s %-9s %-28s %9.1f %9.1f %9.1f %9.1f\n", o.Role, o.Service, o.Operation, o.CallsPer1000, o.BilledPer1000, o.WriteUnitsPer1000, o.ReadUnitsPer1000)
	}
	fmt.Fprintf(out, "  $%.4f per million tasks redriven (SQS $%.4f, DynamoDB $%.4f, Lambda $%.4f)\n", r.Cost.Total, r.Cost.SQS, r.Cost.DynamoDB, r.Cost.LambdaRequests+r.Cost.LambdaDuration)
}
