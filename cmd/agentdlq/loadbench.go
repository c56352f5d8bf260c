package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/spf13/cobra"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/functions/sampleworker"
	"github.com/agentdlq/agentdlq/internal/esm"
	"github.com/agentdlq/agentdlq/internal/topology"
	"github.com/agentdlq/agentdlq/internal/workload"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/triage"
)

type loadFlags struct {
	pipeline string
	tasks    int
	seed     uint64
	pollers  int
	senders  int
	rawN     int
	jsonOnly bool
	file     string
}

func newLoadBenchCmd(g *globalFlags) *cobra.Command {
	f := &loadFlags{}
	cmd := &cobra.Command{
		Use:   "bench --tasks N",
		Short: "No-loss load bench: N tasks of the demo's mix through the local pipeline with concurrent pollers",
		Long: `bench sends N agent tasks (default 20,000) in the demo's mix (workload.Mix: valid,
duplicate keys, every immediate poison reason, transients that recover, budget
exhaustion, effect unknown, auth failures) to a fresh hot queue of the pipeline,
drains it with the real worker through the local event source mapping with
concurrent pollers, and accounts for every message: processed, dead-lettered
by reason, in flight, lost (must be 0). It also reports the duplicate side
effects recorded in the ledger (must be 0), the handler invocations per poison
message (must be 1) and per transient message, the pipeline's messages per
second, and the emulator's own raw receive-and-delete rate measured in the
same run on the same bodies, as a ratio. Exit status 1 when a must fails.

--workload FILE sends a workload made elsewhere instead (JSON Lines of bodies,
a JSON array of bodies, or a Lambda SQS event): every message is accounted for
the same way, the idempotency key read from each body, and the invocation
checks judge each message by where it ended.

It starts private emulators unless AWS_ENDPOINT_URL_SQS is set. It is a bench
command, not a timed test: the rates are measurements, not assertions.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runLoadBench(c.Context(), g, f, c.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&f.pipeline, "pipeline", "agent-tasks", "pipeline of pipelines.json (standard queues)")
	cmd.Flags().IntVar(&f.tasks, "tasks", 20000, "tasks to send")
	cmd.Flags().Uint64Var(&f.seed, "seed", 1, "workload shuffle seed")
	cmd.Flags().IntVar(&f.pollers, "pollers", 0, "concurrent pollers (default: the pipeline's max_concurrency)")
	cmd.Flags().IntVar(&f.senders, "senders", 8, "concurrent senders")
	cmd.Flags().IntVar(&f.rawN, "raw-messages", 0, "messages for the raw emulator rate (default: min(tasks, 5000))")
	cmd.Flags().BoolVar(&f.jsonOnly, "json", false, "print only the JSON result")
	cmd.Flags().StringVar(&f.file, "workload", "", "send the bodies of this file instead of the generated mix: JSON Lines (one body a line), a JSON array, or a Lambda SQS event")
	return cmd
}

// loadResult is the bench's output.
type loadResult struct {
	Tasks     int    `json:"tasks"`
	Workload  string `json:"workload"`
	Pipeline  string `json:"pipeline"`
	Pollers   int    `json:"pollers"`
	BatchSize int    `json:"batch_size"`
	workload.Accounting
	DuplicateEffects       int                        `json:"duplicate_side_effects"`
	PoisonInvocations      invocationStats            `json:"handler_invocations_per_poison"`
	TransientInvocations   map[string]invocationStats `json:"handler_invocations_per_transient"`
	Invocations            int64                      `json:"handler_invocations"`
	HandlerMsPerInvocation float64                    `json:"handler_ms_per_invocation"`
	SendSeconds            float64                    `json:"send_seconds"`
	DrainSeconds           float64                    `json:"drain_seconds"`
	PipelineMsgsPerSec     float64                    `json:"pipeline_messages_per_s"`
	RawMessages            int                        `json:"raw_messages"`
	RawMsgsPerSec          float64                    `json:"emulator_raw_receive_delete_per_s"`
	Ratio                  float64                    `json:"pipeline_to_raw_ratio"`
	// The ledger (DynamoDB emulator) side: the worker's ledger calls per
	// message sent, and the rate of the ledger's own calls (Begin, Complete)
	// on the emulator with the same concurrency — the local pipeline's real
	// ceiling: dynalite evaluates the ledger's conditional expressions on one
	// Node.js thread.
	LedgerCallsPerMsg    float64  `json:"ledger_calls_per_message"`
	LedgerRawCallsPerSec float64  `json:"ledger_emulator_raw_calls_per_s"`
	Failures             []string `json:"failures,omitempty"`
}

type invocationStats struct {
	Messages int     `json:"messages"`
	Min      int     `json:"min"`
	Max      int     `json:"max"`
	Mean     float64 `json:"mean"`
	Want     int     `json:"want,omitempty"`
	Off      int     `json:"off_target,omitempty"`
}

func statsOf(counts []int, want int) invocationStats {
	s := invocationStats{Messages: len(counts), Want: want}
	if len(counts) == 0 {
		return s
	}
	s.Min, s.Max = slices.Min(counts), slices.Max(counts)
	sum := 0
	for _, c := range counts {
		sum += c
		if want > 0 && c != want {
			s.Off++
		}
	}
	s.Mean = float64(sum) / float64(len(counts))
	return s
}

func runLoadBench(ctx context.Context, g *globalFlags, f *loadFlags, out io.Writer) error {
	if f.tasks < 1 && f.file == "" {
		return withExit(2, errors.New("--tasks must be at least 1"))
	}
	var external []workload.Task
	if f.file != "" {
		var err error
		if external, err = workload.ReadFile(f.file); err != nil {
			return withExit(2, err)
		}
	}
	base, err := g.loadPipeline(f.pipeline)
	if err != nil {
		return withExit(2, err)
	}
	if base.FIFO {
		return withExit(2, fmt.Errorf("pipeline %q is FIFO: the load bench runs standard pipelines", base.Name))
	}
	p := workload.Quick(base)
	say := func(format string, args ...any) {
		if !f.jsonOnly {
			fmt.Fprintf(out, format+"\n", args...)
		}
	}
	if os.Getenv("AWS_ENDPOINT_URL_SQS") == "" {
		w := out
		if f.jsonOnly {
			w = io.Discard
		}
		stop, _, err := startPrivateEmulators(ctx, w, false)
		if err != nil {
			return err
		}
		defer stop()
	}
	cfg, err := localConfig(ctx)
	if err != nil {
		return err
	}
	sqsc := sqs.NewFromConfig(cfg)
	ddb := dynamodb.NewFromConfig(cfg)
	run := "load-" + time.Now().UTC().Format("150405")
	q, err := topology.CreateNamed(ctx, sqsc, p, topology.Names{Hot: p.Name + "-" + run, DLQ: p.Name + "-" + run + "-dlq"})
	if err != nil {
		return err
	}
	table := "agentdlq-ledger-" + run
	if err := topology.CreateLedgerTable(ctx, ddb, table); err != nil {
		return err
	}
	led := ledger.NewCounting(ledger.NewDynamo(ddb, table))

	tasks := external
	if tasks == nil {
		tasks = workload.Mix(run, f.tasks, f.seed)
	}
	say("sending %d tasks (%s) to %s", len(tasks), kindCounts(tasks), q.HotURL)
	t0 := time.Now()
	sent, err := workload.Send(ctx, sqsc, q.HotURL, false, tasks, f.senders)
	if err != nil {
		return err
	}
	sendSecs := time.Since(t0).Seconds()

	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	w, err := sampleworker.New(sampleworker.Config{Pipeline: p, Queues: q, SQS: sqsc, Ledger: led, WorkerVersion: "load", Logger: log, Metrics: io.Discard,
		Concurrency: sampleworker.LambdaConcurrency})
	if err != nil {
		return err
	}
	var mu sync.Mutex
	attempts := make(map[string]int, len(sent))
	var handlerTime time.Duration
	handler := func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		mu.Lock()
		for _, r := range ev.Records {
			attempts[r.MessageId]++
		}
		mu.Unlock()
		start := time.Now()
		resp, err := w.Handle(ctx, ev)
		mu.Lock()
		handlerTime += time.Since(start)
		mu.Unlock()
		return resp, err
	}
	mc := esm.FromPipeline(p, q, cfg.Region)
	if f.pollers > 0 {
		mc.Pollers = f.pollers
	}
	mc.Logger, mc.UntilIdle, mc.WaitTime, mc.IdleTimeout = log, true, time.Second, 30*time.Second
	m, err := esm.New(sqsc, handler, mc)
	if err != nil {
		return err
	}
	say("draining with %d pollers, batch size %d, window %ds", mc.Pollers, mc.BatchSize, p.BatchWindowSeconds)
	t1 := time.Now()
	stats, err := m.Run(ctx)
	if err != nil {
		return err
	}
	drainSecs := time.Since(t1).Seconds()

	msgs, _, err := triage.Scan(ctx, sqsc, q.DLQURL, triage.ScanOptions{MaxMessages: 10 * len(tasks), Receivers: 4, MaxDuration: 10 * time.Minute})
	if err != nil {
		return err
	}
	depth, err := esm.Depth(ctx, sqsc, q.HotURL)
	if err != nil {
		return err
	}
	started, completed, ledgerCalls := led.Counts()
	acct := workload.Account(p, sent, workload.DeadLetters(triage.TagAll(msgs)), depth, func(key string) bool { return completed[key] > 0 })

	res := loadResult{Tasks: len(tasks), Workload: "generated mix (seed " + fmt.Sprint(f.seed) + ")", Pipeline: p.Name, Pollers: mc.Pollers, BatchSize: mc.BatchSize, Accounting: acct,
		Invocations: stats.Batches, SendSeconds: sendSecs, DrainSeconds: drainSecs,
		HandlerMsPerInvocation: float64(handlerTime.Milliseconds()) / float64(max(1, stats.Batches)),
		PipelineMsgsPerSec:     float64(len(sent)) / drainSecs, TransientInvocations: map[string]invocationStats{}}
	for k, n := range completed {
		if n > 1 {
			res.DuplicateEffects += n - 1
		}
		if started[k] > 1 {
			res.DuplicateEffects += started[k] - 1
		}
	}
	// Invocations by outcome, so that a workload made elsewhere is judged
	// the same way: a message dead-lettered with a reason the worker writes
	// at once (poison, security, effect_unknown, policy_limit, unclassified)
	// must have had exactly one invocation; one dead-lettered after its
	// budget (budget_exhausted, auth_config, dependency_open) or moved by
	// the broker (receive_limit) maxReceiveCount; a processed message that
	// was retried shows how many receives its recovery took.
	dead := map[string]deadletter.Reason{}
	for _, d := range workload.DeadLetters(triage.TagAll(msgs)) {
		dead[d.OriginalMessageID] = d.Reason
	}
	var poison []int
	transient := map[string][]int{}
	for _, s := range sent {
		n := attempts[s.MessageID]
		r, isDead := dead[s.MessageID]
		info, _ := r.Info()
		switch {
		case isDead && info.Immediate && r != deadletter.ReasonRedriveLoop:
			poison = append(poison, n)
		case isDead && r == deadletter.ReasonReceiveLimit:
			transient["receive_limit"] = append(transient["receive_limit"], n)
		case isDead:
			transient["dead_lettered_after_budget"] = append(transient["dead_lettered_after_budget"], n)
		case n > 1:
			transient["retried_then_processed"] = append(transient["retried_then_processed"], n)
		}
	}
	res.PoisonInvocations = statsOf(poison, 1)
	for k, c := range transient {
		want := p.MaxReceiveCount
		if k == "retried_then_processed" {
			want = 0
		}
		res.TransientInvocations[k] = statsOf(c, want)
	}
	if f.file != "" {
		res.Workload = f.file
	}

	say("measuring the emulator's raw receive-and-delete rate")
	res.RawMessages = f.rawN
	if res.RawMessages == 0 {
		res.RawMessages = min(len(tasks), 5000)
	}
	res.RawMessages = min(res.RawMessages, len(tasks))
	res.RawMsgsPerSec, err = rawRate(ctx, sqsc, p, run, tasks[:res.RawMessages], mc.Pollers, f.senders)
	if err != nil {
		return err
	}
	if res.RawMsgsPerSec > 0 {
		res.Ratio = res.PipelineMsgsPerSec / res.RawMsgsPerSec
	}
	say("measuring the ledger emulator's raw rate (Begin+Complete on fresh keys)")
	res.LedgerCallsPerMsg = float64(ledgerCalls) / float64(len(sent))
	res.LedgerRawCallsPerSec, err = ledgerRate(ctx, ledger.NewDynamo(ddb, table), mc.Pollers, 5*time.Second)
	if err != nil {
		return err
	}

	if acct.Lost > 0 {
		res.Failures = append(res.Failures, fmt.Sprintf("%d messages lost", acct.Lost))
	}
	if !acct.AddsUp() {
		res.Failures = append(res.Failures, "the accounting does not add up")
	}
	if res.DuplicateEffects > 0 {
		res.Failures = append(res.Failures, fmt.Sprintf("%d duplicate side effects", res.DuplicateEffects))
	}
	if res.PoisonInvocations.Off > 0 {
		res.Failures = append(res.Failures, fmt.Sprintf("%d poison messages invoked other than once", res.PoisonInvocations.Off))
	}
	if len(acct.Unexpected) > 0 {
		res.Failures = append(res.Failures, fmt.Sprintf("%d messages ended other than their kind says", len(acct.Unexpected)))
	}
	if acct.ExtraDeadLetters > 0 {
		res.Failures = append(res.Failures, fmt.Sprintf("%d extra dead letters", acct.ExtraDeadLetters))
	}
	if !f.jsonOnly {
		printLoad(out, &res)
	}
	data, _ := json.Marshal(&res)
	fmt.Fprintln(out, string(data))
	if len(res.Failures) > 0 {
		return fmt.Errorf("load bench: %s", strings.Join(res.Failures, "; "))
	}
	return nil
}

func printLoad(out io.Writer, r *loadResult) {
	fmt.Fprintf(out, "\n%s\n", r.Accounting.Line())
	reasons := slices.Sorted(maps.Keys(r.ByReason))
	for _, reason := range reasons {
		fmt.Fprintf(out, "  dead-lettered %-26s %d\n", reason, r.ByReason[deadletter.Reason(reason)])
	}
	fmt.Fprintf(out, "lost %d (must be 0); duplicate side effects %d (must be 0, per the ledger)\n", r.Lost, r.DuplicateEffects)
	fmt.Fprintf(out, "handler invocations per poison message: min %d max %d mean %.2f over %d (must be 1)\n",
		r.PoisonInvocations.Min, r.PoisonInvocations.Max, r.PoisonInvocations.Mean, r.PoisonInvocations.Messages)
	kinds := make([]string, 0, len(r.TransientInvocations))
	for k := range r.TransientInvocations {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		s := r.TransientInvocations[k]
		expected := ""
		if s.Want > 0 {
			expected = fmt.Sprintf(" (expected %d)", s.Want)
		}
		fmt.Fprintf(out, "handler invocations per %s message: min %d max %d mean %.2f over %d%s\n", k, s.Min, s.Max, s.Mean, s.Messages, expected)
	}
	fmt.Fprintf(out, "sent in %.1fs; drained in %.1fs with %d invocations (%.0f ms each on average): %.0f messages/s through the pipeline\n",
		r.SendSeconds, r.DrainSeconds, r.Invocations, r.HandlerMsPerInvocation, r.PipelineMsgsPerSec)
	fmt.Fprintf(out, "emulator raw receive+delete: %.0f messages/s (%d messages, same pollers); pipeline/raw = %.2f\n",
		r.RawMsgsPerSec, r.RawMessages, r.Ratio)
	fmt.Fprintf(out, "ledger: %.2f calls per message; the ledger's own calls on the DynamoDB emulator alone: %.0f/s with the same concurrency (a ceiling of about %.0f messages/s)\n",
		r.LedgerCallsPerMsg, r.LedgerRawCallsPerSec, r.LedgerRawCallsPerSec/max(r.LedgerCallsPerMsg, 1))
}

// rawRate sends the bodies to a fresh queue and measures how fast `pollers`
// plain receive(10)+DeleteMessageBatch loops empty it: the emulator's own
// ceiling for the pipeline's rate.
func rawRate(ctx context.Context, api *sqs.Client, p *pipeline.Pipeline, run string, tasks []workload.Task, pollers, senders int) (float64, error) {
	out, err := api.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(p.Name + "-" + run + "-raw")})
	if err != nil {
		return 0, err
	}
	url := aws.ToString(out.QueueUrl)
	defer func() {
		_, _ = api.DeleteQueue(context.WithoutCancel(ctx), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
	}()
	if _, err := workload.Send(ctx, api, url, false, tasks, senders); err != nil {
		return 0, err
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		done int
		rerr error
	)
	start := time.Now()
	for range pollers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				finished := done >= len(tasks) || rerr != nil
				mu.Unlock()
				if finished {
					return
				}
				r, err := api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
				if err == nil && len(r.Messages) > 0 {
					entries := make([]types.DeleteMessageBatchRequestEntry, len(r.Messages))
					for i, m := range r.Messages {
						entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: m.ReceiptHandle}
					}
					_, err = api.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
				}
				mu.Lock()
				if err != nil && rerr == nil {
					rerr = err
				}
				if err == nil {
					done += len(r.Messages)
				}
				mu.Unlock()
				if err == nil && len(r.Messages) == 0 {
					return // empty: every message was received
				}
			}
		}()
	}
	wg.Wait()
	if rerr != nil {
		return 0, rerr
	}
	return float64(done) / time.Since(start).Seconds(), nil
}

// ledgerRate measures the DynamoDB emulator with the ledger's own calls: for
// d, `conc` concurrent loops each claim a fresh key (Begin) and complete it
// (Complete), the two calls a processed task costs. It returns ledger calls
// a second.
func ledgerRate(ctx context.Context, l ledger.Ledger, conc int, d time.Duration) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		n    int
		rerr error
	)
	start := time.Now()
	for g := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				key, owner := fmt.Sprintf("raw-%d-%d", g, i), fmt.Sprintf("raw-%d", g)
				now := time.Now()
				_, err := l.Begin(ctx, key, owner, now, time.Minute)
				calls := 1
				if err == nil {
					err = l.Complete(ctx, key, owner, "raw", now)
					calls++
				}
				mu.Lock()
				if err == nil {
					n += calls
				} else if ctx.Err() == nil && rerr == nil {
					rerr = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return float64(n) / time.Since(start).Seconds(), rerr
}
