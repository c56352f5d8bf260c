package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/spf13/cobra"

	"github.com/agentdlq/agentdlq/breaker/dynamostore"
	"github.com/agentdlq/agentdlq/functions/sampleworker"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/local/esm"
	"github.com/agentdlq/agentdlq/local/topology"
	"github.com/agentdlq/agentdlq/pipeline"
)

type workFlags struct {
	pipeline    string
	untilIdle   bool
	idleTimeout time.Duration
	pollers     int
	wait        time.Duration
	table       string
	logLevel    string
	out         *output
}

func newWorkCmd(g *globalFlags) *cobra.Command {
	f := &workFlags{}
	cmd := &cobra.Command{
		Use:   "work --pipeline NAME [--until-idle] [-o json|table]",
		Short: "Run the real worker handler on a pipeline's hot queue through the local event source mapping",
		Long: `work polls the pipeline's hot queue as Lambda's SQS event source does (batch size,
batch window and maximum concurrency from pipelines.json; long polling; every
attribute), invokes the real worker handler with a Lambda-shaped SQS event,
deletes the successes and leaves batch item failures to their visibility
timeout. The queues are AGENTDLQ_HOT_QUEUE_URL / AGENTDLQ_DLQ_URL when set,
else the pipeline's local queue names on local endpoints, else the queues
tagged with the pipeline's name; the ledger table is --ledger-table,
AGENTDLQ_LEDGER_TABLE, or agentdlq-ledger when the endpoints are local.

Logs (text on a terminal, JSON otherwise or with --log-format json) and
metrics (embedded metric format) go to stderr; the final counts to stdout,
as JSON (the default) or a table (-o table): records received, processed,
duplicates skipped, dead-lettered (by reason), retried (left to their
visibility timeout, to be received again; dead-lettered on their last
receive if the failure lasts), dead-letter sends that failed (retried, not
lost), deleted, and the errors of whole batches, deletes and receives. See docs/local.md for where this
differs from Lambda.

Ctrl-C or SIGTERM (kill %1) stops it after each poller's current receive
(up to --wait) and what that receive brought, then it prints its counts; a
second one stops it at once. A receive abandoned would cost the next
message sent one receive of its budget, seen by no worker.`,
		Example: `  agentdlq work --pipeline agent-tasks --until-idle
  agentdlq work --pipeline agent-tasks &                 # a worker for a canary to wait on
  agentdlq work --pipeline agent-tasks --until-idle --log-format json 2> worker.log`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runWork(c.Context(), g, f, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&f.pipeline, "pipeline", "", "pipeline name (required)")
	cmd.Flags().BoolVar(&f.untilIdle, "until-idle", false, "stop once the hot queue is drained (or nothing arrived for --idle-timeout)")
	cmd.Flags().DurationVar(&f.idleTimeout, "idle-timeout", 30*time.Second, "with --until-idle: stop after this long without a message")
	cmd.Flags().IntVar(&f.pollers, "pollers", 0, "concurrent pollers (default: the pipeline's max_concurrency)")
	cmd.Flags().DurationVar(&f.wait, "wait", 0, "long-polling wait of each receive, and the longest a stop waits for it (default 5s, 1s with --until-idle; Lambda's event source waits 20s)")
	cmd.Flags().StringVar(&f.table, "ledger-table", "", "ledger table (default: $AGENTDLQ_LEDGER_TABLE; "+topology.LocalLedgerTable+" with local endpoints)")
	cmd.Flags().StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	f.out = addOutput(cmd, formatJSON, formatTable)
	_ = cmd.MarkFlagRequired("pipeline")
	return cmd
}

func runWork(ctx context.Context, g *globalFlags, f *workFlags, stdout, stderr io.Writer) error {
	p, err := g.loadPipeline(f.pipeline)
	if err != nil {
		return withExit(2, err)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return withExit(2, fmt.Errorf("--log-level %q: use debug, info, warn or error", f.logLevel))
	}
	log := slog.New(logHandler(g.console(stderr), g.logFormat, level))
	table := ledgerTableName(f.table)
	if table == "" {
		return withExit(2, errors.New("work: no ledger table: pass --ledger-table or set AGENTDLQ_LEDGER_TABLE (local endpoints default to "+topology.LocalLedgerTable+")"))
	}
	counts := newMetricCounts(stderr)
	rt, err := newLocalRuntime(ctx, p, table, log, counts)
	if err != nil {
		return err
	}
	mc := esm.FromPipeline(p, rt.queues, rt.region)
	mc.Logger, mc.UntilIdle, mc.IdleTimeout = log, f.untilIdle, f.idleTimeout
	if sw, err := localSwitch(); err == nil {
		mc.Enabled = sw.Enabled // agentdlq pause|resume
	}
	if f.pollers > 0 {
		mc.Pollers = f.pollers
	}
	mc.WaitTime = f.wait
	switch {
	case mc.WaitTime > 0:
	case f.untilIdle:
		mc.WaitTime = time.Second
	default:
		// Lambda's event source polls 20 s; shorter here, since a stop
		// (kill %1) waits for the current poll, and meanwhile the stopping
		// worker still takes what that poll brings.
		mc.WaitTime = 5 * time.Second
	}
	m, err := esm.New(rt.sqs, rt.worker.Handle, mc)
	if err != nil {
		return err
	}
	runCtx, finished := stopGracefully(ctx, m, log, mc.WaitTime)
	stats, err := m.Run(runCtx)
	finished()
	sum := newWorkSummary(p.Name, stats, counts)
	if f.out == nil || f.out.JSON() { // JSON is the default
		_ = writeJSONLine(stdout, sum)
	} else {
		sum.writeTable(stdout)
	}
	if err != nil {
		return err
	}
	if ctx.Err() != nil && !errors.Is(ctx.Err(), context.Canceled) {
		return ctx.Err()
	}
	return nil
}

// stopGracefully returns the context to run m with, which ends only on a
// second interrupt, and the func to call once m's Run has returned. The
// first interrupt (Ctrl-C, or SIGTERM: kill %1) ends ctx and stops m as an
// idle stop does, each poller finishing its current receive (up to wait)
// and handling what it brought. Run with ctx itself, the worker would
// abandon its long polls, and SQS (fauxqs always) may still answer one
// with the next message sent: received by no worker, that message waits
// out its visibility timeout with one receive of its budget spent, and the
// next worker sees it first as attempt 2.
func stopGracefully(ctx context.Context, m *esm.Mapping, log *slog.Logger, wait time.Duration) (context.Context, func()) {
	run, abandon := context.WithCancel(context.WithoutCancel(ctx))
	finished := make(chan struct{})
	go func() {
		select {
		case <-finished:
			return
		case <-ctx.Done():
		}
		m.Stop()
		log.Info("stopping: each poller finishes its current receive and handles what it brought (up to "+wait.String()+"); interrupt again to abandon the receives", "wait_s", wait.Seconds())
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
		defer signal.Stop(sig)
		select {
		case <-finished:
		case <-sig:
			abandon()
		}
	}()
	return run, func() { close(finished); abandon() }
}

// localRuntime is one pipeline's worker on the clients of this process's
// AWS config (the emulators locally).
type localRuntime struct {
	queues pipeline.Queues
	region string
	sqs    *sqs.Client
	ledger ledger.Ledger
	worker *sampleworker.Worker
}

func newLocalRuntime(ctx context.Context, p *pipeline.Pipeline, table string, log *slog.Logger, metrics io.Writer) (*localRuntime, error) {
	cfg, err := localConfig(ctx)
	if err != nil {
		return nil, err
	}
	sqsc := sqs.NewFromConfig(cfg)
	q, err := topology.ResolveWith(ctx, sqsc, p, topology.OverrideFromEnv(os.Getenv))
	if err != nil {
		// A missing or misnamed DLQ: fail fast, acknowledge nothing.
		return nil, fmt.Errorf("pipeline %q: %w (is the topology created? make local-up)", p.Name, err)
	}
	l := ledger.NewDynamo(dynamodb.NewFromConfig(cfg), table)
	var deps sampleworker.Dependencies
	if d, err := localDependencies(); err == nil {
		deps = d // agentdlq local dependency down|up NAME
	}
	var effects sampleworker.Effects
	if e, err := localEffects(); err == nil {
		effects = e // what agentdlq ledger verify reads back
	}
	w, err := sampleworker.New(sampleworker.Config{
		Pipeline: p, Queues: q, SQS: sqsc, Ledger: l, Dependencies: deps, Effects: effects,
		BreakerStore: dynamostore.New(dynamodb.NewFromConfig(cfg), table), // shared with every local worker, as in AWS
		// Claim checks of dead letters too large for the DLQ, as in AWS.
		Evidence: s3.NewFromConfig(cfg), EvidenceBucket: topology.LocalEvalBucket,
		WorkerVersion: "local", Logger: log, Metrics: metrics,
		Concurrency:        sampleworker.LambdaConcurrency, // as the deployed Lambda
		DLQMaxMessageBytes: p.DLQMaxMessageBytes(),         // the local DLQ's size (topology), as the construct tells the Lambda
	})
	if err != nil {
		return nil, err
	}
	return &localRuntime{queues: q, region: cfg.Region, sqs: sqsc, ledger: l, worker: w}, nil
}
