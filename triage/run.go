package triage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/triage/dlq"
	"github.com/agentdlq/agentdlq/triage/report"
)

// ScanReasonPrefix starts the partial reason of a scan that did not see
// every letter (Report.PartialReasons); a renderer's coverage banner says
// it in full, and lists the other reasons beside it.
const ScanReasonPrefix = "scan: "

// An Exporter exports a report's eval records: it sets r.Export (also on
// failure, when it marks the report partial). Package triage/eval's To is
// agentdlq's.
type Exporter interface {
	Export(ctx context.Context, r *report.Report, p *pipeline.Pipeline, now time.Time) (*report.ExportResult, error)
}

// A Keeper keeps one run's report and returns the keys it wrote, the
// JSON's first. Package triage/render's KeepIn is agentdlq's.
type Keeper interface {
	Keep(ctx context.Context, r *report.Report, now time.Time) ([]string, error)
}

// A ProcessedSource reads how many tasks the worker processed for a
// pipeline between from and to (the worker's Processed metric, summed): the
// count with which a report states the period's error budget spent.
// Package triage/processed has agentdlq's: CloudWatch (GetMetricData) and
// the EMF lines a local worker wrote. String says where it reads, in words
// fit for the report (no secret, no ARN).
//
// An error is the report's, never the run's: the report then says the
// budget spent is not known and why (SLOStatus.BudgetUnknown, the error's
// text: a source words its errors for the report).
type ProcessedSource interface {
	Processed(ctx context.Context, pipeline string, from, to time.Time) (int, error)
	String() string
}

// Config is one triage run of one pipeline's DLQ.
type Config struct {
	// Pipeline is required (defaults applied).
	Pipeline *pipeline.Pipeline
	// DLQURL is required.
	DLQURL string
	// SQS is required.
	SQS ScanAPI
	// Ledger is optional: with it, the report shows the ledger's dead-letter
	// and redrive counts of each key.
	Ledger KeyReader
	// Export is optional: it exports the report's eval records
	// (eval.To(dest), package triage/eval).
	Export Exporter
	// Keep is optional: it keeps the report (render.KeepIn(dest), package
	// triage/render: JSON, Markdown and HTML under ReportBase).
	Keep Keeper
	// Scan bounds the scan; zero fields default from the pipeline's triage
	// settings (max_messages, max_seconds) and ScanOptions.
	Scan ScanOptions
	// Filter is optional: the report holds only the dead letters it
	// chooses (Report.Filter says so). A filtered run exports nothing and
	// keeps no report (Export and Keep are refused with it): the
	// DLQ's kept reports and their chart are of the whole DLQ.
	Filter dlq.Filter
	// Senders is optional: the principals whose dead letters carry evidence
	// (see Senders; pipeline.Queues.Senders, from the DLQ's
	// pipeline.TagSenders tag). Without it only the broker's mark
	// (DeadLetterQueueSourceArn) is checked.
	Senders Senders
	// Processed is optional: how many tasks the worker processed in the
	// SLO's period (the last schedule_minutes; its Processed metric), with
	// which the report states the error budget the period spent
	// (SLOStatus.SpendBudget). It wins over ProcessedFrom.
	Processed *int
	// ProcessedFrom is optional: where the processed count of the SLO's
	// period is read when Processed is not given (triage/processed's
	// CloudWatch or EMFFile). Without either the report states the target
	// and the period's dead letters only.
	ProcessedFrom ProcessedSource
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger is optional (default slog.Default()).
	Logger *slog.Logger
}

