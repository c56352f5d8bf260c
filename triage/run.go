package triage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/agentdlq/agentdlq/pipeline"
)

// ScanReasonPrefix starts the partial reason of a scan that did not see
// every letter (Report.PartialReasons); a renderer's coverage banner says
// it in full, and lists the other reasons beside it.
const ScanReasonPrefix = "scan: "

// An Exporter exports a report's eval records: it sets r.Export (also on
// failure, when it marks the report partial). Package triage/eval's To is
// agentdlq's.
type Exporter interface {
	Export(ctx context.Context, r *Report, p *pipeline.Pipeline, now time.Time) (*ExportResult, error)
}

// A Keeper keeps one run's report and returns the keys it wrote, the
// JSON's first. Package triage/render's KeepIn is agentdlq's.
type Keeper interface {
	Keep(ctx context.Context, r *Report, now time.Time) ([]string, error)
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
	Filter Filter
	// Senders is optional: the principals whose dead letters carry evidence
	// (see Senders; pipeline.Queues.Senders, from the DLQ's
	// pipeline.TagSenders tag). Without it only the broker's mark
	// (DeadLetterQueueSourceArn) is checked.
	Senders Senders
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
		r.PartialReasons = append(r.PartialReasons, ScanReasonPrefix+stats.PartialReason)
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
