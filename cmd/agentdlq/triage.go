package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/spf13/cobra"

	"github.com/agentdlq/agentdlq/internal/awscfg"
	"github.com/agentdlq/agentdlq/internal/textutil"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/local/topology"
	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/eval"
	"github.com/agentdlq/agentdlq/triage/processed"
	"github.com/agentdlq/agentdlq/triage/render"
	"github.com/agentdlq/agentdlq/triage/report"
	"github.com/agentdlq/agentdlq/triage/store"
)

type triageFlags struct {
	processed     int
	processedFrom string
	pipeline      string
	out           *output
	keys          bool
	null          bool // --null (--keys0): the keys NUL-terminated
	keys0         bool
	exportEvals   string
	reports       string
	ledgerTable   string
	visibility    time.Duration
	receivers     int
	maxMessages   int
	maxSeconds    int
	noProgress    bool
	filter        filterFlags
}

func newTriageCmd(g *globalFlags) *cobra.Command {
	f := &triageFlags{}
	cmd := &cobra.Command{
		Use:   "triage --pipeline NAME [-o table|json|markdown | --keys [--null | -o json] | --keys0] [--export-evals DEST] [--tool T] [--tenant T] [--since WHEN] [--until WHEN] [--contains TEXT]",
		Short: "Read-only look at a pipeline's DLQ: reasons, groups, expiry risk, eval export",
		Long: `triage reads every dead letter of the pipeline's DLQ once, without deleting,
sending or moving any, and reports them by reason and group (fingerprint),
with their ages, when retention will delete them, the next action and
whether they may be redriven. Recurring poison can be exported as eval
records (--export-evals DEST, DEST a folder or s3://bucket/prefix); a case
already exported there is never exported twice. Every run's report is kept
(--reports, default out/<pipeline>/reports/ beside the pipelines.json found,
./out with --config or $AGENTDLQ_CONFIG): JSON, Markdown and a
self-contained report.html whose chart shows the runs before it. The console
(agentdlq ui) reads them.

The DLQ is AGENTDLQ_DLQ_URL when set, else the pipeline's local queue name
on local endpoints, else the queue tagged with the pipeline's name; the AWS
clients honour --profile, --region and AWS_ENDPOINT_URL_* (eval "$(make -s
local-env)" points them at the local emulators). The ledger
(AGENTDLQ_LEDGER_TABLE or --ledger-table; locally agentdlq-ledger) adds
dead-letter and redrive counts per key.

The report prints as text (-o table, the default), JSON (-o json or --json,
report_version 1) or Markdown (-o markdown or --markdown). On a terminal a
progress bar shows the scan against the DLQ's approximate depth; logs go to
stderr, progress (info) only with --verbose.

The report states the pipeline's dead-letter SLO: its target, the dead
letters of the last triage.schedule_minutes and the error budget they
spent, with the period's processed count: --processed N when given; else
the sum of the pipeline's Processed in --processed-from FILE, a local
worker's EMF lines; else, against AWS (no local SQS endpoint), the sum of
the worker's Processed metric read from CloudWatch (GetMetricData). A read
that fails leaves the budget unknown, and the report says why; it fails
nothing.

Exit codes: 0 done; 1 failed: a partial scan (letters in flight, hidden,
beyond a bound, a failed receive) or an export failure; 2 bad input
(unknown pipeline, missing DLQ, bad destination or flags).

A partial scan did not see every dead letter, so its counts are a lower
bound: the report is printed with a PARTIAL SCAN banner (-o json: one
document {"error","code","exit_code","result"} with the report as result,
"complete": false) and kept, and triage exits 1 with why and when to rerun
on stderr. With --keys it prints no key at all on stdout: a list of some
keys would look whole.

--keys prints the idempotency keys of the effect_unknown dead letters, one
a line, for a person: a key holding a control or bidi character (a line
break would make it read as two keys) is printed escaped (\n, \x1b,
\u202e), so not as stored, and said on stderr. For a script, use the exact
forms: --keys0 (or --keys --null) ends each key with a NUL byte (xargs -0,
while IFS= read -r -d ''), and --keys -o json prints {"keys": [...]}. A key
holding a NUL byte is left out of --keys0 (said on stderr, exit 1): -o json
has it.

Letters held by another reader (another triage, a
selective redrive, a receive whose response was lost) come back when their
visibility timeout lapses: rerun after the seconds the message names.

Filters (--tool, --tenant, --since, --until, --contains) narrow the report
to the dead letters they choose; the report says so (FILTERED, and
"filter" in JSON) and counts only those. A filtered report is neither kept
nor exported from (--reports and --export-evals are refused with a filter):
the kept reports and their chart are of the whole DLQ.`,
		Example: `  agentdlq triage --pipeline agent-tasks
  agentdlq triage --pipeline agent-tasks -o markdown > triage.md
  agentdlq triage --pipeline agent-tasks --export-evals s3://my-eval-bucket/agent-tasks -o json | jq .totals
  agentdlq triage --pipeline agent-tasks --profile prod --region eu-west-1 --verbose
  agentdlq triage --pipeline agent-tasks --tool email.send --since 2h --contains timeout
  agentdlq triage --pipeline agent-tasks --keys0 | xargs -0 -n1 agentdlq ledger get --key`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return f.run(cmd, g) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.pipeline, "pipeline", "", "pipeline name (required)")
	fl.BoolVar(&f.keys, "keys", false, "print only the idempotency keys of the effect_unknown dead letters, one a line, escaped (to read with agentdlq ledger get, then settle with agentdlq ledger reconcile); for a script: --keys0 or --keys -o json")
	fl.BoolVar(&f.null, "null", false, "with --keys: end each key with a NUL byte instead of a line break, exactly as stored (xargs -0, read -d '')")
	fl.BoolVar(&f.keys0, "keys0", false, "same as --keys --null")
	fl.StringVar(&f.exportEvals, "export-evals", "", "export recurring poison as eval records to a folder or s3://bucket/prefix")
	fl.StringVar(&f.reports, "reports", "", "keep the report (JSON, Markdown, HTML) under <pipeline>/reports/ in a folder or s3://bucket/prefix; \"\" keeps none ("+outHelp("")+")")
	fl.StringVar(&f.ledgerTable, "ledger-table", "", "ledger table (default $AGENTDLQ_LEDGER_TABLE; agentdlq-ledger with local endpoints; none otherwise)")
	fl.DurationVar(&f.visibility, "visibility", 30*time.Second, "how long the scan hides what it read (released early at the end)")
	fl.IntVar(&f.receivers, "receivers", 0, "parallel receivers (default: one per 2,000 messages, up to 8)")
	fl.IntVar(&f.maxMessages, "max-messages", 0, "bound on messages read (default: the pipeline's triage.max_messages)")
	fl.IntVar(&f.maxSeconds, "max-seconds", 0, "bound on the scan's duration (default: the pipeline's triage.max_seconds)")
	fl.BoolVar(&f.noProgress, "no-progress", false, "no progress bar")
	fl.IntVar(&f.processed, "processed", -1, "tasks the worker processed in the SLO period (the last triage.schedule_minutes; the AgentDLQ Processed metric's sum): the report then states the error budget spent; wins over --processed-from and CloudWatch")
	fl.StringVar(&f.processedFrom, "processed-from", "", "a file of a local worker's EMF lines (agentdlq work's stderr, agentdlq demo's out/worker.log): the processed count is the sum of the pipeline's Processed in the SLO period (default against AWS: the worker's Processed metric in CloudWatch; on local endpoints: none)")
	f.filter.add(fl)
	f.out = addOutput(cmd, formatTable, formatJSON, formatMarkdown)
	return cmd
}

