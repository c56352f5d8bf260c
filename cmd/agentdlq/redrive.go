package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/spf13/cobra"

	"github.com/agentdlq/agentdlq/events/agenttask"
	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/functions/sampleworker"
	"github.com/agentdlq/agentdlq/internal/awscfg"
	"github.com/agentdlq/agentdlq/internal/textutil"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/local/topology"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
	"github.com/agentdlq/agentdlq/triage"
)

// redriveFlags are the flags the redrive subcommands share.
type redriveFlags struct {
	g           *globalFlags
	pipeline    string
	audit       string
	ledgerTable string

	owner, why  string
	rate        int
	overrides   []string
	fixDeployed string
	reviewed    string

	// evidenceBucket is --evidence-bucket (select only): see evalBucketName.
	evidenceBucket string

	// onCanary is the canary's progress (select only).
	onCanary func(pending, moved int, waited, timeout time.Duration)

	// catalog, when set, is the Config.Catalog open gives the Redriver, by
	// the locality it decided (ledger verify only); else the sample
	// catalog.
	catalog func(local bool) agenttask.Catalog
}

func newRedriveCmd(g *globalFlags) *cobra.Command {
	f := &redriveFlags{g: g}
	cmd := &cobra.Command{
		Use:   "redrive",
		Short: "Plan, start, select, watch and cancel a redrive of a pipeline's DLQ (owner only, gated, audited)",
		Long: `Redrive moves dead letters back to their pipeline's own hot queue, one class of cause at a time,
after triage. Only the pipeline's named owner may move anything; every decision is audited.

  plan     what the DLQ holds by reason and group, what may be redriven, and the command for each group
  select   move only the dead letters of chosen reasons (and fingerprints), with a canary
  start    a native SQS move task of the whole DLQ (refused while it holds a group that may not be redriven)
  status   the DLQ's move tasks and their progress
  cancel   cancel the running move task
  reject   record that a group is rejected (never redriven)
  repair   patch one dead letter's task args (RFC 6902 JSON Patch), then send it back

Each subcommand prints its result as a table (the default), JSON (-o json, or
--json) or, for plan and status, Markdown (-o markdown). With -o json a refusal
or an error is JSON too: {"error":…,"code":…,"exit_code":…}, the code being the
refusal's (owner_mismatch, reason_not_redrivable, …), bad_input, canary_failed
or failed.

Exit codes: 0 done, 1 failed, 2 refused or bad input (nothing moved), 3 canary failed.`,
		Example: `  agentdlq redrive plan --pipeline agent-tasks
  agentdlq redrive select --pipeline agent-tasks --reason dependency_open --owner platform-oncall --why "search-api is back (INC-412)" --canary 5
  agentdlq redrive status --pipeline agent-tasks -o json`,
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&f.pipeline, "pipeline", "", "pipeline name (required)")
	pf.StringVar(&f.audit, "audit", "", "audit store: a JSONL file, or s3://bucket/prefix ("+outHelp("audit/<pipeline>.jsonl")+")")
	pf.StringVar(&f.ledgerTable, "ledger-table", "", "the idempotency ledger table (default $AGENTDLQ_LEDGER_TABLE; agentdlq-ledger with local endpoints)")
	cmd.AddCommand(newRedrivePlanCmd(f), newRedriveStartCmd(f), newRedriveSelectCmd(f),
		newRedriveStatusCmd(f), newRedriveCancelCmd(f), newRedriveRejectCmd(f), newRedriveRepairCmd(f))
	for _, c := range cmd.Commands() {
		c.RunE = refusalsInFlags(f, c.RunE)
	}
	return cmd
}

// gateFlags adds the flags of the gated subcommands.
func (f *redriveFlags) gateFlags(c *cobra.Command, withRate, withAck bool) {
	c.Flags().StringVar(&f.owner, "owner", "", "who acts: must be the pipeline's owner (required)")
	c.Flags().StringVar(&f.why, "why", "", "why this is safe now: the fix, the incident (required)")
	if withRate {
		c.Flags().IntVar(&f.rate, "rate", redrive.DefaultRate, "messages a second, 1..500")
	}
	if withAck {
		c.Flags().StringArrayVar(&f.overrides, "override", nil, "REASON=JUSTIFICATION: redrive a reason that policy forbids (repeatable)")
		c.Flags().StringVar(&f.fixDeployed, "fix-deployed", "", "the deployed fix (commit, release): unlocks poison, auth_config and unclassified")
		c.Flags().StringVar(&f.reviewed, "reviewed", "", "what the review found: unlocks receive_limit")
	}
}

func (f *redriveFlags) ack() (redrive.Ack, error) {
	ov, err := parseOverrides(f.overrides)
	if err != nil {
		return redrive.Ack{}, err
	}
	return redrive.Ack{FixDeployed: strings.TrimSpace(f.fixDeployed), Reviewed: strings.TrimSpace(f.reviewed), Overrides: ov}, nil
}