// Run scans the DLQ, tags every dead letter, reads the ledger, builds the
// report and, with a destination, exports the recurring poison. It returns
// an error without a report when the DLQ could not be read at all
// (ErrQueueNotFound, ...). When the export fails it returns the report,
// marked partial with the reason, and the error: the DLQ is unchanged
// either way, since Run never deletes, sends or moves a message.
func Run(ctx context.Context, cfg Config) (*report.Report, error) {
	if cfg.Pipeline == nil || cfg.DLQURL == "" || cfg.SQS == nil {
		return nil, errors.New("triage: Config needs Pipeline, DLQURL and SQS")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if !cfg.Filter.IsZero() {
		if err := cfg.Filter.Validate(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadOptions, err)
		}
		if cfg.Export != nil || cfg.Keep != nil {
			return nil, fmt.Errorf("%w: a filtered triage exports nothing and keeps no report (they are of the whole DLQ)", ErrBadOptions)
		}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	p := cfg.Pipeline
	opts := cfg.Scan
	if opts.MaxMessages == 0 {
		opts.MaxMessages = p.Triage.MaxMessages
	}
	if opts.MaxDuration == 0 && p.Triage.MaxSeconds > 0 {
		opts.MaxDuration = time.Duration(p.Triage.MaxSeconds) * time.Second
	}
	if opts.Now == nil {
		opts.Now = cfg.Now
	}

	msgs, stats, err := Scan(ctx, cfg.SQS, cfg.DLQURL, opts)
	if err != nil {
		log.ErrorContext(ctx, "triage scan failed", "pipeline", p.Name, "queue", cfg.DLQURL, "error", err.Error())
		return nil, err
	}
	tagged := tagAll(msgs, cfg.Senders)
	var filtered *dlq.Filtered
	if !cfg.Filter.IsZero() {
		scanned := len(tagged)
		tagged = filterTagged(tagged, cfg.Filter)
		filtered = &dlq.Filtered{Filter: cfg.Filter, Scanned: scanned, Matched: len(tagged)}
	}
	var ledgerErr error
	if cfg.Ledger != nil {
		if _, ledgerErr = lookupLedger(ctx, p.Name, tagged, cfg.Ledger); ledgerErr != nil {
			log.WarnContext(ctx, "triage ledger lookup failed", "pipeline", p.Name, "error", ledgerErr.Error())
		}
	}
	now := cfg.Now()
	r := buildWith(tagged, p, now, buildOptions{Retention: time.Duration(stats.RetentionSeconds) * time.Second, FIFO: stats.FIFO})
	spendBudget(ctx, log, r, cfg, now)
	r.Queue, r.Scan, r.Filter = cfg.DLQURL, stats, filtered
	if stats.Partial {
		r.Complete, r.Partial = false, true
		r.PartialReasons = append(r.PartialReasons, ScanReasonPrefix+stats.PartialReason)
	}
	if ledgerErr != nil {
		r.Partial = true
		r.PartialReasons = append(r.PartialReasons, "ledger counts incomplete: "+ledgerErr.Error())
	}
	logScan(ctx, log, cfg.DLQURL, tagged, r)

	var errs []error
	if cfg.Export != nil {
		if _, err := cfg.Export.Export(ctx, r, p, now); err != nil {
			log.ErrorContext(ctx, "triage eval export failed", "pipeline", p.Name, "error", err.Error())
			errs = append(errs, err)
		}
	}
	if cfg.Keep != nil {
		if keys, err := cfg.Keep.Keep(ctx, r, now); err == nil {
			r.Written = keys
			log.InfoContext(ctx, "triage report written", "pipeline", p.Name, "key", keys[0])
		} else {
			log.ErrorContext(ctx, "triage report write failed", "pipeline", p.Name, "error", err.Error())
			r.Partial = true
			r.PartialReasons = append(r.PartialReasons, "report not written: "+err.Error())
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return r, fmt.Errorf("triage %s: %w", p.Name, errors.Join(errs...))
	}
	return r, nil
}

// spendBudget states the SLO period's error budget spent: with the count
// given, or read from cfg.ProcessedFrom over the report's period (its
// failure is said in the report and logged, never the run's).
func spendBudget(ctx context.Context, log *slog.Logger, r *report.Report, cfg Config, now time.Time) {
	switch {
	case r.SLO == nil:
	case cfg.Processed != nil:
		r.SLO.SpendBudget(*cfg.Processed)
	case cfg.ProcessedFrom != nil:
		r.SLO.ProcessedSource = cfg.ProcessedFrom.String()
		n, err := cfg.ProcessedFrom.Processed(ctx, r.Pipeline, r.SLO.PeriodStart, now)
		if err == nil && n < 0 {
			err = fmt.Errorf("the source gave a negative count (%d)", n)
		}
		if err != nil {
			r.SLO.BudgetUnknown = "the processed count could not be read: " + err.Error()
			log.WarnContext(ctx, "triage processed count unknown: the report states no budget spent", "pipeline", r.Pipeline,
				"source", r.SLO.ProcessedSource, "error", err.Error())
			return
		}
		r.SLO.SpendBudget(n)
	}
}

// logScan logs what the scan of queue found: up to ten unreadable dead
// letters one by one, then their count; the report's totals; and, for a
// partial scan, why.
func logScan(ctx context.Context, log *slog.Logger, queue string, tagged []dlq.Tagged, r *report.Report) {
	// One log line per unreadable dead letter, up to ten; the report lists them all (up to 1000).
	logged := 0
	for _, t := range tagged {
		if t.MetaErr != nil && logged < 10 {
			logged++
			log.WarnContext(ctx, "dead letter with unreadable metadata", "message_id", t.MessageID, "queue", queue, "reason", string(t.Reason), "error", t.MetaErr.Error())
		}
	}
	if r.Totals.Unreadable > logged {
		log.WarnContext(ctx, "more dead letters with unreadable metadata", "queue", queue, "count", r.Totals.Unreadable-logged)
	}
	log.InfoContext(ctx, "triage scanned", "pipeline", r.Pipeline, "queue", queue, "messages", r.Totals.Messages,
		"groups", r.Totals.Groups, "complete", r.Complete, "partial", r.Partial, "duration_s", r.Scan.DurationSeconds, "messages_per_s", r.Scan.MessagesPerSecond)
	if r.Scan.Partial {
		log.WarnContext(ctx, "triage scan partial: the report's counts are a lower bound", "pipeline", r.Pipeline, "queue", queue,
			"partial_cause", r.Scan.PartialCause, "seen", r.Scan.Unique, "approx_visible", r.Scan.ApproxDepth, "approx_in_flight", r.Scan.ApproxInFlight,
			"retry_after_s", r.Scan.RetryAfterSeconds)
	}
}
