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

	"github.com/aws/aws-sdk-go-v2/aws"
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
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/eval"
	"github.com/agentdlq/agentdlq/triage/processed"
	"github.com/agentdlq/agentdlq/triage/render"
	"github.com/agentdlq/agentdlq/triage/report"
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

// demoRun is what the demo's steps share: the flags, the writers, the
// pipeline and what each step leaves for the next.
type demoRun struct {
	ctx         context.Context
	g           *globalFlags
	f           *demoFlags
	out, stderr io.Writer
	start       time.Time
	p           *pipeline.Pipeline
	// stopEmulators stops the emulators the demo started, with
	// --stop-emulators (once; it does nothing otherwise).
	stopEmulators func()
	deps          sampleworker.DependencyDir
	cfg           aws.Config
	logPath       string
	logFile       *os.File
	log           *slog.Logger
	lp            *runner.Local
	sent          []workload.Sent
	report        *report.Report
}

// demoSteps are the demo's steps, in order: what each is called (the
// heading it prints, numbered) and what it does. A step's error ends the
// demo.
var demoSteps = []struct {
	title func(d *demoRun) string
	run   func(d *demoRun) error
}{
	{func(*demoRun) string { return "local emulators (127.0.0.1 only)" }, (*demoRun).emulators},
	{func(d *demoRun) string {
		return fmt.Sprintf("topology of pipeline %q from %s", d.p.Name, d.g.configPath)
	}, (*demoRun).topology},
	{func(*demoRun) string {
		return fmt.Sprintf("an outage: %s goes down; send a mixed workload", demoDependency)
	}, (*demoRun).outage},
	{func(*demoRun) string { return "drain with the real worker through the local event source mapping" }, (*demoRun).drain},
	{func(*demoRun) string { return "triage the DLQ (read-only) and export the eval dataset" }, (*demoRun).triage},
	{func(*demoRun) string { return "redrive plan" }, (*demoRun).plan},
	{func(*demoRun) string { return fmt.Sprintf("the fix: %s is back up", demoDependency) }, (*demoRun).fix},
	{func(*demoRun) string {
		return fmt.Sprintf("redrive the %s dead letters: a canary first, while the worker consumes", deadletter.ReasonDependencyOpen)
	}, (*demoRun).redrive},
	{func(*demoRun) string { return "account for every message sent" }, (*demoRun).account},
}

func runDemo(ctx context.Context, g *globalFlags, f *demoFlags, out, stderr io.Writer) error {
	d := &demoRun{ctx: ctx, g: g, f: f, out: out, stderr: stderr, start: time.Now(), stopEmulators: func() {}}
	base, err := g.loadPipeline(f.pipeline)
	if err != nil {
		return withExit(2, err)
	}
	d.p = workload.Quick(base)
	defer func() { d.stopEmulators() }()
	defer func() {
		if d.logFile != nil {
			// The worker's log: slog writes each line whole, so a close
			// error could lose nothing written.
			_ = d.logFile.Close()
		}
	}()
	for i, s := range demoSteps {
		fmt.Fprintf(out, "\n== %d/%d %s  [%.1fs]\n", i+1, len(demoSteps), s.title(d), time.Since(d.start).Seconds())
		if err := s.run(d); err != nil {
			return err
		}
	}
	return nil
}