// refused audits a refusal that came before the Redriver could act
// (redrive.Refuse) and returns it with exit 2. A command that never
// reached a pipeline (no --pipeline, a definition file that does not load,
// a name it does not define) writes nothing: there is no pipeline to file
// the record under, and a typo must not create an audit file.
func (f *redriveFlags) refused(ctx context.Context, cfg *aws.Config, action audit.Action, who redrive.Who, err error) error {
	if f.pipeline == "" {
		return withExit(exitRefused, err)
	}
	if _, perr := f.g.loadPipeline(f.pipeline); perr != nil {
		return withExit(exitRefused, err)
	}
	var s3api audit.S3PutAPI
	if cfg == nil && strings.HasPrefix(f.g.auditDest(f.audit, f.pipeline), "s3://") {
		// Refused before the AWS configuration was loaded; an S3 audit
		// needs it to record the refusal.
		if c, cerr := awscfg.Load(ctx); cerr == nil {
			cfg = &c
		}
	}
	if cfg != nil {
		s3api = s3.NewFromConfig(*cfg)
	}
	if a, aerr := audit.Open(f.g.auditDest(f.audit, f.pipeline), f.pipeline, s3api, f.g.auditLog()); aerr == nil {
		// Recorded as the terminal shows it: the flag at fault.
		err = redrive.Refuse(ctx, a, f.pipeline, action, who, inFlags(err, nil))
	}
	return withExit(exitRefused, err)
}

// auditLog is the logger of the audit records: the record is in the audit
// store, so its log line goes to stderr only when asked for (--verbose, or
// --log-format json for a log collector), never on its own beside the
// refusal a terminal already shows.
func (g *globalFlags) auditLog() *slog.Logger {
	if !g.verbose && g.logFormat != logJSON {
		return slog.New(slog.DiscardHandler)
	}
	w := g.stderr
	if w == nil {
		w = os.Stderr
	}
	return slog.New(logHandler(g.console(w), g.logFormat, slog.LevelInfo))
}

// open builds the pipeline's Redriver from the flags and the environment:
// the pipeline, the AWS clients, the queues, the ledger and the audit
// store. What goes wrong before the gate is refused, and audited once the
// pipeline is known.
func (f *redriveFlags) open(ctx context.Context, action audit.Action, who redrive.Who, onMove func()) (*redrive.Redriver, error) {
	if f.pipeline == "" {
		return nil, withExit(exitRefused, errors.New("--pipeline is required: name the pipeline whose DLQ this is (agentdlq triage lists them)"))
	}
	p, err := f.g.loadPipeline(f.pipeline)
	if err != nil {
		return nil, withExit(exitRefused, err)
	}
	// A gated command without --owner is refused before anything is
	// resolved (AWS configuration, queues, STS): nothing to look up for it.
	if err := redrive.RequireOwner(p, action, who); err != nil {
		return nil, f.refused(ctx, nil, action, who, err)
	}
	cfg, err := awscfg.Load(ctx)
	if err != nil {
		return nil, fmt.Errorf("aws config: %w", err)
	}
	// Checked before any AWS call; redrive.New refuses a Config without it too.
	table := ledgerTableName(f.ledgerTable)
	if table == "" {
		return nil, f.refused(ctx, &cfg, action, who, fmt.Errorf("%s: %w", noLedgerTable, redrive.ErrNoLedger))
	}
	logger := f.g.log()
	rc := clientsOf(cfg, table)
	// Before any AWS call: redrive decides from the clients whether the
	// caller check runs (every endpoint local) and refuses an STS that is
	// not AWS's while it must.
	local, err := redrive.Locality(rc)
	if err != nil {
		return nil, f.refused(ctx, &cfg, action, who, err)
	}
	client, s3c := rc.SQS.(*sqs.Client), rc.Evidence.(*s3.Client)
	q, err := topology.ResolveWith(ctx, client, p, topology.OverrideFromEnv(os.Getenv))
	if err != nil {
		if errors.Is(err, topology.ErrNotFound) {
			return nil, f.refused(ctx, &cfg, action, who, &redrive.Refusal{Code: redrivetype.CodeDLQMissing, Reason: fmt.Sprintf("pipeline %q: %v", p.Name, err)})
		}
		return nil, fmt.Errorf("pipeline %q queues: %w", p.Name, err)
	}
	a, err := audit.Open(f.g.auditDest(f.audit, p.Name), p.Name, s3c, f.g.auditLog())
	if err != nil {
		return nil, withExit(exitRefused, err)
	}
	if local {
		// No Lambda locally: pause and resume switch the local worker.
		if rc.Lambda, err = localSwitch(); err != nil {
			return nil, err
		}
	}
	rc.Pipeline, rc.Queues, rc.Audit = p, q, a
	rc.EvidenceBucket = evalBucketName(f.evidenceBucket)
	rc.Logger, rc.OnMove, rc.OnCanary = logger, onMove, f.onCanary
	rc.FieldNames = flagName
	if f.catalog != nil {
		rc.Catalog = f.catalog(local)
	}
	r, err := redrive.New(rc)
	if err != nil {
		return nil, redrive.Refuse(ctx, a, p.Name, action, who, err)
	}
	return r, nil
}

