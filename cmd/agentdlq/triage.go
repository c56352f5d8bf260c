package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/agentdlq/agentdlq/internal/awscfg"
	"github.com/agentdlq/agentdlq/internal/topology"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/triage"
)

type triageFlags struct {
	pipeline    string
	asJSON      bool
	markdown    bool
	exportEvals string
	reports     string
	ledgerTable string
	visibility  time.Duration
	receivers   int
	maxMessages int
	maxSeconds  int
	noProgress  bool
	verbose     bool
}

func newTriageCmd(g *globalFlags) *cobra.Command {
	f := &triageFlags{}
	cmd := &cobra.Command{
		Use:   "triage --pipeline NAME [--json | --markdown] [--export-evals DEST]",
		Short: "Read-only look at a pipeline's DLQ: reasons, groups, expiry risk, eval export",
		Long: `triage reads every dead letter of the pipeline's DLQ once, without deleting,
sending or moving any, and reports them by reason and group (fingerprint),
with their ages, when retention will delete them, the next action and
whether they may be redriven. Recurring poison can be exported as eval
records (--export-evals DEST, DEST a folder or s3://bucket/prefix); a case
already exported there is never exported twice. Every run's report is kept
(--reports, default ./out/<pipeline>/reports/): JSON, Markdown and a
self-contained report.html whose chart shows the runs before it. The console
(agentdlq ui) reads them.

The queues are found as topology.ResolveWith finds them (AGENTDLQ_DLQ_URL, the
local names, or the pipeline's tags); the AWS clients honour
AWS_ENDPOINT_URL_* (eval "$(make -s local-env)" points them at the local
emulators). The ledger (AGENTDLQ_LEDGER_TABLE or --ledger-table; locally
agentdlq-ledger) adds dead-letter and redrive counts per key.

Exit codes: 0 done (a partial scan is reported in the output), 2 bad input
(unknown pipeline, missing DLQ, bad destination or flags), 1 anything else,
an export failure included (the report is printed first).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return f.run(cmd, g) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.pipeline, "pipeline", "", "pipeline name (required)")
	fl.BoolVar(&f.asJSON, "json", false, "print the report as JSON (report_version 1)")
	fl.BoolVar(&f.markdown, "markdown", false, "print the report as Markdown")
	fl.StringVar(&f.exportEvals, "export-evals", "", "export recurring poison as eval records to a folder or s3://bucket/prefix")
	fl.StringVar(&f.reports, "reports", "out", "keep the report (JSON, Markdown, HTML) under <pipeline>/reports/ in a folder or s3://bucket/prefix (\"\" keeps none)")
	fl.StringVar(&f.ledgerTable, "ledger-table", "", "ledger table (default $AGENTDLQ_LEDGER_TABLE; agentdlq-ledger with local endpoints; none otherwise)")
	fl.DurationVar(&f.visibility, "visibility", 30*time.Second, "how long the scan hides what it read (released early at the end)")
	fl.IntVar(&f.receivers, "receivers", 0, "parallel receivers (default: one per 2,000 messages, up to 8)")
	fl.IntVar(&f.maxMessages, "max-messages", 0, "bound on messages read (default: the pipeline's triage.max_messages)")
	fl.IntVar(&f.maxSeconds, "max-seconds", 0, "bound on the scan's duration (default: the pipeline's triage.max_seconds)")
	fl.BoolVar(&f.noProgress, "no-progress", false, "no progress bar")
	fl.BoolVar(&f.verbose, "verbose", false, "log progress (JSON on stderr)")
	return cmd
}

func (f *triageFlags) run(cmd *cobra.Command, g *globalFlags) error {
	ctx := cmd.Context()
	if f.pipeline == "" {
		return withExit(2, errors.New("--pipeline is required"))
	}
	if f.asJSON && f.markdown {
		return withExit(2, errors.New("--json and --markdown exclude each other"))
	}
	if f.maxMessages < 0 || f.maxSeconds < 0 || f.receivers < 0 || f.receivers > 32 {
		return withExit(2, errors.New("--max-messages and --max-seconds must not be negative, --receivers is 0..32"))
	}
	if f.visibility < time.Second || f.visibility > 12*time.Hour {
		return withExit(2, fmt.Errorf("--visibility %s is outside 1s..12h", f.visibility))
	}
	p, err := g.loadPipeline(f.pipeline)
	if err != nil {
		return withExit(2, err)
	}
	cfg, err := awscfg.Load(ctx)
	if err != nil {
		return fmt.Errorf("aws config: %w", err)
	}
	var dest triage.Destination
	if f.exportEvals != "" {
		if dest, err = triage.ParseDestination(f.exportEvals, s3.NewFromConfig(cfg)); err != nil {
			return withExit(2, err)
		}
	}
	var reports triage.Destination
	if f.reports != "" {
		if reports, err = triage.ParseDestination(f.reports, s3.NewFromConfig(cfg)); err != nil {
			return withExit(2, fmt.Errorf("--reports: %w", err))
		}
	}
	client := sqs.NewFromConfig(cfg)
	q, err := topology.ResolveWith(ctx, client, p, topology.OverrideFromEnv(os.Getenv))
	if err != nil {
		if errors.Is(err, topology.ErrNotFound) {
			return withExit(2, fmt.Errorf("pipeline %q: DLQ not found: %w", p.Name, err))
		}
		return fmt.Errorf("pipeline %q queues: %w", p.Name, err)
	}

	level := slog.LevelWarn
	if f.verbose {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	rc := triage.Config{Pipeline: p, DLQURL: q.DLQURL, SQS: client, Logger: log, Scan: triage.ScanOptions{
		VisibilityTimeout: f.visibility, Receivers: f.receivers, MaxMessages: f.maxMessages,
		MaxDuration: time.Duration(f.maxSeconds) * time.Second,
	}}
	if dest != nil {
		rc.Dest = dest
	}
	if reports != nil {
		rc.Reports, rc.WriteReport = reports, true
	}
	if table := f.ledger(); table != "" {
		rc.Ledger = ledger.NewDynamo(dynamodb.NewFromConfig(cfg), table)
	}
	bar := newScanBar(os.Stderr, !f.noProgress && term.IsTerminal(int(os.Stderr.Fd())))
	rc.Scan.Progress = bar.progress

	r, runErr := triage.Run(ctx, rc)
	bar.finish()
	if r == nil {
		switch {
		case errors.Is(runErr, triage.ErrQueueNotFound), errors.Is(runErr, triage.ErrBadOptions):
			return withExit(2, runErr)
		default:
			return runErr
		}
	}
	if err := f.print(cmd.OutOrStdout(), r); err != nil {
		return err
	}
	return runErr // an export failure: the report (marked partial) is printed above
}

// ledger is the ledger table to read, if any.
func (f *triageFlags) ledger() string { return ledgerTableName(f.ledgerTable) }

func (f *triageFlags) print(w io.Writer, r *triage.Report) error {
	switch {
	case f.asJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	case f.markdown:
		return triage.Markdown(w, r)
	default:
		return triage.Text(w, r)
	}
}

// scanBar is the scan's progress bar on stderr: shown on a terminal once the
// scan looks long (a queue of 500 messages or more, or 2 seconds).
type scanBar struct {
	mu      sync.Mutex
	w       io.Writer
	enabled bool
	start   time.Time
	bar     *progressbar.ProgressBar
}

func newScanBar(w io.Writer, enabled bool) *scanBar {
	return &scanBar{w: w, enabled: enabled, start: time.Now()}
}

func (b *scanBar) progress(seen, approxTotal int) {
	if !b.enabled {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bar == nil {
		if approxTotal < 500 && time.Since(b.start) < 2*time.Second {
			return
		}
		total := int64(approxTotal)
		if total <= 0 {
			total = -1
		}
		b.bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(b.w), progressbar.OptionSetDescription("scanning DLQ"),
			progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString("msg"),
			progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
	}
	if int64(seen) > b.bar.GetMax64() && b.bar.GetMax64() > 0 {
		b.bar.ChangeMax64(int64(seen)) // the depth was approximate
	}
	_ = b.bar.Set(seen)
}

func (b *scanBar) finish() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bar != nil {
		_ = b.bar.Finish()
	}
}
