package triage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/triage/store"
)

// scanReasonPrefix starts the partial reason of a scan that did not see
// every letter (Report.PartialReasons); the coverage banner says it in full.
const scanReasonPrefix = "scan: "

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
	// Dest is optional: where eval records (and, with WriteReport, the report) go.
	Dest store.Destination
	// WriteReport keeps the report in Reports (default Dest): JSON,
	// Markdown and HTML under reportsPrefix (see WriteReport).
	WriteReport bool
	// Reports is optional: where the report is kept when it is not Dest
	// (the CLI keeps reports in ./out without exporting evals there).
	Reports store.Destination
	// Scan bounds the scan; zero fields default from the pipeline's triage
	// settings (max_messages, max_seconds) and ScanOptions.
	Scan ScanOptions
	// Filter is optional: the report holds only the dead letters it
	// chooses (Report.Filter says so). A filtered run exports nothing and
	// keeps no report (Dest and WriteReport are refused with it): the
	// DLQ's kept reports and their chart are of the whole DLQ.
	Filter Filter
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
func Run(ctx context.Context, cfg Config) (*Report, error) {
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
		if cfg.Dest != nil || cfg.WriteReport {
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
	tagged := tagAll(msgs)
	var filtered *Filtered
	if !cfg.Filter.IsZero() {
		scanned := len(tagged)
		tagged = filterTagged(tagged, cfg.Filter)
		filtered = &Filtered{Filter: cfg.Filter, Scanned: scanned, Matched: len(tagged)}
	}
	var ledgerErr error
	if cfg.Ledger != nil {
		if _, ledgerErr = lookupLedger(ctx, p.Name, tagged, cfg.Ledger); ledgerErr != nil {
			log.WarnContext(ctx, "triage ledger lookup failed", "pipeline", p.Name, "error", ledgerErr.Error())
		}
	}
	now := cfg.Now()
	r := buildWith(tagged, p, now, buildOptions{Retention: time.Duration(stats.RetentionSeconds) * time.Second, FIFO: stats.FIFO})
	r.Queue, r.Scan, r.Filter = cfg.DLQURL, stats, filtered
	if stats.Partial {
		r.Complete, r.Partial = false, true
		r.PartialReasons = append(r.PartialReasons, scanReasonPrefix+stats.PartialReason)
	}
	if ledgerErr != nil {
		r.Partial = true
		r.PartialReasons = append(r.PartialReasons, "ledger counts incomplete: "+ledgerErr.Error())
	}
	// One log line per unreadable dead letter, up to ten; the report lists them all (up to 1000).
	logged := 0
	for _, t := range tagged {
		if t.MetaErr != nil && logged < 10 {
			logged++
			log.WarnContext(ctx, "dead letter with unreadable metadata", "message_id", t.MessageID, "queue", cfg.DLQURL, "reason", string(t.Reason), "error", t.MetaErr.Error())
		}
	}
	if r.Totals.Unreadable > logged {
		log.WarnContext(ctx, "more dead letters with unreadable metadata", "queue", cfg.DLQURL, "count", r.Totals.Unreadable-logged)
	}
	log.InfoContext(ctx, "triage scanned", "pipeline", p.Name, "queue", cfg.DLQURL, "messages", r.Totals.Messages,
		"groups", r.Totals.Groups, "complete", r.Complete, "partial", r.Partial, "duration_s", stats.DurationSeconds, "messages_per_s", stats.MessagesPerSecond)
	if stats.Partial {
		log.WarnContext(ctx, "triage scan partial: the report's counts are a lower bound", "pipeline", p.Name, "queue", cfg.DLQURL,
			"partial_cause", stats.PartialCause, "seen", stats.Unique, "approx_visible", stats.ApproxDepth, "approx_in_flight", stats.ApproxInFlight,
			"retry_after_s", stats.RetryAfterSeconds)
	}

	var errs []error
	if cfg.Dest != nil {
		if _, err := Export(ctx, cfg.Dest, r, p, now); err != nil {
			log.ErrorContext(ctx, "triage eval export failed", "pipeline", p.Name, "error", err.Error())
			errs = append(errs, err)
		}
	}
	reports := cfg.Reports
	if reports == nil {
		reports = cfg.Dest
	}
	if cfg.WriteReport && reports != nil {
		if keys, err := WriteReport(ctx, reports, r, now); err == nil {
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