// flagOf is the flag of each request field a redrive refusal can name
// (redrive.Refusal.Field).
var flagOf = map[string]string{
	"Owner": "--owner", "Why": "--why", "Rate": "--rate", "Reasons": "--reason", "Fingerprints": "--fingerprint",
	"Canary": "--canary", "Limit": "--limit", "PerTenant": "--per-tenant", "Destination": "--destination", "Ack.FixDeployed": "--fix-deployed",
	"Ack.Reviewed": "--reviewed", "Ack.Overrides": "--override", "Key": "--key",
	"Outcome": "--no-effect or --effect-confirmed", "Receipt": "--effect-confirmed RECEIPT", "Hold": "--hold",
	"Filter": "--tool/--tenant/--since/--until/--contains", "MessageID": "--message-id", "Patch": "--patch",
}

// flagName is the flag of a refusal's field (redrive.Config.FieldNames):
// the words the audit records a refusal in, as the terminal shows it.
func flagName(field string) string { return flagOf[field] }

// flagError is a refusal told in the command line's words: the flag at
// fault instead of the request field (redrive.Refusal.Field).
type flagError struct {
	msg string
	err error
	// p and next are the pipeline and the refusal's next steps, which
	// a JSON error lists as data with their command lines.
	p    *pipeline.Pipeline
	next []redrivetype.Step
}

func (e *flagError) Error() string { return e.msg }
func (e *flagError) Unwrap() error { return e.err }

// inFlags tells the refusal in err's chain in the command line's words: the
// flag of the field at fault, and its next steps as command lines on pipeline
// p (nil: none known, the steps are left out).
func inFlags(err error, p *pipeline.Pipeline) error {
	if errors.Is(err, redrive.ErrUnsupported) && p != nil {
		// No move tasks on this endpoint (the local emulator): select works.
		next := []redrivetype.Step{{Action: audit.ActionSelect, Reason: "REASON"}}
		return &flagError{msg: err.Error() + nextLines(p, next), err: err, p: p, next: next}
	}
	var rf *redrive.Refusal
	if !errors.As(err, &rf) || (rf.Field == "" && (len(rf.Next) == 0 || p == nil)) {
		return err
	}
	fe := &flagError{msg: redrive.Told(err, flagName), err: err, p: p}
	if p != nil {
		fe.msg += nextLines(p, rf.Next)
		fe.next = rf.Next
	}
	return fe
}

// refusalsInFlags wraps a command's RunE so that its refusals name flags
// and their next steps (on f's pipeline, when it is defined).
func refusalsInFlags(f *redriveFlags, run func(*cobra.Command, []string) error) func(*cobra.Command, []string) error {
	return func(c *cobra.Command, args []string) error {
		err := run(c, args)
		if err == nil {
			return nil
		}
		p, _ := f.g.loadPipeline(f.pipeline)
		return inFlags(err, p)
	}
}

// evalBucketName is the eval bucket, the only one claim checks are read
// from: the flag, else AGENTDLQ_EVAL_BUCKET (the stack output
// EvalBucketName), else the local topology's bucket when the endpoints are
// local (docs/wiring.md), as the local worker (agentdlq work) puts them
// there; else none, and select reads no claim check.
func evalBucketName(flag string) string {
	if flag != "" {
		return flag
	}
	if b := os.Getenv("AGENTDLQ_EVAL_BUCKET"); b != "" {
		return b
	}
	if os.Getenv("AWS_ENDPOINT_URL_S3") != "" || os.Getenv("AWS_ENDPOINT_URL") != "" {
		return topology.LocalEvalBucket
	}
	return ""
}

// clientsOf are the clients every redrive command builds from cfg, as a
// partial redrive.Config (no pipeline, queues or audit yet): what
// redrive.Locality decides from, and what open completes for redrive.New.
func clientsOf(cfg aws.Config, ledgerTable string) redrive.Config {
	s3c := s3.NewFromConfig(cfg)
	return redrive.Config{
		SQS: sqs.NewFromConfig(cfg), STS: sts.NewFromConfig(cfg), Evidence: s3c, EvidenceWriter: s3c,
		Lambda: lambda.NewFromConfig(cfg), Ledger: ledger.NewDynamo(dynamodb.NewFromConfig(cfg), ledgerTable),
		Catalog: sampleworker.Catalog(nil),
	}
}