func (f *triageFlags) run(cmd *cobra.Command, g *globalFlags) error {
	ctx := cmd.Context()
	if !cmd.Flags().Changed("reports") {
		f.reports = g.outRoot()
	}
	if err := f.check(cmd); err != nil {
		return err
	}
	filter, err := f.filter.parse(time.Now())
	if err != nil {
		return withExit(2, err)
	}
	if !filter.IsZero() {
		// A filtered report is of some letters: never kept beside the
		// DLQ's reports (the chart would draw a drop), never exported from.
		if f.exportEvals != "" || (cmd.Flags().Changed("reports") && f.reports != "") {
			return withExit(2, errors.New("--tool, --tenant, --since, --until and --contains exclude --export-evals and --reports: a filtered report is of some dead letters, and is neither exported from nor kept"))
		}
		f.reports = ""
	}
	p, err := g.loadPipeline(f.pipeline)
	if err != nil {
		return withExit(2, err)
	}
	cfg, err := awscfg.Load(ctx)
	if err != nil {
		return fmt.Errorf("aws config: %w", err)
	}
	dest, reports, err := f.destinations(cfg)
	if err != nil {
		return err
	}
	client := sqs.NewFromConfig(cfg)
	q, err := topology.ResolveWith(ctx, client, p, topology.OverrideFromEnv(os.Getenv))
	if err != nil {
		if errors.Is(err, topology.ErrNotFound) {
			return withExit(2, fmt.Errorf("pipeline %q: DLQ not found: %w", p.Name, err))
		}
		return fmt.Errorf("pipeline %q queues: %w", p.Name, err)
	}

	log := g.logger(cmd.ErrOrStderr())
	rc := triage.Config{Pipeline: p, DLQURL: q.DLQURL, SQS: client, Senders: q.Senders, Logger: log, Filter: filter, Scan: triage.ScanOptions{
		VisibilityTimeout: f.visibility, Receivers: f.receivers, MaxMessages: f.maxMessages,
		MaxDuration: time.Duration(f.maxSeconds) * time.Second,
	}}
	if f.processed >= 0 {
		rc.Processed = &f.processed
	} else {
		rc.ProcessedFrom = f.processedSource(cfg, os.Getenv, log)
	}
	if dest != nil {
		rc.Export = eval.To(dest)
	}
	if reports != nil {
		rc.Keep = render.KeepIn(reports)
	}
	if table := f.ledger(); table != "" {
		rc.Ledger = ledger.NewDynamo(dynamodb.NewFromConfig(cfg), table)
	}
	bar := &scanBar{g: g, w: cmd.ErrOrStderr(), enabled: !f.noProgress}
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
	// A scan that did not see every letter fails the command: the report
	// is printed (it says so) and kept, the keys are not.
	if r.Scan.Partial {
		runErr = errors.Join(partialScanError(r.Scan, p.Name+filterArgs(filter), f.keys), runErr)
	}
	if f.keys {
		if r.Scan.Partial {
			return runErr // no keys: a list of some of them would look whole
		}
		err := printKeys(cmd.OutOrStdout(), cmd.ErrOrStderr(), r, f.keysForm())
		return errors.Join(err, runErr)
	}
	if runErr != nil && f.out.JSON() {
		return withResult(runErr, r) // one document: the error, and the report as its result
	}
	if err := f.print(cmd.OutOrStdout(), r); err != nil {
		return err
	}
	return runErr // a partial scan or an export failure: the report (marked partial) is printed above
}

