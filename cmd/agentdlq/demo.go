package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/spf13/cobra"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/functions/sampleworker"
	"github.com/agentdlq/agentdlq/internal/textutil"
	"github.com/agentdlq/agentdlq/local/esm"
	"github.com/agentdlq/agentdlq/local/runner"
	"github.com/agentdlq/agentdlq/local/topology"
	"github.com/agentdlq/agentdlq/local/workload"
	"github.com/agentdlq/agentdlq/redrive"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/eval"
	"github.com/agentdlq/agentdlq/triage/render"
	"github.com/agentdlq/agentdlq/triage/store"
)

type demoFlags struct {
	pipeline string
	out      string
	stop     bool
}

func newDemoCmd(g *globalFlags) *cobra.Command {
	f := &demoFlags{}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "The whole lifecycle on local emulators: send, drain, triage, export evals, plan a redrive, account for every message",
		Long: `demo tells an incident from start to end on the local emulators (fauxqs,
dynalite, gofakes3 on 127.0.0.1; started as make local-up does, on free ports,
unless they run already):

  an outage       the sample dependency search-api goes down
  the workload    a mix of agent tasks onto the pipeline's own hot queue: valid
                  ones, every poison reason, a transient that recovers, one that
                  exhausts its budget, an effect-unknown timeout, auth failures,
                  tasks calling search-api, a duplicate idempotency key
  the worker      the real worker drains it through the local event source
                  mapping: failures retried, dead letters with their reason
  triage          read-only report, recurring poison exported as eval records
  the plan        every group with its decision and its command
  the fix         search-api back up (agentdlq local dependency up search-api)
  the redrive     its dead letters, a canary of one first, while a worker consumes
  the accounting  every message sent: processed, dead-lettered, in flight, lost

It exits 1 when the numbers do not add up or a message did not end where its
kind says it must. The pipeline is pipelines.json's, with the timings shortened
so that retries happen within seconds (worker timeout 10 s, visibility 60 s,
backoff 1-2 s). The emulators keep running afterwards with what the demo left,
so that RUNBOOK.md can be walked on it; make local-down stops them and forgets
everything (start over: make local-down, then make demo). An earlier run's
audit, eval export, worker log and reports under out/ are moved to
out/previous/<UTC time>/ first (by the demo and by make local-down), so that
this run's plan, console and chart show only this run.`,
		Example: `  make demo                                  # builds the CLI, then runs this
  agentdlq demo --out /tmp/demo              # the eval export, report and worker log there
  agentdlq demo --stop-emulators             # leave nothing running`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if !c.Flags().Changed("out") {
				f.out = g.outRoot()
			}
			return runDemo(c.Context(), g, f, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&f.pipeline, "pipeline", "agent-tasks", "pipeline of pipelines.json to run")
	cmd.Flags().StringVar(&f.out, "out", "", "directory for the eval export, the report and the worker's log ("+outHelp("")+"); the redrive's audit goes to the default audit file of agentdlq redrive whatever --out is")
	cmd.Flags().BoolVar(&f.stop, "stop-emulators", false, "stop the emulators at the end (by default they keep running, with what the demo left, for RUNBOOK.md)")
	return cmd
}