// actorOr is the audit's actor: the declared owner, else the OS user ($USER,
// else the account of the process's uid, else "uid:N"), never "unknown":
// an audit line must say who ran the command.
func actorOr(owner string) string {
	if owner != "" {
		return owner
	}
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return audit.OSUser()
}

func newRedrivePlanCmd(f *redriveFlags) *cobra.Command {
	var actor string
	var out *output
	var ff filterFlags
	c := &cobra.Command{
		Use:   "plan --pipeline NAME [--tool T] [--tenant T] [--since WHEN] [--until WHEN] [--contains TEXT] [-o table|json|markdown]",
		Short: "What the DLQ holds by reason and group, what may be redriven and why, and the command for each group",
		Example: `  agentdlq redrive plan --pipeline agent-tasks
  agentdlq redrive plan --pipeline agent-tasks -o markdown >> incident.md
  agentdlq redrive plan --pipeline agent-tasks -o json | jq -r '.groups[].command'
  agentdlq redrive plan --pipeline agent-tasks --tool web.search --since 2h`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			filter, err := ff.parse(time.Now())
			if err != nil {
				return f.refused(ctx, nil, audit.ActionPlan, redrive.Who{Owner: actorOr(actor)}, &redrive.Refusal{Code: redrivetype.CodeBadInput, Reason: err.Error()})
			}
			r, err := f.open(ctx, audit.ActionPlan, redrive.Who{Owner: actorOr(actor)}, nil)
			if err != nil {
				return err
			}
			pl, err := r.Plan(ctx, redrive.PlanRequest{Actor: actorOr(actor), Filter: filter})
			if pl == nil || (err != nil && !errors.Is(err, triage.ErrScanPartial)) {
				return err
			}
			// A partial scan: the plan is shown, and the command exits 1
			// saying when to look again (with -o json, one document).
			var werr error
			switch {
			case out.JSON() && err != nil:
				return withResult(err, planView(pl))
			case out.JSON():
				werr = writeJSON(cmd.OutOrStdout(), planView(pl))
			case out.Markdown():
				werr = planMarkdown(cmd.OutOrStdout(), pl)
			default:
				werr = writePlanText(cmd.OutOrStdout(), pl)
			}
			if err != nil {
				return err
			}
			return werr
		},
	}
	c.Flags().StringVar(&actor, "owner", "", "who looks (recorded in the audit; default $USER)")
	ff.add(c.Flags())
	out = addOutput(c, formatTable, formatJSON, formatMarkdown)
	return c
}

func newRedriveStartCmd(f *redriveFlags) *cobra.Command {
	var dest string
	var out *output
	c := &cobra.Command{
		Use:   "start --pipeline NAME --owner WHO --why TEXT [--rate N] [--override REASON=JUSTIFICATION] [-o table|json]",
		Short: "Start a native SQS message move task from the DLQ to the pipeline's own hot queue",
		Example: `  agentdlq redrive start --pipeline agent-tasks --owner platform-oncall --why "rate limit raised (INC-412)" --rate 20
  agentdlq redrive status --pipeline agent-tasks   # then watch it`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			who := redrive.Who{Owner: f.owner, Why: f.why}
			ack, err := f.ack()
			if err != nil {
				return f.refused(ctx, nil, audit.ActionStart, who, err)
			}
			r, err := f.open(ctx, audit.ActionStart, who, nil)
			if err != nil {
				return err
			}
			task, err := r.Start(ctx, redrive.StartRequest{Who: who, Rate: f.rate, Destination: dest, Ack: ack})
			if err != nil {
				return err
			}
			if out.JSON() {
				return writeJSON(cmd.OutOrStdout(), task)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "move task started: %s\n  from %s\n  to   %s\n  at most %d messages a second\nwatch it: agentdlq redrive status --pipeline %s\n",
				task.TaskHandle, task.SourceARN, task.DestinationARN, task.Rate, f.pipeline)
			return nil
		},
	}
	f.gateFlags(c, true, true)
	c.Flags().StringVar(&dest, "destination", "", "destination queue ARN; anything but the pipeline's hot queue is refused (default: the hot queue)")
	out = addOutput(c, formatTable, formatJSON)
	return c
}

