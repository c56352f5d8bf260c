package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentdlq/agentdlq/bench/chaos"
	"github.com/agentdlq/agentdlq/bench/loadbench"
	"github.com/agentdlq/agentdlq/local/runner"
	"github.com/agentdlq/agentdlq/local/workload"
	"github.com/agentdlq/agentdlq/pipeline"
)

type loadFlags struct {
	pipeline string
	tasks    int
	seed     uint64
	pollers  int
	senders  int
	rawN     int
	out      *output
	file     string
	// chaos is a chaos.Scenarios name; chaosPath the client it sits in
	// front of (sqs or dynamodb).
	chaos     string
	chaosPath string
	// mix is a loadbench.MixNames name, or "cost" (the three cost mixes
	// in turn).
	mix string
	// emulatorLogs is where a failed start of the private emulators keeps
	// their logs (runner.StartConfig.Logs).
	emulatorLogs string
	// outage runs the simulated outage instead (loadbench.RunOutage):
	// its length, the steady rate, and the breaker on, off or both.
	outage        time.Duration
	outageRate    int
	outageBefore  time.Duration
	outageAfter   time.Duration
	outageBreaker string
}

func newLoadBenchCmd(g *globalFlags) *cobra.Command {
	f := &loadFlags{}
	cmd := &cobra.Command{
		Use:   "bench --tasks N [-o table|json]",
		Short: "No-loss load bench: N tasks of the demo's mix through the local pipeline with concurrent pollers",
		Long: `bench sends N agent tasks (default 20,000) in the demo's mix (valid tasks,
duplicate keys, every immediate poison reason, transients that recover, budget
exhaustion, effect unknown, auth failures) to a fresh hot queue of the pipeline,
drains it with the real worker through the local event source mapping with
concurrent pollers, and accounts for every message: processed, dead-lettered
by reason, in flight, lost (must be 0). It also reports the duplicate side
effects recorded in the ledger (must be 0), the handler invocations per poison
message (must be 1) and per transient message, the pipeline's messages per
second, and the emulator's own raw receive-and-delete rate measured in the
same run on the same bodies, as a ratio. Exit status 1 when a must fails.

--chaos SCENARIO puts an in-process toxiproxy between the worker and one
emulator (--chaos-path sqs or dynamodb): latency (20 ms ± 20 ms), reset (5% of
requests reset at their response), timeout (3% stall and close after 2 s),
truncate (5% of responses break off in their body), slicer (responses in
~64-byte pieces), none (the proxy alone). The worker's client opens a
connection per request through the proxy, so a share of connections is a
share of requests. The sender and the accounting talk to the emulators
directly; processed means done in the ledger table, read directly. Under chaos the musts are 0 lost and 0 duplicate side effects;
extra receives, extra dead letters and poison invoked more than once are
what the fault costs, reported, not failures.

--mix picks the generated workload: demo (the default, every kind), mostly-ok
(97% valid), failures-40 (40% failing), outage (half the tasks call a
dependency that is down), or cost: the last three in turn, without the raw
emulator rates, and a summary. Every run counts the AWS calls the drain makes
at its SDK clients (the event source mapping's receives and deletes; the
worker's ledger reads and writes with the capacity DynamoDB reports, dead-letter
sends, visibility changes, S3) and the bytes of the worker's log lines, prints
them per 1,000 tasks, and prices them per million tasks (us-east-1, arm64, the
pipeline's worker memory; docs/performance.md) beside the same work done with
Powertools' BatchProcessor and Idempotency.

--outage DURATION runs a simulated outage instead: tasks at a steady --rate a
second for --before, the outage and --after, every other one needing
search-api, which is down for DURATION. --breaker on runs it with the
pipeline's circuit breaker on, off without it, both (the default) one after the
other. The breaker's settings: for an outage of 5 minutes or more, the
pipeline's defaults (threshold 5 in 60 s, open 30 s, 3 probes, ramp 60 s);
for a shorter one, scaled to it (threshold 5 in 20 s, open 10 s, 3 probes,
ramp 15 s), as docs/performance.md lists them; tolerance the outage and a
minute either way, and retry_after_requeues as many as that needs. With the breaker on the musts are: no task dead-lettered because of the
outage, the healthy half at least 90 % of its throughput, at most 2 receives
spent per affected task, the backlog drained, 0 lost, 0 duplicate effects.

--workload FILE sends a workload made elsewhere instead (JSON Lines of bodies,
a JSON array of bodies, or a Lambda SQS event): every message is accounted for
the same way, the idempotency key read from each body, and the invocation
checks judge each message by where it ended.

It starts private emulators unless AWS_ENDPOINT_URL_SQS is set, and tries a
failed start once more: an emulator that exits during start has its log kept
(--emulator-logs PREFIX: PREFIX.<attempt>.<service>.log; default
.local/bench/emulators-<UTC time>) and its last 20 lines printed on stderr,
with -o json too. It is a bench
command, not a timed test: the rates are measurements, not assertions. What it
is doing goes to stderr; the result to stdout, as text (-o table, the default)
or one JSON line (-o json, or --json).`,
		Example: `  agentdlq local bench --tasks 2000
  agentdlq local bench --tasks 20000 -o json > bench.json    # make bench-load
  agentdlq local bench --tasks 2000 --mix mostly-ok
  agentdlq local bench --tasks 5000 --mix cost              # make bench-cost
  agentdlq local bench --tasks 2000 --chaos reset --chaos-path sqs
  agentdlq local bench --workload tasks.jsonl
  agentdlq local bench --outage 90s --rate 20 --breaker both   # issue 32's outage, scaled
  agentdlq local bench --outage 10m --rate 10 --breaker both   # issue 32's outage, the breaker's defaults`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runLoadBench(c.Context(), g, f, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&f.pipeline, "pipeline", "agent-tasks", "pipeline of pipelines.json (standard queues)")
	cmd.Flags().IntVar(&f.tasks, "tasks", 20000, "tasks to send")
	cmd.Flags().Uint64Var(&f.seed, "seed", 1, "workload shuffle seed")
	cmd.Flags().IntVar(&f.pollers, "pollers", 0, "concurrent pollers (default: the pipeline's max_concurrency)")
	cmd.Flags().IntVar(&f.senders, "senders", 8, "concurrent senders")
	cmd.Flags().IntVar(&f.rawN, "raw-messages", 0, "messages for the raw emulator rate (default: min(tasks, 5000))")
	f.out = addOutput(cmd, formatTable, formatJSON)
	cmd.Flags().StringVar(&f.chaos, "chaos", "", "put a fault-injecting proxy (toxiproxy) in front of --chaos-path: "+strings.Join(chaos.ScenarioNames(), ", "))
	cmd.Flags().StringVar(&f.chaosPath, "chaos-path", "sqs", "the path the --chaos proxy sits on: sqs (the pollers' receives and deletes, the worker's DLQ sends) or dynamodb (the ledger)")
	cmd.Flags().StringVar(&f.mix, "mix", "demo", "generated workload: "+strings.Join(loadbench.MixNames(), ", ")+", or cost (the three cost mixes in turn)")
	cmd.Flags().StringVar(&f.emulatorLogs, "emulator-logs", "", "where a failed start of the private emulators keeps their logs: PREFIX.<attempt>.<service>.log (default .local/bench/emulators-<UTC time>)")
	cmd.Flags().StringVar(&f.file, "workload", "", "send the bodies of this file instead of the generated mix: JSON Lines (one body a line), a JSON array, or a Lambda SQS event")
	cmd.Flags().DurationVar(&f.outage, "outage", 0, "run a simulated outage of search-api this long at a steady rate instead (see --rate, --breaker)")
	cmd.Flags().IntVar(&f.outageRate, "rate", 20, "with --outage: tasks sent a second, half of them needing search-api")
	cmd.Flags().DurationVar(&f.outageBefore, "before", 30*time.Second, "with --outage: steady sending before the outage")
	cmd.Flags().DurationVar(&f.outageAfter, "after", 30*time.Second, "with --outage: steady sending after the outage")
	cmd.Flags().StringVar(&f.outageBreaker, "breaker", "both", "with --outage: the breaker on, off, or both (one run each)")
	return cmd
}

// workload returns the mixes to run (--mix; cost is the three cost mixes
// in turn), or the tasks of --workload.
func (f *loadFlags) workload() (mixes []string, external []workload.Task, err error) {
	if f.tasks < 1 && f.file == "" {
		return nil, nil, errors.New("--tasks must be at least 1")
	}
	mixes = []string{f.mix}
	if f.mix == "cost" {
		mixes = loadbench.CostMixes
	} else if !slices.Contains(loadbench.MixNames(), f.mix) {
		return nil, nil, fmt.Errorf("--mix %q: one of %s, or cost", f.mix, strings.Join(loadbench.MixNames(), ", "))
	}
	if f.file != "" && f.mix != "demo" {
		return nil, nil, errors.New("--mix and --workload: one or the other")
	}
	if f.file != "" {
		if external, err = workload.ReadFile(f.file); err != nil {
			return nil, nil, err
		}
	}
	return mixes, external, nil
}

// runLoadBench reads the flags, starts private emulators unless
// AWS_ENDPOINT_URL_SQS is set, runs loadbench.Run and prints its Result.
func runLoadBench(ctx context.Context, g *globalFlags, f *loadFlags, out, stderr io.Writer) error {
	mixes, external, err := f.workload()
	if err != nil {
		return withExit(2, err)
	}
	base, err := g.loadPipeline(f.pipeline)
	if err != nil {
		return withExit(2, err)
	}
	if base.FIFO {
		return withExit(2, fmt.Errorf("pipeline %q is FIFO: the load bench runs standard pipelines", base.Name))
	}
	if f.outage > 0 {
		return runOutageBench(ctx, g, f, base, out, stderr)
	}
	var toxic *chaos.Toxic
	if f.chaos != "" {
		t, ok := chaos.Scenarios[f.chaos]
		if !ok {
			return withExit(2, fmt.Errorf("--chaos %q: one of %s", f.chaos, strings.Join(chaos.ScenarioNames(), ", ")))
		}
		if f.chaosPath != "sqs" && f.chaosPath != "dynamodb" {
			return withExit(2, fmt.Errorf("--chaos-path %q: sqs or dynamodb", f.chaosPath))
		}
		toxic = &t
	}
	var progress io.Writer = g.console(stderr) // phase lines go above the drain's bar
	if f.out.JSON() {
		progress = io.Discard
	}
	if os.Getenv("AWS_ENDPOINT_URL_SQS") == "" {
		em, err := runner.StartEmulatorsWith(ctx, runner.StartConfig{Progress: progress, Stderr: g.console(stderr), Logs: f.emulatorLogs})
		if err != nil {
			return err
		}
		defer em.Stop()
	}
	cfg, err := localConfig(ctx)
	if err != nil {
		return err
	}
	var (
		failed  []string
		results []*loadbench.Result
	)
	for i, mix := range mixes {
		// A bar over the drain, the long quiet part (a terminal only, not
		// with -o json): records acknowledged of those sent.
		var (
			drain   *bar
			started bool
		)
		drained := func(deleted, sent int, done bool) {
			if !started && !f.out.JSON() {
				started, drain = true, g.newBar(stderr, int64(sent), "draining "+mix)
			}
			drain.Set(deleted)
			if done {
				drain.Finish()
			}
		}
		run := ""
		if len(mixes) > 1 {
			run = fmt.Sprintf("cost%d-%s", i, time.Now().UTC().Format("150405"))
		}
		res, err := loadbench.Run(ctx, loadbench.Config{AWS: cfg, Pipeline: workload.Quick(base), Tasks: f.tasks, Seed: f.seed, Mix: mix, Run: run,
			NoRawRates: f.mix == "cost",
			Workload:   external, WorkloadName: f.file, Pollers: f.pollers, Senders: f.senders, RawMessages: f.rawN, Progress: progress, Drained: drained,
			Chaos: toxic, ChaosName: f.chaos, ChaosPath: f.chaosPath, ChaosUpstream: os.Getenv(map[string]string{"sqs": "AWS_ENDPOINT_URL_SQS", "dynamodb": "AWS_ENDPOINT_URL_DYNAMODB"}[f.chaosPath])})
		drain.Finish() // a run that failed mid-drain
		if err != nil {
			return err
		}
		results = append(results, res)
		if f.out.JSON() {
			if err := writeJSONLine(out, res); err != nil {
				return err
			}
		} else {
			res.Print(out)
		}
		for _, fl := range res.Failures {
			failed = append(failed, mix+": "+fl)
		}
	}
	if len(results) > 1 && !f.out.JSON() {
		loadbench.PrintCostSummary(out, results)
	}
	if len(failed) > 0 {
		return fmt.Errorf("load bench: %s", strings.Join(failed, "; "))
	}
	return nil
}

// runOutageBench runs loadbench.RunOutage with the breaker on, off or both.
func runOutageBench(ctx context.Context, g *globalFlags, f *loadFlags, base *pipeline.Pipeline, out, stderr io.Writer) error {
	var modes []bool
	switch f.outageBreaker {
	case "on":
		modes = []bool{true}
	case "off":
		modes = []bool{false}
	case "both":
		modes = []bool{true, false}
	default:
		return withExit(2, fmt.Errorf("--breaker %q: on, off or both", f.outageBreaker))
	}
	if f.outageRate < 1 || f.outageRate > 500 {
		return withExit(2, fmt.Errorf("--rate %d is outside 1..500", f.outageRate))
	}
	var progress io.Writer = g.console(stderr)
	if f.out.JSON() {
		progress = io.Discard
	}
	if os.Getenv("AWS_ENDPOINT_URL_SQS") == "" {
		em, err := runner.StartEmulatorsWith(ctx, runner.StartConfig{Progress: progress, Stderr: g.console(stderr), Logs: f.emulatorLogs})
		if err != nil {
			return err
		}
		defer em.Stop()
	}
	cfg, err := localConfig(ctx)
	if err != nil {
		return err
	}
	var failed []string
	for _, on := range modes {
		p := workload.Quick(base)
		p.Breaker = pipeline.Breaker{}
		if on {
			p = loadbench.OutageBreaker(p, f.outage)
		}
		p.ApplyDefaults()
		if err := p.Validate(); err != nil {
			return withExit(2, err)
		}
		res, err := loadbench.RunOutage(ctx, loadbench.OutageConfig{AWS: cfg, Pipeline: p, Rate: f.outageRate,
			Before: f.outageBefore, Outage: f.outage, After: f.outageAfter, Pollers: f.pollers, Progress: progress})
		if err != nil {
			return err
		}
		if f.out.JSON() {
			if err := writeJSONLine(out, res); err != nil {
				return err
			}
		} else {
			res.Print(out)
		}
		for _, fl := range res.Failures {
			failed = append(failed, fmt.Sprintf("breaker %v: %s", on, fl))
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("outage bench: %s", strings.Join(failed, "; "))
	}
	return nil
}