// emulators starts the local emulators (unless the environment names
// running ones), checks that every endpoint is on this machine, sets an
// earlier run's outputs aside and opens the worker's log.
func (d *demoRun) emulators() error {
	ctx, out, f := d.ctx, d.out, d.f
	if os.Getenv("AWS_ENDPOINT_URL_SQS") == "" {
		if err := startLocalEmulators(ctx, out); err != nil {
			return err
		}
		if f.stop {
			var once sync.Once
			// AGENTDLQ_KEEP_OUT: this run's outputs stay where they are.
			d.stopEmulators = func() {
				once.Do(func() { _ = runLocalScriptEnv(context.Background(), "down", out, os.Stderr, "AGENTDLQ_KEEP_OUT=1") })
			}
		}
	} else {
		fmt.Fprintln(out, "using the running emulators at", os.Getenv("AWS_ENDPOINT_URL_SQS"))
	}
	var err error
	if d.deps, err = localDependencies(); err != nil {
		return err
	}
	if d.cfg, err = localConfig(ctx); err != nil {
		return err
	}
	// The demo runs on this machine only (its redrive then skips the caller
	// check: redrive decides so from its clients, as New will).
	if local, err := redrive.Locality(clientsOf(d.cfg, topology.LocalLedgerTable)); err != nil || !local {
		return withExit(2, fmt.Errorf("agentdlq demo runs on the local emulators only, and not every endpoint (SQS %s, DynamoDB, S3) is on this machine: unset AWS_ENDPOINT_URL* to let it start its own", os.Getenv("AWS_ENDPOINT_URL_SQS")))
	}
	// Start over: an earlier run's audit and reports would show in this
	// run's plan, console and chart. They are set aside, not deleted, once
	// nothing can refuse the demo any more.
	if err := startOver(out, d.start, d.g.outRoot(), f.out); err != nil {
		return err
	}
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return err
	}
	d.logPath = filepath.Join(f.out, "worker.log")
	if d.logFile, err = os.Create(d.logPath); err != nil {
		return err
	}
	d.log = slog.New(slog.NewJSONHandler(d.logFile, nil))
	return nil
}

// topology creates the pipeline's own queues, ledger and eval bucket (what
// the demo leaves there is what RUNBOOK.md walks through afterwards), and
// empties what an earlier run left on the queues.
func (d *demoRun) topology() error {
	ctx, out, p := d.ctx, d.out, d.p
	// The effect store agentdlq work writes and ledger verify reads: the
	// effect_unknown letter the demo leaves reached it, so that RUNBOOK's
	// verify step gives a definite answer on what the demo left.
	effects, err := localEffects()
	if err != nil {
		return err
	}
	lp, err := runner.Setup(ctx, runner.Config{AWS: d.cfg, Pipeline: p, Names: topology.LocalNames(p), WorkerVersion: "demo",
		Concurrency: sampleworker.LambdaConcurrency, Dependencies: d.deps, Effects: effects, Logger: d.log, Metrics: d.logFile})
	if err != nil {
		return err
	}
	d.lp = lp
	q, sqsc := lp.Queues, lp.SQS
	if err := topology.CreateBucket(ctx, s3.NewFromConfig(d.cfg), topology.LocalEvalBucket); err != nil {
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
		p.WorkerTimeoutSeconds, p.VisibilityTimeoutSeconds, p.Backoff.BaseSeconds, p.Backoff.MaxSeconds, d.g.configPath)
	return nil
}

// outage takes the demo's dependency down and sends the demo's workload.
func (d *demoRun) outage() error {
	if err := d.deps.Set(demoDependency, true); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "$ agentdlq local dependency down %s   (tasks calling it fail until it is back)\n", demoDependency)
	prefix := "demo" + time.Now().UTC().Format("150405")
	tasks := workload.Demo(prefix)
	sent, err := d.lp.Send(d.ctx, tasks, 4)
	if err != nil {
		return err
	}
	d.sent = sent
	fmt.Fprintf(d.out, "sent %d tasks: %s\n", len(sent), runner.KindCounts(tasks))
	return nil
}