func newRedriveStatusCmd(f *redriveFlags) *cobra.Command {
	var actor string
	var out *output
	c := &cobra.Command{
		Use:   "status --pipeline NAME [-o table|json|markdown]",
		Short: "The DLQ's move tasks: status, progress (moved/total) and failure reason",
		Example: `  agentdlq redrive status --pipeline agent-tasks
  agentdlq redrive status --pipeline agent-tasks -o json | jq '.[0].status'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			r, err := f.open(ctx, audit.ActionStatus, redrive.Who{Owner: actorOr(actor)}, nil)
			if err != nil {
				return err
			}
			tasks, err := r.Status(ctx, redrive.StatusRequest{Actor: actorOr(actor)})
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			switch {
			case out.JSON():
				if tasks == nil {
					tasks = []redrivetype.MoveTask{}
				}
				return writeJSON(w, tasks)
			case out.Markdown():
				return tasksMarkdown(w, tasks)
			}
			if len(tasks) == 0 {
				fmt.Fprintln(w, "no move task on this DLQ")
			}
			for _, t := range tasks {
				fmt.Fprintf(w, "%-10s %s moved  rate %d/s  started %s  %s\n", textutil.Escape(t.Status), taskProgress(t), t.Rate, t.StartedAt.Format(time.RFC3339), textutil.Escape(t.TaskHandle))
				if t.FailureReason != "" {
					fmt.Fprintf(w, "           failure: %s\n", textutil.Escape(t.FailureReason))
				}
			}
			return nil
		},
	}
	c.Flags().StringVar(&actor, "owner", "", "who looks (recorded in the audit; default $USER)")
	out = addOutput(c, formatTable, formatJSON, formatMarkdown)
	return c
}

func newRedriveCancelCmd(f *redriveFlags) *cobra.Command {
	var handle string
	var out *output
	c := &cobra.Command{
		Use:     "cancel --pipeline NAME --owner WHO --why TEXT [--task-handle H] [-o table|json]",
		Short:   "Cancel the DLQ's running move task",
		Example: `  agentdlq redrive cancel --pipeline agent-tasks --owner platform-oncall --why "canary failed again (INC-412)"`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			who := redrive.Who{Owner: f.owner, Why: f.why}
			r, err := f.open(ctx, audit.ActionCancel, who, nil)
			if err != nil {
				return err
			}
			moved, err := r.Cancel(ctx, redrive.CancelRequest{Who: who, TaskHandle: handle})
			if err != nil {
				return err
			}
			if out.JSON() {
				return writeJSON(cmd.OutOrStdout(), cancelResult{Pipeline: f.pipeline, Cancelled: true, Moved: moved})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "move task cancelled after about %d messages moved\n", moved)
			return nil
		},
	}
	f.gateFlags(c, false, false)
	c.Flags().StringVar(&handle, "task-handle", "", "the task to cancel (default: the running one)")
	out = addOutput(c, formatTable, formatJSON)
	return c
}

func newRedriveSelectCmd(f *redriveFlags) *cobra.Command {
	var (
		reasons, fps  []string
		canary, limit int
		perTenant     int
		dryRun        bool
		canaryTimeout time.Duration
		hold          time.Duration
		out           *output
		ff            filterFlags
	)
	c := &cobra.Command{
		Use:   "select --pipeline NAME --reason R [--fingerprint F] [--tool T] [--tenant T] [--since WHEN] [--until WHEN] [--contains TEXT] --owner WHO --why TEXT [--rate N] [--canary N] [--dry-run] [-o table|json]",
		Short: "Move only the dead letters of the chosen reasons (and fingerprints) back to the hot queue",
		Long: `select receives the DLQ's dead letters, moves those of the chosen reasons (and
fingerprints, from plan) to the pipeline's own hot queue at --rate, and
releases the others at once. With --canary N it moves N first and waits for
their outcome (a worker must consume the hot queue), and stops if any failed:
exit 3. On a terminal a progress bar shows the messages moved against the
DLQ's approximate depth, with the rate and the time left.

A dead letter too large for the DLQ gave attributes up to a claim check in
the eval bucket; select reads them back from --evidence-bucket only. A letter
whose claim check restores nothing stays in the DLQ, counted by cause
(claim_check_failed), while the others move; the command then exits 1.

Filters narrow the chosen reason's letters further: --tool, --tenant,
--since and --until (RFC 3339, or a duration ago such as 2h), --contains
TEXT (in the error). The reason stays required (its policy and gate
apply); the audit record names the filter. A filter that chooses none of
the reason's letters is refused (nothing_selected), and nothing moves.

--per-tenant N moves at most N letters of any one tenant in this pass, so
that the replay of one tenant's backlog cannot flood the hot queue ahead of
the others; the rest stay in the DLQ for the next pass (over_tenant_budget).
With --canary it is a canary per tenant: each tenant's first letters move
and are awaited before its next; a tenant whose canary fails moves no more
(tenants_canary_failed), the others go on, and the command exits 3.

Exit codes: 0 done, 1 failed, 2 refused or bad input (nothing moved), 3 canary failed.`,
		Example: `  agentdlq redrive select --pipeline agent-tasks --reason dependency_open --owner platform-oncall --why "search-api is back (INC-412)" --canary 5
  agentdlq redrive select --pipeline agent-tasks --reason schema_invalid --fingerprint 3f9a2c1e --owner platform-oncall --why "schema v2 accepted" --fix-deployed v1.4.2 --dry-run
  agentdlq redrive select --pipeline agent-tasks --reason dependency_open --owner platform-oncall --why "fixed" -o json | jq .moved
  agentdlq redrive select --pipeline agent-tasks --reason budget_exhausted --tool web.search --since 2h --owner platform-oncall --why "search quota raised" --canary 3
  agentdlq redrive select --pipeline agent-tasks --reason dependency_open --owner platform-oncall --why "provider back (INC-415)" --per-tenant 50 --canary 1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			who := redrive.Who{Owner: f.owner, Why: f.why}
			rs, err := parseReasons(reasons)
			if err != nil {
				return f.refused(ctx, nil, audit.ActionSelect, who, err)
			}
			ack, err := f.ack()
			if err != nil {
				return f.refused(ctx, nil, audit.ActionSelect, who, err)
			}
			filter, err := ff.parse(time.Now())
			if err != nil {
				return f.refused(ctx, nil, audit.ActionSelect, who, &redrive.Refusal{Code: redrivetype.CodeBadInput, Reason: err.Error()})
			}
			var b *bar
			f.onCanary = canaryProgress(f.g.console(cmd.ErrOrStderr()))
			r, err := f.open(ctx, audit.ActionSelect, who, func() { b.Add(1) })
			if err != nil {
				return err
			}
			if !dryRun && isTerminal(cmd.ErrOrStderr()) {
				b = f.g.newBar(cmd.ErrOrStderr(), selectBarTotal(ctx, r.Depth, limit, f.g.log()), "redriving")
			}
			res, err := r.Select(ctx, redrive.SelectRequest{
				Who: who, Reasons: rs, Fingerprints: fps, Filter: filter,
				Rate: f.rate, Canary: canary, DryRun: dryRun, Limit: limit, Ack: ack, Hold: hold, CanaryTimeout: canaryTimeout,
				PerTenant: perTenant,
			})
			b.Finish()
			return printSelect(cmd.OutOrStdout(), out, f.pipeline, res, err)
		},
	}
	f.gateFlags(c, true, true)
	c.Flags().StringArrayVar(&reasons, "reason", nil, "reason to redrive (repeatable or comma-separated; required)")
	c.Flags().StringArrayVar(&fps, "fingerprint", nil, "only these groups of the reason: a fingerprint from redrive plan or triage, or any unique prefix of at least 8 characters (repeatable)")
	c.Flags().IntVar(&canary, "canary", 0, "move N first, wait for their outcome, stop if any failed (default none; the plan suggests a tenth of the group, 1 to 10, never all of it)")
	c.Flags().DurationVar(&canaryTimeout, "canary-timeout", redrive.DefaultCanaryTimeout, "how long to wait for the canary's outcome")
	c.Flags().IntVar(&limit, "limit", 0, "move at most N (0: all that match)")
	c.Flags().IntVar(&perTenant, "per-tenant", 0, "move at most N letters of any one tenant this pass (0: no budget); with --canary, each tenant's canary first")
	c.Flags().BoolVar(&dryRun, "dry-run", false, "move nothing; say what would move")
	ff.add(c.Flags())
	c.Flags().StringVar(&f.evidenceBucket, "evidence-bucket", "", "the eval bucket, the only one claim checks of oversized dead letters are read from (default $AGENTDLQ_EVAL_BUCKET, the stack output EvalBucketName; agentdlq-evals with local endpoints)")
	out = addOutput(c, formatTable, formatJSON)
	c.Flags().DurationVar(&hold, "hold", redrive.DefaultHold, "visibility timeout of the dead letters a pass receives: how long one is hidden while it moves, and, after a crash, how long the letters the pass left stay hidden")
	return c
}