func runDemo(ctx context.Context, g *globalFlags, f *demoFlags, out, stderr io.Writer) error {
	start := time.Now()
	step := func(format string, args ...any) {
		fmt.Fprintf(out, "\n== %s  [%.1fs]\n", fmt.Sprintf(format, args...), time.Since(start).Seconds())
	}
	base, err := g.loadPipeline(f.pipeline)
	if err != nil {
		return withExit(2, err)
	}
	p := workload.Quick(base)

	step("1/9 local emulators (127.0.0.1 only)")
	stopEmulators := func() {}
	if os.Getenv("AWS_ENDPOINT_URL_SQS") == "" {
		if err := startLocalEmulators(ctx, out); err != nil {
			return err
		}
		if f.stop {
			var once sync.Once
			// AGENTDLQ_KEEP_OUT: this run's outputs stay where they are.
			stopEmulators = func() {
				once.Do(func() { _ = runLocalScriptEnv(context.Background(), "down", out, os.Stderr, "AGENTDLQ_KEEP_OUT=1") })
			}
			defer stopEmulators()
		}
	} else {
		fmt.Fprintln(out, "using the running emulators at", os.Getenv("AWS_ENDPOINT_URL_SQS"))
	}
	deps, err := localDependencies()
	if err != nil {
		return err
	}
	// The pipeline's own queues: what the demo leaves there is what
	// RUNBOOK.md walks through afterwards.
	names := topology.LocalNames(p)
	cfg, err := localConfig(ctx)
	if err != nil {
		return err
	}
	// The demo runs on this machine only (its redrive then skips the caller
	// check: redrive decides so from its clients, as New will).
	if local, err := redrive.Locality(clientsOf(cfg, topology.LocalLedgerTable)); err != nil || !local {
		return withExit(2, fmt.Errorf("agentdlq demo runs on the local emulators only, and not every endpoint (SQS %s, DynamoDB, S3) is on this machine: unset AWS_ENDPOINT_URL* to let it start its own", os.Getenv("AWS_ENDPOINT_URL_SQS")))
	}
	// Start over: an earlier run's audit and reports would show in this
	// run's plan, console and chart. They are set aside, not deleted, once
	// nothing can refuse the demo any more.
	if err := startOver(out, start, g.outRoot(), f.out); err != nil {
		return err
	}
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return err
	}
	logPath := filepath.Join(f.out, "worker.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	log := slog.New(slog.NewJSONHandler(logFile, nil))

	step("2/9 topology of pipeline %q from %s", p.Name, g.configPath)
	// The effect store agentdlq work writes and ledger verify reads: the
	// effect_unknown letter the demo leaves reached it, so that RUNBOOK's
	// verify step gives a definite answer on what the demo left.
	effects, err := localEffects()
	if err != nil {
		return err
	}
	lp, err := runner.Setup(ctx, runner.Config{AWS: cfg, Pipeline: p, Names: names, WorkerVersion: "demo",
		Concurrency: sampleworker.LambdaConcurrency, Dependencies: deps, Effects: effects, Logger: log, Metrics: logFile})
	if err != nil {
		return err
	}
	q, sqsc, l := lp.Queues, lp.SQS, lp.Ledger
	if err := topology.CreateBucket(ctx, s3.NewFromConfig(cfg), topology.LocalEvalBucket); err != nil {
		return err
	}
	fmt.Fprintf(out, "hot queue %s (maxReceiveCount %d, visibility %ds)\nDLQ       %s (retention %dh)\nledger    %s, eval bucket %s\n",
		q.HotURL, p.MaxReceiveCount, p.VisibilityTimeoutSeconds, q.DLQURL, p.DLQRetentionHours, topology.LocalLedgerTable, topology.LocalEvalBucket)
	if n, err := emptyQueues(ctx, sqsc, q.HotURL, q.DLQURL); err != nil {
		return err
	} else if n > 0 {
		fmt.Fprintf(out, "emptied %s an earlier run left on the pipeline's local queues\n", textutil.Count(n, "message", "messages"))
	}
	fmt.Fprintf(out, "demo timings (shortened so that retries happen within seconds): worker timeout %ds, visibility %ds, backoff %d-%ds; the rest as in %s\n",
		p.WorkerTimeoutSeconds, p.VisibilityTimeoutSeconds, p.Backoff.BaseSeconds, p.Backoff.MaxSeconds, g.configPath)

	step("3/9 an outage: %s goes down; send a mixed workload", demoDependency)
	if err := deps.Set(demoDependency, true); err != nil {
		return err
	}
	fmt.Fprintf(out, "$ agentdlq local dependency down %s   (tasks calling it fail until it is back)\n", demoDependency)
	prefix := "demo" + time.Now().UTC().Format("150405")
	tasks := workload.Demo(prefix)
	sent, err := lp.Send(ctx, tasks, 4)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "sent %d tasks: %s\n", len(sent), runner.KindCounts(tasks))

	step("4/9 drain with the real worker through the local event source mapping")
	// A running count of the records acknowledged (a terminal only): the
	// drain waits out retried records' backoff and then 20 s of an empty
	// queue, which would otherwise look like a hang.
	var drain *bar
	stats, mc, err := lp.Drain(ctx, runner.DrainOptions{IdleTimeout: 20 * time.Second, Progress: func(deleted int, done bool) {
		if drain == nil && !done {
			drain = g.newBar(stderr, int64(len(sent)), "acknowledged")
		}
		drain.Set(deleted)
		if done {
			drain.Finish()
		}
	}})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%d pollers, batch size %d, window %ds: %d invocations, %d records received, %d deleted, %d left to their visibility timeout or backoff (worker log and metrics: %s)\n",
		mc.Pollers, mc.BatchSize, p.BatchWindowSeconds, stats.Batches, stats.Received, stats.Deleted, stats.Failed, logPath)

	step("5/9 triage the DLQ (read-only) and export the eval dataset")
	evalDir := filepath.Join(f.out, "evals")
	report, err := triage.Run(ctx, triage.Config{
		Pipeline: p, DLQURL: q.DLQURL, SQS: sqsc, Ledger: l, Senders: q.Senders,
		Export: eval.To(store.Folder{Root: evalDir}), Keep: render.KeepIn(store.Folder{Root: f.out}), Logger: log,
	})
	if err != nil && report == nil {
		return err
	}
	// The report as agentdlq triage prints it, its eval export line
	// included ("eval export to DIR: N new records … KEY"): said once.
	if err := render.Text(out, report); err != nil {
		return err
	}

	step("6/9 redrive plan")
	// The plan of the report triage just wrote: no second scan, no audit.
	rd, err := demoRedriver(lp, g.auditPath(lp.Pipeline.Name), log)
	if err != nil {
		return err
	}
	pl, err := rd.Plan(ctx, redrive.PlanRequest{Report: report})
	if err != nil {
		return err
	}
	if err := writePlanText(out, pl); err != nil {
		return err
	}

	step("7/9 the fix: %s is back up", demoDependency)
	if err := deps.Set(demoDependency, false); err != nil {
		return err
	}
	fmt.Fprintf(out, "$ agentdlq local dependency up %s\n", demoDependency)

	step("8/9 redrive the %s dead letters: a canary first, while the worker consumes", deadletter.ReasonDependencyOpen)
	if err := demoRedrive(ctx, out, lp, g.auditPath(lp.Pipeline.Name), log); err != nil {
		return err
	}

	step("9/9 account for every message sent")
	dead, err := lp.DeadLetters(ctx, triage.ScanOptions{})
	if err != nil {
		return err
	}
	var ledgerErr error
	acct, err := lp.Account(ctx, sent, dead, lp.DoneInLedger(ctx, &ledgerErr))
	if err != nil {
		return err
	}
	if ledgerErr != nil {
		return fmt.Errorf("ledger: %w", ledgerErr)
	}
	for _, u := range acct.Unexpected {
		fmt.Fprintln(out, "unexpected:", u)
	}
	stopEmulators()
	fmt.Fprintf(out, "\n%s  [%.1fs]\n", acct.Line(), time.Since(start).Seconds())
	if !acct.AddsUp() || acct.Lost > 0 || len(acct.Unexpected) > 0 || acct.ExtraDeadLetters > 0 {
		return errors.New("demo: the accounting does not hold (see above)")
	}
	if !f.stop {
		fmt.Fprintf(out, `
What is left is real: %s on pipeline %s's DLQ, on emulators that keep running.
Walk RUNBOOK.md on them:
  eval "$(make -s local-env)"                # point this shell at the emulators
  export PATH="$PWD/.local/bin:$PATH"        # the agentdlq make demo built
  agentdlq triage --pipeline %s
  agentdlq redrive plan --pipeline %s
  agentdlq ui                                # or look at it in the console
Start over: make local-down (the emulators keep nothing; out/'s audit and
reports go to out/previous/), then make demo (which sets them aside too).
`, textutil.Count(acct.DeadLettered, "dead letter", "dead letters"), p.Name, p.Name, p.Name)
	}
	return nil
}