// destinations are where the run exports evals (--export-evals) and keeps
// its report (--reports), each nil when not asked for.
func (f *triageFlags) destinations(cfg aws.Config) (dest, reports store.Destination, err error) {
	if f.exportEvals != "" {
		if dest, err = store.Parse(f.exportEvals, s3.NewFromConfig(cfg)); err != nil {
			return nil, nil, withExit(2, err)
		}
	}
	if f.reports != "" {
		if reports, err = store.Parse(f.reports, s3.NewFromConfig(cfg)); err != nil {
			return nil, nil, withExit(2, fmt.Errorf("--reports: %w", err))
		}
	}
	return dest, reports, nil
}

// processedSource is where the report reads the SLO period's processed
// count when --processed is not given: --processed-from's file; else
// CloudWatch, when the DLQ is AWS's (no local SQS endpoint) or a CloudWatch
// endpoint is set; else none (the local emulators have no CloudWatch: the
// report says the budget spent is not known, and how to give it).
func (f *triageFlags) processedSource(cfg aws.Config, getenv func(string) string, log *slog.Logger) triage.ProcessedSource {
	switch {
	case f.processedFrom != "":
		return processed.EMFFile{Path: f.processedFrom, Logger: log}
	case getenv("AWS_ENDPOINT_URL_CLOUDWATCH") != "" || (getenv("AWS_ENDPOINT_URL_SQS") == "" && getenv("AWS_ENDPOINT_URL") == ""):
		return processed.CloudWatch{API: cloudwatch.NewFromConfig(cfg), Logger: log}
	}
	return nil
}