// printSelect writes what select did (res, when not nil) as out says, and
// returns the command's error: with -o json a refusal is the error alone,
// another error one document with what was done; a refusal's table is the
// error's.
func printSelect(w io.Writer, out *output, pipelineName string, res *redrive.SelectResult, err error) error {
	if res == nil {
		return err
	}
	switch {
	case out.JSON() && errors.Is(err, redrive.ErrRefused):
		return err // nothing was done: the error alone
	case out.JSON() && err != nil:
		return withResult(err, res) // one document: the error and what was done
	case out.JSON():
		return writeJSON(w, res)
	case !errors.Is(err, redrive.ErrRefused):
		writeSelectResult(w, pipelineName, res, errors.Is(err, triage.ErrScanPartial))
	}
	return err
}

// selectBarTotal is the total of select's progress bar: what the DLQ holds
// (approximately: visible and in flight, as the result's depth_at_start), at
// most limit. When the depth cannot be read it is unknown, not 0: the total
// is limit, or 0 for a bar without a total, and the error is logged (shown
// with --verbose); Select itself then reads the depth again, and fails if it
// still cannot.
func selectBarTotal(ctx context.Context, depth func(context.Context) (visible, inFlight int, err error), limit int, log *slog.Logger) int64 {
	visible, inFlight, err := depth(ctx)
	total := int64(visible + inFlight)
	if err != nil {
		log.InfoContext(ctx, "DLQ depth unknown: the progress bar has no total", "error", err.Error())
		total = 0
	}
	if limit > 0 && (total <= 0 || int64(limit) < total) {
		total = int64(limit)
	}
	return total
}