// startOver sets an earlier run's outputs aside (setAside) in each of the
// roots (the output root, where the audit is, and --out), and says where
// they went in one line a root.
func startOver(out io.Writer, now time.Time, roots ...string) error {
	seen := map[string]bool{}
	for _, root := range roots {
		if abs, err := filepath.Abs(root); err == nil {
			if seen[abs] {
				continue
			}
			seen[abs] = true
		}
		dest, moved, err := setAside(root, now)
		if err != nil {
			return err
		}
		if len(moved) > 0 {
			fmt.Fprintf(out, "start over: an earlier run's %s moved from %s to %s\n", strings.Join(moved, ", "), root, dest)
		}
	}
	return nil
}

// emptyQueues purges the local queues of an earlier run, so that the
// accounting counts only this run's messages, and says how many there were.
func emptyQueues(ctx context.Context, api *sqs.Client, urls ...string) (int, error) {
	total := 0
	for _, u := range urls {
		n, err := esm.Depth(ctx, api, u)
		if err != nil {
			return 0, err
		}
		if n == 0 {
			continue
		}
		if _, err := api.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: &u}); err != nil {
			return 0, fmt.Errorf("emptying %s: %w (start over: make local-down, then make demo)", u, err)
		}
		total += n
	}
	return total, nil
}

