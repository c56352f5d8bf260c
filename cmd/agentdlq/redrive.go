package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/agentdlq/agentdlq/internal/awscfg"
	"github.com/agentdlq/agentdlq/internal/topology"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive"
	"github.com/agentdlq/agentdlq/triage"
)

// Exit codes of `agentdlq redrive`.
const (
	exitRefused      = 2 // refused by the gate or the policy, or bad input: nothing moved
	exitCanaryFailed = 3 // the canary failed: the rest was not moved
)

// redriveFlags are the flags the redrive subcommands share.
type redriveFlags struct {
	g           *globalFlags
	pipeline    string
	audit       string
	ledgerTable string
	jsonOut     bool

	owner, why  string
	rate        int
	overrides   []string
	fixDeployed string
	reviewed    string
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

Exit codes: 0 done, 1 failed, 2 refused or bad input (nothing moved), 3 canary failed.`,
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&f.pipeline, "pipeline", "", "pipeline name (required)")
	pf.StringVar(&f.audit, "audit", "", "audit store: a JSONL file, or s3://bucket/prefix (default ./out/audit/<pipeline>.jsonl)")
	pf.StringVar(&f.ledgerTable, "ledger-table", "", "the idempotency ledger table (default $AGENTDLQ_LEDGER_TABLE; agentdlq-ledger with local endpoints)")
	pf.BoolVar(&f.jsonOut, "json", false, "print JSON")
	cmd.AddCommand(newRedrivePlanCmd(f), newRedriveStartCmd(f), newRedriveSelectCmd(f),
		newRedriveStatusCmd(f), newRedriveCancelCmd(f), newRedriveRejectCmd(f))
	for _, c := range cmd.Commands() {
		c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return withExit(exitRefused, err) })
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
	ov, err := redrive.ParseOverrides(f.overrides)
	if err != nil {
		return redrive.Ack{}, err
	}
	return redrive.Ack{FixDeployed: strings.TrimSpace(f.fixDeployed), Reviewed: strings.TrimSpace(f.reviewed), Overrides: ov}, nil
}

// env is what a redrive subcommand runs with.
type redriveEnv struct {
	r      *redrive.Redriver
	sqs    *sqs.Client
	logger *slog.Logger
	out    io.Writer
}

func newLogger() *slog.Logger { return slog.New(slog.NewJSONHandler(os.Stderr, nil)) }

// auditor opens the audit store named by --audit.
func (f *redriveFlags) auditor(cfg *aws.Config, name string, logger *slog.Logger) (*redrive.Auditor, error) {
	dest := f.audit
	if dest == "" {
		dest = redrive.DefaultAuditPath(name)
	}
	bucket, prefix, path, err := redrive.ParseAuditDest(dest)
	if err != nil {
		return nil, withExit(exitRefused, err)
	}
	if bucket == "" {
		return &redrive.Auditor{Store: &redrive.FileStore{Path: path}, Logger: logger}, nil
	}
	if cfg == nil {
		return nil, errors.New("an S3 audit store needs AWS configuration")
	}
	return &redrive.Auditor{Store: &redrive.S3Store{API: s3.NewFromConfig(*cfg), Bucket: bucket, Prefix: prefix}, Logger: logger}, nil
}

var auditNameRE = regexp.MustCompile(`^[a-z][a-z0-9-]{1,62}$`)

// refusedEarly audits a refusal that happened before a Redriver existed
// (unknown pipeline, bad flags, queues not found) and returns it with exit 2.
func (f *redriveFlags) refusedEarly(ctx context.Context, cfg *aws.Config, action, actor string, err error) error {
	logger := newLogger()
	name := f.pipeline
	if !auditNameRE.MatchString(name) {
		name = "_unknown" // never a path from unchecked input
	}
	if a, aerr := f.auditor(cfg, name, logger); aerr == nil {
		rec := redrive.Record{Actor: actor, Pipeline: name, Action: action, Why: f.why, Outcome: redrive.OutcomeRefused, Error: err.Error()}
		if aerr := a.Record(ctx, rec); aerr != nil {
			err = errors.Join(err, aerr)
		}
	}
	return withExit(exitRefused, err)
}

// setup loads the pipeline, the AWS clients, the queues, the ledger and the
// audit store. Failures before the gate are refusals (exit 2), audited.
func (f *redriveFlags) setup(ctx context.Context, cmd *cobra.Command, action, actor string) (*redriveEnv, error) {
	if f.pipeline == "" {
		return nil, f.refusedEarly(ctx, nil, action, actor, errors.New("--pipeline is required"))
	}
	p, err := f.g.loadPipeline(f.pipeline)
	if err != nil {
		return nil, f.refusedEarly(ctx, nil, action, actor, err)
	}
	cfg, err := awscfg.Load(ctx)
	if err != nil {
		return nil, fmt.Errorf("aws config: %w", err)
	}
	// The ledger counts every redrive, which is how a key that keeps coming
	// back becomes redrive_loop: no redrive without it.
	table := ledgerTableName(f.ledgerTable)
	if table == "" {
		return nil, f.refusedEarly(ctx, &cfg, action, actor, fmt.Errorf("refused (%s): no ledger table: pass --ledger-table or set AGENTDLQ_LEDGER_TABLE (the stack output LedgerTableName)", redrive.CodeBadInput))
	}
	logger := newLogger()
	client := sqs.NewFromConfig(cfg)
	local := redrive.IsLocalEndpoint(aws.ToString(client.Options().BaseEndpoint))
	q, err := topology.ResolveWith(ctx, client, p, topology.OverrideFromEnv(os.Getenv))
	if err != nil {
		if errors.Is(err, topology.ErrNotFound) {
			return nil, f.refusedEarly(ctx, &cfg, action, actor, fmt.Errorf("refused (%s): pipeline %q: %v", redrive.CodeDLQMissing, p.Name, err))
		}
		return nil, fmt.Errorf("pipeline %q queues: %w", p.Name, err)
	}
	a, err := f.auditor(&cfg, p.Name, logger)
	if err != nil {
		return nil, err
	}
	r := &redrive.Redriver{
		Pipeline: p,
		Queues:   redrive.Queues{HotURL: q.HotURL, HotARN: q.HotARN, DLQURL: q.DLQURL, DLQARN: q.DLQARN, FIFO: q.FIFO},
		SQS:      client, STS: sts.NewFromConfig(cfg), Local: local,
		Ledger: ledger.NewDynamo(dynamodb.NewFromConfig(cfg), table),
		Tag:    redrive.TriageTagger, Audit: a, Logger: logger,
	}
	return &redriveEnv{r: r, sqs: client, logger: logger, out: cmd.OutOrStdout()}, nil
}

// groups scans the DLQ read-only with triage and returns its groups.
func (e *redriveEnv) groups(ctx context.Context) ([]redrive.Group, *triage.Report, error) {
	rep, err := triage.Run(ctx, triage.Config{Pipeline: e.r.Pipeline, DLQURL: e.r.Queues.DLQURL, SQS: e.sqs, Ledger: e.r.Ledger, Logger: e.logger})
	if err != nil {
		if errors.Is(err, triage.ErrQueueNotFound) {
			return nil, nil, &redrive.Refusal{Code: redrive.CodeDLQMissing, Reason: err.Error()}
		}
		return nil, nil, err
	}
	return redrive.GroupsFromReport(rep), rep, nil
}

// exit maps an error to the process exit code.
func redriveExit(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, redrive.ErrRefused):
		return withExit(exitRefused, err)
	case errors.Is(err, redrive.ErrCanaryFailed):
		return withExit(exitCanaryFailed, err)
	}
	return err
}

func actorOr(owner string) string {
	if owner != "" {
		return owner
	}
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "unknown"
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func newRedrivePlanCmd(f *redriveFlags) *cobra.Command {
	var actor string
	c := &cobra.Command{
		Use:   "plan --pipeline NAME",
		Short: "What the DLQ holds by reason and group, what may be redriven and why, and the command for each group",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			env, err := f.setup(ctx, cmd, redrive.ActionPlan, actorOr(actor))
			if err != nil {
				return err
			}
			groups, rep, err := env.groups(ctx)
			if err != nil {
				return redriveExit(err)
			}
			pl, err := env.r.ShowPlan(ctx, actorOr(actor), groups)
			if err != nil {
				return redriveExit(err)
			}
			if f.jsonOut {
				return printJSON(env.out, pl)
			}
			if rep.Partial {
				fmt.Fprintf(env.out, "note: the triage scan was partial (%s): counts may be low\n", strings.Join(rep.PartialReasons, "; "))
			}
			return pl.WriteText(env.out)
		},
	}
	c.Flags().StringVar(&actor, "owner", "", "who looks (recorded in the audit; default $USER)")
	return c
}

func newRedriveStartCmd(f *redriveFlags) *cobra.Command {
	var dest string
	c := &cobra.Command{
		Use:   "start --pipeline NAME --owner WHO --why TEXT [--rate N] [--override REASON=JUSTIFICATION]",
		Short: "Start a native SQS message move task from the DLQ to the pipeline's own hot queue",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			ack, err := f.ack()
			if err != nil {
				return f.refusedEarly(ctx, nil, redrive.ActionStart, f.owner, err)
			}
			env, err := f.setup(ctx, cmd, redrive.ActionStart, f.owner)
			if err != nil {
				return err
			}
			// The pure gate first: a wrong owner or a bad rate costs no scan.
			if err := redrive.Gate(redrive.GateInput{Pipeline: env.r.Pipeline, Owner: f.owner, Why: f.why, Rate: f.rate,
				QueueTags: map[string]string{pipeline.TagOwner: env.r.Pipeline.Owner}, Identity: redrive.Identity{Local: true}}); err != nil {
				_, err = env.r.Start(ctx, redrive.StartRequest{Who: redrive.Who{Owner: f.owner, Why: f.why}, Rate: f.rate, Destination: dest, Ack: ack})
				return redriveExit(err)
			}
			groups, rep, err := env.groups(ctx)
			if err != nil {
				return redriveExit(err)
			}
			partial := ""
			if rep.Scan.Partial {
				partial = rep.Scan.PartialReason
			}
			task, err := env.r.Start(ctx, redrive.StartRequest{Who: redrive.Who{Owner: f.owner, Why: f.why}, Rate: f.rate,
				Destination: dest, Groups: groups, ScanPartial: partial, Ack: ack})
			if err != nil {
				return redriveExit(err)
			}
			if f.jsonOut {
				return printJSON(env.out, task)
			}
			fmt.Fprintf(env.out, "move task started: %s\n  from %s\n  to   %s\n  at most %d messages a second\nwatch it: agentdlq redrive status --pipeline %s\n",
				task.TaskHandle, task.SourceARN, task.DestinationARN, task.Rate, env.r.Pipeline.Name)
			return nil
		},
	}
	f.gateFlags(c, true, true)
	c.Flags().StringVar(&dest, "destination", "", "destination queue ARN; anything but the pipeline's hot queue is refused (default: the hot queue)")
	return c
}

func newRedriveStatusCmd(f *redriveFlags) *cobra.Command {
	var actor string
	c := &cobra.Command{
		Use:   "status --pipeline NAME",
		Short: "The DLQ's move tasks: status, progress (moved/total) and failure reason",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			env, err := f.setup(ctx, cmd, redrive.ActionStatus, actorOr(actor))
			if err != nil {
				return err
			}
			tasks, err := env.r.Status(ctx, actorOr(actor))
			if err != nil {
				return redriveExit(err)
			}
			if f.jsonOut {
				return printJSON(env.out, tasks)
			}
			if len(tasks) == 0 {
				fmt.Fprintln(env.out, "no move task on this DLQ")
			}
			for _, t := range tasks {
				fmt.Fprintf(env.out, "%-10s %s moved  rate %d/s  started %s  %s\n", t.Status, t.Progress(), t.Rate, t.StartedAt.Format(time.RFC3339), t.TaskHandle)
				if t.FailureReason != "" {
					fmt.Fprintf(env.out, "           failure: %s\n", t.FailureReason)
				}
			}
			return nil
		},
	}
	c.Flags().StringVar(&actor, "owner", "", "who looks (recorded in the audit; default $USER)")
	return c
}

func newRedriveCancelCmd(f *redriveFlags) *cobra.Command {
	var handle string
	c := &cobra.Command{
		Use:   "cancel --pipeline NAME --owner WHO --why TEXT [--task-handle H]",
		Short: "Cancel the DLQ's running move task",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			env, err := f.setup(ctx, cmd, redrive.ActionCancel, f.owner)
			if err != nil {
				return err
			}
			moved, err := env.r.Cancel(ctx, redrive.CancelRequest{Who: redrive.Who{Owner: f.owner, Why: f.why}, TaskHandle: handle})
			if err != nil {
				return redriveExit(err)
			}
			fmt.Fprintf(env.out, "move task cancelled after about %d messages moved\n", moved)
			return nil
		},
	}
	f.gateFlags(c, false, false)
	c.Flags().StringVar(&handle, "task-handle", "", "the task to cancel (default: the running one)")
	return c
}

func newRedriveSelectCmd(f *redriveFlags) *cobra.Command {
	var (
		reasons, fps  []string
		canary, limit int
		dryRun        bool
		canaryTimeout time.Duration
		hold          time.Duration
	)
	c := &cobra.Command{
		Use:   "select --pipeline NAME --reason R [--fingerprint F] --owner WHO --why TEXT [--rate N] [--canary N] [--dry-run]",
		Short: "Move only the dead letters of the chosen reasons (and fingerprints) back to the hot queue",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			rs, err := redrive.ParseReasons(reasons)
			if err == nil && len(rs) == 0 {
				err = &redrive.Refusal{Code: redrive.CodeUnknownReason, Reason: "--reason is required: redrive one class of cause at a time"}
			}
			if err != nil {
				return f.refusedEarly(ctx, nil, redrive.ActionSelect, f.owner, err)
			}
			ack, err := f.ack()
			if err != nil {
				return f.refusedEarly(ctx, nil, redrive.ActionSelect, f.owner, err)
			}
			env, err := f.setup(ctx, cmd, redrive.ActionSelect, f.owner)
			if err != nil {
				return err
			}
			var groups []redrive.Group
			if needsGroups(fps) {
				// A fingerprint prefix resolves against the DLQ's groups.
				if groups, _, err = env.groups(ctx); err != nil {
					return redriveExit(err)
				}
			}
			var bar *progressbar.ProgressBar
			if term.IsTerminal(int(os.Stderr.Fd())) && !dryRun {
				bar = progressbar.NewOptions(-1, progressbar.OptionSetWriter(os.Stderr), progressbar.OptionSetDescription("redriving"),
					progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString("msg"))
				env.r.OnMove = func() { _ = bar.Add(1) }
			}
			res, err := env.r.Select(ctx, redrive.SelectRequest{
				Who: redrive.Who{Owner: f.owner, Why: f.why}, Selector: redrive.Selector{Reasons: rs, Fingerprints: fps}, Groups: groups,
				Rate: f.rate, Canary: canary, DryRun: dryRun, Limit: limit, Ack: ack, Hold: hold, CanaryTimeout: canaryTimeout,
			})
			if bar != nil {
				_ = bar.Finish()
				fmt.Fprintln(os.Stderr)
			}
			if res != nil {
				if f.jsonOut {
					if jerr := printJSON(env.out, res); jerr != nil {
						return jerr
					}
				} else if !errors.Is(err, redrive.ErrRefused) {
					writeSelectResult(env.out, env.r.Pipeline.Name, res)
				}
			}
			return redriveExit(err)
		},
	}
	f.gateFlags(c, true, true)
	c.Flags().StringArrayVar(&reasons, "reason", nil, "reason to redrive (repeatable or comma-separated; required)")
	c.Flags().StringArrayVar(&fps, "fingerprint", nil, "only these groups of the reason: a fingerprint from `plan`, or any unique prefix of at least 8 characters (repeatable)")
	c.Flags().IntVar(&canary, "canary", 0, "move N first, wait for their outcome, stop if any failed")
	c.Flags().DurationVar(&canaryTimeout, "canary-timeout", redrive.DefaultCanaryTimeout, "how long to wait for the canary's outcome")
	c.Flags().IntVar(&limit, "limit", 0, "move at most N (0: all that match)")
	c.Flags().BoolVar(&dryRun, "dry-run", false, "move nothing; say what would move")
	c.Flags().DurationVar(&hold, "hold", redrive.DefaultHold, "visibility timeout of the dead letters a pass receives: how long one is hidden while it moves, and, after a crash, how long the letters the pass left stay hidden")
	return c
}

// needsGroups reports whether a fingerprint is shorter than triage's, so a
// prefix to resolve against the DLQ's groups.
func needsGroups(fps []string) bool {
	for _, fp := range fps {
		if len(fp) < triage.FingerprintLen {
			return true
		}
	}
	return false
}

func writeSelectResult(w io.Writer, name string, res *redrive.SelectResult) {
	verb := "moved"
	n := res.Moved
	if res.DryRun {
		verb, n = "would move", res.Matched
	}
	fmt.Fprintf(w, "%s: %s %d of %d dead letters seen (released %d)\n", name, verb, n, res.Seen, res.Released)
	for _, reason := range redrive.SortedReasons(res.ByReason) {
		fmt.Fprintf(w, "  %-26s %d\n", reason, res.ByReason[reason])
	}
	if res.DryRun {
		for _, l := range res.Letters {
			fmt.Fprintf(w, "  would move %s  reason %s  key %s  body sha256 %s\n", l.DLQMessageID, l.Reason, l.IdempotencyKey, l.BodySHA256[:12])
		}
	}
	if c := res.Canary; c != nil {
		fmt.Fprintf(w, "canary: %d moved, %d processed, %d dead-lettered again, %d without outcome\n", c.Moved, c.Processed, c.DeadLettered, c.Pending)
	}
	if res.SendFailed+res.DeleteFailed+res.LedgerFailed > 0 {
		fmt.Fprintf(w, "problems: %d sends failed (left in the DLQ), %d deletes failed (sent; rerun: the idempotency key absorbs the resend), %d redrive counts not recorded\n",
			res.SendFailed, res.DeleteFailed, res.LedgerFailed)
	}
	switch {
	case res.Canary != nil && res.Canary.DeadLettered+res.Canary.Pending > 0:
		fmt.Fprintln(w, "stopped: the canary failed; the rest stays in the DLQ. Fix the cause, deploy, and run the canary again")
	case res.Partial != "":
		fmt.Fprintf(w, "partial: %s; rerunning is safe\n", res.Partial)
	}
}

func newRedriveRejectCmd(f *redriveFlags) *cobra.Command {
	var reasons, fps []string
	c := &cobra.Command{
		Use:   "reject --pipeline NAME --reason R [--fingerprint F] --owner WHO --why TEXT",
		Short: "Record that a group is rejected: never redriven (an audit record; nothing moves)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			rs, err := redrive.ParseReasons(reasons)
			if err != nil {
				return f.refusedEarly(ctx, nil, redrive.ActionReject, f.owner, err)
			}
			env, err := f.setup(ctx, cmd, redrive.ActionReject, f.owner)
			if err != nil {
				return err
			}
			groups, _, err := env.groups(ctx)
			if err != nil {
				return redriveExit(err)
			}
			if err := env.r.Reject(ctx, redrive.Who{Owner: f.owner, Why: f.why}, rs, fps, groups); err != nil {
				return redriveExit(err)
			}
			fmt.Fprintf(env.out, "rejection of %s recorded in the audit; the dead letters stay until retention deletes them\n", strings.Join(reasons, ","))
			return nil
		},
	}
	f.gateFlags(c, false, false)
	c.Flags().StringArrayVar(&reasons, "reason", nil, "reason rejected (required)")
	c.Flags().StringArrayVar(&fps, "fingerprint", nil, "only these groups: a fingerprint from `plan`, or any unique prefix of at least 8 characters (repeatable)")
	return c
}