// writeRejectWarnings prints a rejection's warnings on stderr.
func writeRejectWarnings(w io.Writer, warnings []string) {
	for _, s := range warnings {
		fmt.Fprintf(w, "warning: %s\n", textutil.Escape(s))
	}
}

// writeSelectResult prints what a pass did; scanPartial says that the
// pass's error is a partial scan, which the error itself explains (on
// stderr, with when to retry).
func writeSelectResult(w io.Writer, name string, res *redrive.SelectResult, scanPartial bool) {
	fmt.Fprintf(w, "%s: %s\n", name, res.Summary())
	for _, reason := range deadletter.AllReasons() { // taxonomy order
		if _, ok := res.ByReason[reason]; !ok {
			continue
		}
		fmt.Fprintf(w, "  %-26s %d\n", reason, res.ByReason[reason])
	}
	if res.DryRun {
		for _, l := range res.Letters {
			fmt.Fprintf(w, "  would move %s  reason %s  key %s  body sha256 %s\n", textutil.Escape(l.DLQMessageID), l.Reason, textutil.Escape(l.IdempotencyKey), l.BodySHA256[:12])
		}
	}
	if res.EffectConfirmed+res.NotReconciled > 0 {
		fmt.Fprintf(w, "left in the DLQ: %d effect_unknown with their effect confirmed (never run again: agentdlq redrive reject), %d not reconciled as no effect (agentdlq ledger reconcile)\n",
			res.EffectConfirmed, res.NotReconciled)
	}
	if res.Returned > 0 {
		fmt.Fprintf(w, "left in the DLQ: %d moved by this run and dead-lettered again while it ran (never moved twice by one run)\n", res.Returned)
	}
	if res.CopiesDeleted > 0 {
		what := "deleted from the DLQ: %d copies of dead letters this run moved (sent twice to the DLQ, identical byte for byte)\n"
		if res.DryRun {
			what = "would delete from the DLQ: %d copies of dead letters this run would move (sent twice to the DLQ, identical byte for byte)\n"
		}
		fmt.Fprintf(w, what, res.CopiesDeleted)
	}
	if res.CopyDeleteFailed > 0 {
		fmt.Fprintf(w, "left in the DLQ: %d copies of moved dead letters whose delete failed (a rerun moves them; the idempotency key absorbs it)\n", res.CopyDeleteFailed)
	}
	if res.OverTenantBudget > 0 {
		fmt.Fprintf(w, "left in the DLQ: %d over the per-tenant budget (the next pass moves the next share of each tenant)\n", res.OverTenantBudget)
	}
	if len(res.TenantsCanaryFailed) > 0 {
		fmt.Fprintf(w, "left in the DLQ: %d of tenants whose canary failed: %s\n", res.TenantStopped, strings.Join(res.TenantsCanaryFailed, ", "))
	}
	if c := res.Canary; c != nil {
		fmt.Fprintf(w, "canary: %d moved, %d processed, %d dead-lettered again, %d without outcome\n", c.Moved, c.Processed, c.DeadLettered, c.Pending)
	}
	if res.ClaimCheckFailed > 0 {
		causes := make([]string, 0, len(res.ClaimCheckFailedBy))
		for c, n := range res.ClaimCheckFailedBy {
			causes = append(causes, fmt.Sprintf("%s %d", c, n))
		}
		sort.Strings(causes)
		what := "left in the DLQ: %d whose claim check restored nothing (%s): never sent without the attributes they gave up; fix the claim check (or --evidence-bucket) and rerun, or reject them\n"
		if res.DryRun {
			what = "would stay in the DLQ: %d whose claim check restores nothing (%s): never sent without the attributes they gave up; fix the claim check (or --evidence-bucket) first, or reject them\n"
		}
		fmt.Fprintf(w, what, res.ClaimCheckFailed, strings.Join(causes, ", "))
		for i, u := range res.Unrestored {
			if i == 10 {
				fmt.Fprintf(w, "  … %d more (-o json lists up to %d)\n", res.ClaimCheckFailed-i, redrive.MaxLetters)
				break
			}
			fmt.Fprintf(w, "  %s  reason %s  %s: %s\n", textutil.Escape(u.DLQMessageID), u.Reason, u.Cause, textutil.Escape(u.Error))
		}
	}
	if res.SendFailed+res.DeleteFailed+res.LedgerFailed > 0 {
		fmt.Fprintf(w, "problems: %d sends failed (left in the DLQ), %d deletes failed (sent; rerun: the idempotency key absorbs the resend), %d redrive counts not recorded\n",
			res.SendFailed, res.DeleteFailed, res.LedgerFailed)
	}
	switch {
	case res.Canary != nil && res.Canary.DeadLettered > 0:
		fmt.Fprintln(w, "stopped: the canary failed, its messages were dead-lettered again; the rest stays in the DLQ. Fix the cause, deploy, and run the canary again")
	case res.Canary != nil && res.Canary.Pending > 0:
		fmt.Fprintf(w, "stopped: the canary has no outcome after %s: is the worker running? A worker must consume the hot queue while the canary waits (locally: agentdlq work --pipeline %s). The rest stays in the DLQ; start the worker and run the canary again\n",
			res.Canary.Waited.Round(time.Second), name)
	case res.Partial != "" && !scanPartial:
		fmt.Fprintf(w, "partial: %s; rerunning is safe\n", res.Partial)
	}
}