// drain runs the real worker through the local event source mapping until
// the hot queue is idle.
func (d *demoRun) drain() error {
	// A running count of the records acknowledged (a terminal only): the
	// drain waits out retried records' backoff and then 20 s of an empty
	// queue, which would otherwise look like a hang.
	var drain *bar
	stats, mc, err := d.lp.Drain(d.ctx, runner.DrainOptions{IdleTimeout: 20 * time.Second, Progress: func(deleted int, done bool) {
		if drain == nil && !done {
			drain = d.g.newBar(d.stderr, int64(len(d.sent)), "acknowledged")
		}
		drain.Set(deleted)
		if done {
			drain.Finish()
		}
	}})
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "%d pollers, batch size %d, window %ds: %d invocations, %d records received, %d deleted, %d left to their visibility timeout or backoff (worker log and metrics: %s)\n",
		mc.Pollers, mc.BatchSize, d.p.BatchWindowSeconds, stats.Batches, stats.Received, stats.Deleted, stats.Failed, d.logPath)
	return nil
}

// triage triages the DLQ (read-only), exports the eval dataset and prints
// the report as agentdlq triage does.
func (d *demoRun) triage() error {
	lp := d.lp
	evalDir := filepath.Join(d.f.out, "evals")
	report, err := triage.Run(d.ctx, triage.Config{
		Pipeline: d.p, DLQURL: lp.Queues.DLQURL, SQS: lp.SQS, Ledger: lp.Ledger, Senders: lp.Queues.Senders,
		Export: eval.To(store.Folder{Root: evalDir}), Keep: render.KeepIn(store.Folder{Root: d.f.out}), Logger: d.log,
		// The worker's EMF lines in worker.log: the report states the SLO
		// period's budget spent, as the triage Lambda does from CloudWatch.
		ProcessedFrom: processed.EMFFile{Path: d.logPath, Logger: d.log},
	})
	if err != nil && report == nil {
		return err
	}
	d.report = report
	// The report as agentdlq triage prints it, its eval export line
	// included ("eval export to DIR: N new records … KEY"): said once.
	return render.Text(d.out, report)
}

// plan prints the redrive plan of the report triage just wrote: no second
// scan, no audit.
func (d *demoRun) plan() error {
	rd, err := demoRedriver(d.lp, d.g.auditPath(d.lp.Pipeline.Name), d.log)
	if err != nil {
		return err
	}
	pl, err := rd.Plan(d.ctx, redrive.PlanRequest{Report: d.report})
	if err != nil {
		return err
	}
	return writePlanText(d.out, pl)
}

// fix brings the demo's dependency back up.
func (d *demoRun) fix() error {
	if err := d.deps.Set(demoDependency, false); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "$ agentdlq local dependency up %s\n", demoDependency)
	return nil
}

// redrive redrives the dependency_open dead letters, a canary first, while
// the worker consumes.
func (d *demoRun) redrive() error {
	return demoRedrive(d.ctx, d.out, d.lp, d.g.auditPath(d.lp.Pipeline.Name), d.log)
}

// account accounts for every message sent, and fails the demo when the
// numbers do not add up; without --stop-emulators it says how to walk
// RUNBOOK.md on what is left.
func (d *demoRun) account() error {
	ctx, out, lp, p := d.ctx, d.out, d.lp, d.p
	dead, err := lp.DeadLetters(ctx, triage.ScanOptions{})
	if err != nil {
		return err
	}
	var ledgerErr error
	acct, err := lp.Account(ctx, d.sent, dead, lp.DoneInLedger(ctx, &ledgerErr))
	if err != nil {
		return err
	}
	if ledgerErr != nil {
		return fmt.Errorf("ledger: %w", ledgerErr)
	}
	for _, u := range acct.Unexpected {
		fmt.Fprintln(out, "unexpected:", u)
	}
	d.stopEmulators()
	fmt.Fprintf(out, "\n%s  [%.1fs]\n", acct.Line(), time.Since(d.start).Seconds())
	if !acct.AddsUp() || acct.Lost > 0 || len(acct.Unexpected) > 0 || acct.ExtraDeadLetters > 0 {
		return errors.New("demo: the accounting does not hold (see above)")
	}
	if !d.f.stop {
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
	return runner.SetExports(string(env))
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