// check checks the flags that stand on their own.
func (f *triageFlags) check(cmd *cobra.Command) error {
	if f.pipeline == "" {
		return withExit(2, errors.New("--pipeline is required"))
	}
	if f.keys0 {
		f.keys, f.null = true, true
	}
	if f.null && !f.keys {
		return withExit(2, errors.New("--null is a form of --keys: use --keys --null or --keys0"))
	}
	if f.keys && (f.out.Markdown() || (f.null && f.out.JSON())) {
		return withExit(2, errors.New("--keys prints a list: plain, NUL-terminated (--keys0) or JSON (-o json); it excludes -o markdown, and --null excludes -o json"))
	}
	if cmd.Flags().Changed("processed") && f.processed < 0 {
		return withExit(2, errors.New("--processed must not be negative"))
	}
	if f.processedFrom != "" {
		if st, err := os.Stat(f.processedFrom); err != nil || st.IsDir() {
			return withExit(2, fmt.Errorf("--processed-from %s: not a file of EMF lines (agentdlq work's stderr, agentdlq demo's worker.log)", f.processedFrom))
		}
	}
	if f.maxMessages < 0 || f.maxSeconds < 0 || f.receivers < 0 || f.receivers > 32 {
		return withExit(2, errors.New("--max-messages and --max-seconds must not be negative, --receivers is 0..32"))
	}
	if f.visibility < time.Second || f.visibility > 12*time.Hour {
		return withExit(2, fmt.Errorf("--visibility %s is outside 1s..12h", f.visibility))
	}
	return nil
}

// partialScanError says that the scan did not see every dead letter, why,
// and when or how a rerun may; it wraps triage.ErrScanPartial.
func partialScanError(st report.ScanStats, pipelineName string, keys bool) error {
	rerun := "agentdlq triage --pipeline " + pipelineName
	if keys {
		rerun += " --keys"
	}
	var next string
	switch {
	case st.RetryAfterSeconds > 0:
		next = fmt.Sprintf("rerun in about %ds, when the letters held are visible again: %s", st.RetryAfterSeconds, rerun)
	case st.PartialCause == triage.CauseMaxMessages:
		next = "rerun with a higher bound: " + rerun + " --max-messages N"
	case st.PartialCause == triage.CauseMaxDuration:
		next = "rerun with a higher bound: " + rerun + " --max-seconds N"
	case st.PartialCause == triage.CauseVisibilityLapsed:
		next = "rerun with a longer hold: " + rerun + " --visibility 2m"
	case st.PartialCause == triage.CauseFIFOGroups:
		next = "a rerun sees the same: a read-only scan of a FIFO DLQ sees at most a batch of each message group"
	default:
		next = "rerun: " + rerun
	}
	what := "the report's counts are a lower bound"
	if keys {
		what = "no keys printed: some would be missing"
	}
	return fmt.Errorf("%w: %s (saw %d of about %d: %d visible and %d in flight at the start); %s; %s",
		triage.ErrScanPartial, st.PartialReason, st.Unique, st.ApproxDepth+st.ApproxInFlight, st.ApproxDepth, st.ApproxInFlight, what, next)
}

// keysForm is how --keys prints: plain lines, NUL-terminated or JSON.
type keysForm int

const (
	keysPlain keysForm = iota
	keysNull
	keysJSON
)

func (f *triageFlags) keysForm() keysForm {
	switch {
	case f.null:
		return keysNull
	case f.out.JSON():
		return keysJSON
	}
	return keysPlain
}