// startLocalEmulators starts the checkout's local emulators (scripts/local.sh
// up, the state directory of make local-up), on free ports unless
// AGENTDLQ_*_PORT says otherwise, or finds them running, and points this
// process at them. They keep running after the demo.
func startLocalEmulators(ctx context.Context, out io.Writer) error {
	root, err := projectRoot()
	if err != nil {
		return withExit(2, err)
	}
	script := filepath.Join(root, "scripts", "local.sh")
	run := func(sub string) ([]byte, error) {
		c := exec.CommandContext(ctx, script, sub)
		c.Env = os.Environ()
		for _, k := range []string{"AGENTDLQ_SQS_PORT", "AGENTDLQ_DYNAMODB_PORT", "AGENTDLQ_S3_PORT"} {
			if os.Getenv(k) == "" {
				c.Env = append(c.Env, k+"=0")
			}
		}
		c.Stderr = out
		return c.Output()
	}
	if _, err := run("up"); err != nil {
		return fmt.Errorf("starting the emulators (%s up): %w", script, err)
	}
	env, err := run("env")
	if err != nil {
		return err
	}
	for k, v := range runner.ParseExports(string(env)) {
		if err := os.Setenv(k, v); err != nil {
			return err
		}
	}
	return nil
}

// demoDependency is the sample dependency whose outage the demo shows.
const demoDependency = "search-api"

// demoRedriver is the demo pipeline's Redriver (local: redrive.New sees
// every client on this machine).
func demoRedriver(lp *runner.Local, auditPath string, log *slog.Logger) (*redrive.Redriver, error) {
	return redrive.New(redrive.Config{
		Pipeline: lp.Pipeline, Queues: lp.Queues, SQS: lp.SQS, Ledger: lp.Ledger, Logger: log, FieldNames: flagName,
		Audit: &audit.Auditor{Store: &audit.FileStore{Path: auditPath}, Logger: log},
	})
}

// demoRedrive moves the dependency_open dead letters back, one canary first,
// with the worker consuming the hot queue meanwhile, and says what became of
// them.
func demoRedrive(ctx context.Context, out io.Writer, lp *runner.Local, auditPath string, log *slog.Logger) error {
	p, q := lp.Pipeline, lp.Queues
	r, err := demoRedriver(lp, auditPath, log)
	if err != nil {
		return err
	}
	m, _, err := lp.Mapping(runner.DrainOptions{}, false)
	if err != nil {
		return err
	}
	type result struct {
		stats esm.Stats
		err   error
	}
	done := make(chan result, 1)
	workCtx, stopWorker := context.WithCancel(ctx)
	defer stopWorker()
	go func() {
		st, err := m.Run(workCtx)
		done <- result{st, err}
	}()
	why := demoDependency + " is back up"
	fmt.Fprintf(out, "$ agentdlq redrive select --pipeline %s --reason %s --owner %s --why '%s' --canary 1\n", p.Name, deadletter.ReasonDependencyOpen, p.Owner, why)
	res, err := r.Select(ctx, redrive.SelectRequest{
		Who:     redrive.Who{Owner: p.Owner, Why: why},
		Reasons: []deadletter.Reason{deadletter.ReasonDependencyOpen},
		Rate:    50, Canary: 1, CanaryTimeout: 2 * time.Minute,
	})
	if err == nil {
		// The worker stops once the hot queue is empty: every redriven
		// letter processed (or, had it failed, back in the DLQ).
		err = lp.WaitEmpty(ctx, q.HotURL, 2*time.Minute)
	}
	// Stopped as an idle stop does, each poller finishing its receive (1 s):
	// a poll abandoned would take the next message sent on the emulator (a
	// receive of its budget spent, seen by no one; see agentdlq work).
	m.Stop()
	worker := <-done
	if err != nil {
		return fmt.Errorf("demo redrive: %w", err)
	}
	if worker.err != nil {
		return worker.err
	}
	if res.Canary != nil {
		fmt.Fprintf(out, "canary: %d moved, %d processed, %d dead-lettered again: it passed, the rest followed\n", res.Canary.Moved, res.Canary.Processed, res.Canary.DeadLettered)
	}
	fmt.Fprintf(out, "redriven %s of %s; the worker then processed %s (audit: %s)\n",
		textutil.Count(res.Moved, "dead letter", "dead letters"), deadletter.ReasonDependencyOpen, textutil.Count(int(worker.stats.Deleted), "record", "records"), auditPath)
	return nil
}