// canaryProgress says, while a canary waits, how many of its messages have
// an outcome and for how long it has waited: rewritten in place on a
// terminal (as a progress bar is, logs going above it), once otherwise.
// Nothing comes without a worker consuming the hot queue, so it says that
// too.
func canaryProgress(con *errConsole) func(pending, moved int, waited, timeout time.Duration) {
	said := false
	var w io.Writer = con
	return func(pending, moved int, waited, timeout time.Duration) {
		switch {
		case con.tty:
			fmt.Fprintf(barWriter{con}, "\rcanary: %d of %d with an outcome, waited %s of %s (a worker must consume the hot queue)   ",
				moved-pending, moved, waited.Round(time.Second), timeout)
			if pending == 0 || waited >= timeout {
				con.release()
				fmt.Fprintln(w)
			}
		case !said && pending > 0:
			fmt.Fprintf(w, "canary: waiting up to %s for the outcome of %s (a worker must consume the hot queue)\n", timeout, textutil.Count(moved, "message", "messages"))
			said = true
		}
	}
}

func newRedriveRejectCmd(f *redriveFlags) *cobra.Command {
	var reasons, fps []string
	var out *output
	c := &cobra.Command{
		Use:     "reject --pipeline NAME --reason R [--fingerprint F] --owner WHO --why TEXT [-o table|json]",
		Short:   "Record that a group is rejected: never redriven (an audit record; nothing moves)",
		Example: `  agentdlq redrive reject --pipeline agent-tasks --reason signature_invalid --owner platform-oncall --why "forged tasks, reported to security (SEC-77)"`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			who := redrive.Who{Owner: f.owner, Why: f.why}
			rs, err := parseReasons(reasons)
			if err != nil {
				return f.refused(ctx, nil, audit.ActionReject, who, err)
			}
			r, err := f.open(ctx, audit.ActionReject, who, nil)
			if err != nil {
				return err
			}
			res, err := r.Reject(ctx, redrive.RejectRequest{Who: who, Reasons: rs, Fingerprints: fps})
			if err != nil {
				return err
			}
			writeRejectWarnings(cmd.ErrOrStderr(), res.Warnings)
			if out.JSON() {
				return writeJSON(cmd.OutOrStdout(), rejectResult{Pipeline: res.Pipeline, Reasons: rs, Fingerprints: res.Fingerprints,
					Rejected: true, Counts: res.Counts, Warnings: res.Warnings})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "rejection of %s recorded in the audit; the dead letters stay until retention deletes them\n", strings.Join(reasons, ","))
			return nil
		},
	}
	f.gateFlags(c, false, false)
	c.Flags().Lookup("why").Usage = "why these dead letters are rejected, never redriven: the decision and who was told (required)"
	c.Flags().StringArrayVar(&reasons, "reason", nil, "reason rejected (required)")
	c.Long = `reject records, in the audit, that the owner rejects the dead letters of a reason
(and fingerprints): they are never redriven, and stay until retention deletes
them. Nothing moves. It warns (on stderr, and in -o json's "warnings") when
the group was rejected before and when the policy would let the reason be
redriven, now or after a fix or a review; a warning refuses nothing.`
	c.Flags().StringArrayVar(&fps, "fingerprint", nil, "only these groups: a fingerprint from redrive plan or triage, or any unique prefix of at least 8 characters (repeatable)")
	out = addOutput(c, formatTable, formatJSON)
	return c
}