// keysResult is what --keys -o json prints.
type keysResult struct {
	Pipeline string   `json:"pipeline"`
	Keys     []string `json:"keys"`
	// Omitted is how many effect_unknown keys the report left out (it
	// lists a bounded number a group).
	Omitted int `json:"omitted"`
	// Tenants are each key's tenants, as stored (a key is its tenant's
	// within the pipeline: ledger get and reconcile take --tenant), from
	// the letters the scan read; absent where the report holds no letters.
	Tenants map[string][]string `json:"tenants,omitempty"`
}

// errKeyWithNUL is --keys0 leaving out a key it cannot print.
var errKeyWithNUL = errors.New("a key holds a NUL byte, which would end it early in --keys0: it is not listed; agentdlq triage --keys -o json has it")

// printKeys prints the idempotency keys of the report's effect_unknown
// groups, sorted: one a line and escaped (plain: a key never reads as two,
// nor drives the terminal), each ending in a NUL byte and exactly as stored
// (keysNull), or as JSON (keysJSON, JSON-escaped: exact). Keys beyond the
// report's cap, and plain keys printed escaped, are said on stderr, so that
// stdout stays a list. A partial scan prints none (run).
func printKeys(w, stderr io.Writer, r *report.Report, form keysForm) error {
	keys, omitted := r.EffectUnknownKeys()
	if form == keysJSON {
		if keys == nil {
			keys = []string{}
		}
		return writeJSON(w, keysResult{Pipeline: r.Pipeline, Keys: keys, Omitted: omitted, Tenants: r.EffectUnknownTenants()})
	}
	var b bytes.Buffer
	escaped, withNUL := 0, 0
	for _, k := range keys {
		switch {
		case form == keysNull && strings.IndexByte(k, 0) >= 0:
			withNUL++
			continue
		case form == keysNull:
			b.WriteString(k)
			b.WriteByte(0)
			continue
		case textutil.NeedsEscape(k):
			escaped++
			k = textutil.Escape(k)
		}
		b.WriteString(k)
		b.WriteByte('\n')
	}
	if _, err := w.Write(b.Bytes()); err != nil {
		return err
	}
	if omitted > 0 {
		fmt.Fprintf(stderr, "note: %d more effect_unknown keys not listed (the report lists a bounded number a group): reconcile these, then run triage again\n", omitted)
	}
	if escaped > 0 {
		fmt.Fprintf(stderr, "note: %d keys hold control or bidi characters and are printed escaped, not as stored: for a script, agentdlq triage --keys0 or --keys -o json prints them exactly\n", escaped)
	}
	if withNUL > 0 {
		return withExit(1, fmt.Errorf("%d keys not listed: %w", withNUL, errKeyWithNUL))
	}
	return nil
}

// ledger is the ledger table to read, if any.
func (f *triageFlags) ledger() string { return ledgerTableName(f.ledgerTable) }

func (f *triageFlags) print(w io.Writer, r *report.Report) error {
	switch {
	case f.out.JSON():
		return writeJSON(w, r)
	case f.out.Markdown():
		if err := render.Markdown(w, r); err != nil {
			return err
		}
		// The library's report names no command; the CLI does.
		_, err := fmt.Fprintf(w, "\nNext: `agentdlq triage --pipeline %s`, then `agentdlq redrive plan --pipeline %s`.\n", r.Pipeline, r.Pipeline)
		return err
	default:
		return render.Text(w, r)
	}
}

// scanBar is the scan's progress bar on stderr (a terminal): its total is
// the DLQ's approximate depth the scan reports, its first frame after the
// warmup (bar).
type scanBar struct {
	g       *globalFlags
	w       io.Writer
	enabled bool
	mu      sync.Mutex
	bar     *bar
	started bool
}

func (b *scanBar) progress(seen, approxTotal int) {
	if !b.enabled {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.started {
		b.started = true
		b.bar = b.g.newBar(b.w, int64(approxTotal), "scanning DLQ")
	}
	b.bar.Set(seen)
}

func (b *scanBar) finish() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.bar.Finish()
}
