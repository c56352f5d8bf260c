package loadbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/agentdlq/agentdlq/bench/chaos"
	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/functions/batch"
	"github.com/agentdlq/agentdlq/functions/sampleworker"
	"github.com/agentdlq/agentdlq/internal/awsmeter"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/local/esm"
	"github.com/agentdlq/agentdlq/local/runner"
	"github.com/agentdlq/agentdlq/local/topology"
	"github.com/agentdlq/agentdlq/local/workload"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/dlq"
)

// Config is one bench run.
type Config struct {
	// AWS is required: the clients' configuration, pointed at the emulators.
	AWS aws.Config
	// Pipeline is required: a standard pipeline, used as given (the CLI
	// applies workload.Quick).
	Pipeline *pipeline.Pipeline
	// Tasks is the number of generated tasks (required unless Workload is set).
	Tasks int
	// Seed is optional (default 0): the generated mix's shuffle seed.
	Seed uint64
	// Mix is optional (default "demo", workload.Mix): the generated
	// workload, one of MixNames (Mixes).
	Mix string
	// NoRawRates is optional: skip the emulators' raw rates (the cost runs
	// measure requests, not rates).
	NoRawRates bool
	// IdleTimeout is optional: how long the hot queue stays empty before
	// the drain ends (default 30 s; a cost mix's, the visibility timeout
	// and 15 s; under chaos, the same).
	IdleTimeout time.Duration
	// Workload is optional: tasks made elsewhere (workload.ReadFile),
	// sent instead of the generated mix; WorkloadName names them.
	Workload     []workload.Task
	WorkloadName string
	// Pollers is optional (default: the pipeline's max_concurrency).
	Pollers int
	// Senders is optional (default 8): concurrent senders.
	Senders int
	// RawMessages is optional (default min(tasks, 5000)): messages for the
	// emulator's raw receive-and-delete rate.
	RawMessages int
	// Run is optional (default "load-HHMMSS"): names the run's queues and
	// ledger table.
	Run string
	// Progress is optional (default io.Discard): a line per phase.
	Progress io.Writer
	// Drained is optional: called about four times a second while the hot
	// queue drains, and once when the drain has ended (done), with how many
	// records the event source mapping has deleted so far (acknowledged:
	// processed, or dead-lettered by the worker) and how many messages were
	// sent.
	Drained func(deleted, sent int, done bool)
	// Chaos is optional: a fault (chaos.Scenarios) injected by an
	// in-process toxiproxy between the worker and one emulator,
	// ChaosUpstream (its endpoint URL), on ChaosPath: "sqs" (the pollers'
	// receives and deletes, the worker's DLQ sends) or "dynamodb" (the
	// ledger). The sender and the accounting talk to the emulators
	// directly. Under chaos the musts are 0 lost and 0 duplicate side
	// effects; extra receives, extra dead letters and poison invoked more
	// than once are what the fault costs, reported, not failures.
	Chaos         *chaos.Toxic
	ChaosName     string
	ChaosPath     string
	ChaosUpstream string
}

// Run runs the bench. Its error is for a run that could not be made (bad
// config, an emulator error); a run whose musts failed returns a Result
// with Failures and a nil error.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	b := newBench(cfg)
	if cfg.Chaos != nil {
		stop, err := b.viaChaos()
		if stop != nil {
			defer stop()
		}
		if err != nil {
			return nil, err
		}
	}
	if cfg.IdleTimeout > 0 {
		b.idle = cfg.IdleTimeout
	}
	if cfg.Mix == "outage" {
		cleanup, err := b.outage()
		if cleanup != nil {
			defer cleanup()
		}
		if err != nil {
			return nil, err
		}
	}
	p := cfg.Pipeline
	l, err := runner.Setup(ctx, b.lc)
	if err != nil {
		return nil, err
	}
	// The mapping logs apart from the worker: Lambda's own mapping writes
	// nothing to the function's log group.
	l.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil))

	tasks, name, err := cfg.tasks()
	if err != nil {
		return nil, err
	}
	b.say("sending %d tasks (%s) to %s", len(tasks), runner.KindCounts(tasks), l.Queues.HotURL)
	t0 := time.Now()
	sent, err := l.Send(ctx, tasks, cfg.Senders)
	if err != nil {
		return nil, err
	}
	sendSecs := time.Since(t0).Seconds()

	d, err := b.drain(ctx, l, len(sent))
	if err != nil {
		return nil, err
	}
	stats, mc, drainSecs, activeSecs := d.stats, d.mc, d.secs, d.activeSecs

	tagged, err := deadLetters(ctx, l, sqs.NewFromConfig(b.meter.Config(cfg.AWS, "triage")), len(tasks))
	if err != nil {
		return nil, err
	}
	started, completed, ledgerCalls := l.Ledger.Counts()
	// Processed is what the ledger table says is done, read directly (not
	// through the chaos proxy): a Complete that took effect but whose
	// response the network cut is done though the worker saw it fail (its
	// redelivery is then acknowledged as a duplicate).
	table, err := ledgerTable(ctx, l)
	if err != nil {
		return nil, err
	}
	acct, err := l.Account(ctx, sent, tagged, func(key string) bool { return table[key].State == ledger.StateDone })
	if err != nil {
		return nil, err
	}

	res := &Result{Tasks: len(tasks), Workload: name, Pipeline: p.Name, Pollers: mc.Pollers, BatchSize: mc.BatchSize, Accounting: acct,
		Invocations: stats.Batches, SendSeconds: sendSecs, DrainSeconds: drainSecs,
		HandlerMsPerInvocation: float64(l.HandlerTime().Milliseconds()) / float64(max(1, stats.Batches)),
		PipelineMsgsPerSec:     float64(len(sent)) / drainSecs, TransientInvocations: map[string]InvocationStats{},
		ActiveSeconds: activeSecs, ActiveMsgsPerSec: float64(len(sent)) / max(activeSecs, 1e-3)}
	if cfg.Chaos != nil {
		res.Chaos = cfg.ChaosName + " on " + cfg.ChaosPath
		res.ChaosRequests, res.ChaosBroken = b.hc.Counts()
		res.ChaosBrokenSamples = b.hc.Samples()
	}
	res.countEffects(p.Name, sent, table, started, completed)
	if res.Lost > 0 {
		res.LostDetail = lostDetail(l, sent, tagged, table, completed, 20)
	}
	res.countInvocations(l, sent, tagged, p.MaxReceiveCount)
	res.ReceiveErrors = stats.ReceiveErrors

	if err := b.costs(ctx, res, l, tasks, name, stats.Batches, float64(ledgerCalls)/float64(len(sent))); err != nil {
		return nil, err
	}
	if !cfg.NoRawRates {
		if err := b.rawRates(ctx, res, l, tasks, mc.Pollers); err != nil {
			return nil, err
		}
	}
	res.Failures = failures(res)
	return res, nil
}

// drained is what a drain of the hot queue took.
type drained struct {
	stats            esm.Stats
	mc               esm.Config
	secs, activeSecs float64 // until idle, and until the last invocation returned
}

// drain runs the event source mapping until the hot queue is idle, saying
// how far it is (cfg.Drained) while it runs.
func (b *bench) drain(ctx context.Context, l *runner.Local, sent int) (drained, error) {
	cfg := b.cfg
	m, mc, err := l.Mapping(runner.DrainOptions{Pollers: cfg.Pollers, IdleTimeout: b.idle, SQS: b.mappingSQS}, true)
	if err != nil {
		return drained{}, err
	}
	b.say("draining with %d pollers, batch size %d, window %ds", mc.Pollers, mc.BatchSize, cfg.Pipeline.BatchWindowSeconds)
	t1 := time.Now()
	var progress func(int, bool)
	if cfg.Drained != nil {
		progress = func(deleted int, done bool) { cfg.Drained(deleted, sent, done) }
	}
	stopTicks := runner.Ticks(m, progress)
	stats, err := m.Run(ctx)
	stopTicks()
	if err != nil {
		return drained{}, err
	}
	return drained{stats: stats, mc: mc, secs: time.Since(t1).Seconds(), activeSecs: l.LastInvocationEnd().Sub(t1).Seconds()}, nil
}

// check checks cfg and fills in the defaults of what it leaves zero.
func (cfg *Config) check() error {
	if cfg.Pipeline == nil {
		return errors.New("loadbench: Pipeline is required")
	}
	if cfg.Pipeline.FIFO {
		return fmt.Errorf("pipeline %q is FIFO: the load bench runs standard pipelines", cfg.Pipeline.Name)
	}
	if cfg.Tasks < 1 && cfg.Workload == nil {
		return errors.New("loadbench: Tasks must be at least 1")
	}
	if cfg.Senders == 0 {
		cfg.Senders = 8
	}
	if cfg.Run == "" {
		cfg.Run = "load-" + time.Now().UTC().Format("150405")
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	return nil
}

// tasks returns the tasks to send and the workload's name: cfg.Workload's,
// or the mix cfg names.
func (cfg *Config) tasks() ([]workload.Task, string, error) {
	if cfg.Workload != nil {
		return cfg.Workload, cfg.WorkloadName, nil
	}
	tasks, err := MakeMix(cfg.Mix, cfg.Run, cfg.Tasks, cfg.Seed)
	if err != nil {
		return nil, "", err
	}
	name := "generated mix (seed " + fmt.Sprint(cfg.Seed) + ")"
	if cfg.Mix != "" && cfg.Mix != "demo" {
		name = "generated " + cfg.Mix + " mix (seed " + fmt.Sprint(cfg.Seed) + ")"
	}
	return tasks, name, nil
}

// bench is one run's parts that its steps share: the local pipeline's
// config, the meters, the mapping's SQS client, the chaos client and the
// idle timeout.
type bench struct {
	cfg                   Config
	lc                    runner.Config
	meter                 *awsmeter.Meter
	logs                  *awsmeter.ByteCounter
	workerAWS, mappingAWS aws.Config
	mappingSQS            *sqs.Client
	hc                    *chaos.Client
	idle                  time.Duration
	deps                  sampleworker.DependencyDir
}

// newBench makes the run's parts, every AWS client counted.
func newBench(cfg Config) *bench {
	p, run := cfg.Pipeline, cfg.Run
	b := &bench{cfg: cfg}
	b.lc = runner.Config{AWS: cfg.AWS, Pipeline: p,
		Names: topology.Names{Hot: p.Name + "-" + run, DLQ: p.Name + "-" + run + "-dlq"}, Table: "agentdlq-ledger-" + run,
		WorkerVersion: "load", Concurrency: sampleworker.LambdaConcurrency}
	// Every AWS call of the drain is counted at its SDK client: the
	// worker's (ledger, dead letters, visibility) and the mapping's
	// (receives, deletes); the worker's log and metric lines are counted
	// in bytes, as CloudWatch Logs ingests them.
	b.meter, b.logs = &awsmeter.Meter{}, &awsmeter.ByteCounter{}
	b.workerAWS, b.mappingAWS = b.meter.Config(cfg.AWS, "worker"), b.meter.Config(cfg.AWS, "mapping")
	b.lc.WorkerSQS, b.lc.WorkerDynamoDB = sqs.NewFromConfig(b.workerAWS), dynamodb.NewFromConfig(b.workerAWS)
	b.mappingSQS = sqs.NewFromConfig(b.mappingAWS)
	b.lc.Logger, b.lc.Metrics = slog.New(batch.NewLogHandler(b.logs, nil)), b.logs
	b.idle = 30 * time.Second
	if cfg.Mix != "" && cfg.Mix != "demo" {
		// A cost mix counts every request until every task has ended: an
		// invocation that ran out of time on a busy machine leaves its
		// messages hidden for the visibility timeout.
		b.idle = time.Duration(p.VisibilityTimeoutSeconds+15) * time.Second
	}
	return b
}

func (b *bench) say(format string, args ...any) { fmt.Fprintf(b.cfg.Progress, format+"\n", args...) }

// viaChaos starts the fault-injecting proxy and sends the chaos path's
// clients through it. stop, when not nil, stops the proxy.
func (b *bench) viaChaos() (stop func(), err error) {
	cfg := b.cfg
	px, err := chaos.Start(cfg.ChaosPath, cfg.ChaosUpstream, *cfg.Chaos)
	if err != nil {
		return nil, err
	}
	b.say("chaos: %s on the %s path (%s, toxicity %.2f, %v) via %s", cfg.ChaosName, cfg.ChaosPath, cfg.Chaos.Type, cfg.Chaos.Toxicity, cfg.Chaos.Attributes, px.URL)
	// One connection per request (see chaos.Client), counted.
	b.hc = chaos.NewClient()
	switch cfg.ChaosPath {
	case "sqs":
		viaProxy := func(o *sqs.Options) { o.BaseEndpoint, o.HTTPClient = aws.String(px.URL), b.hc }
		b.lc.WorkerSQS, b.mappingSQS = sqs.NewFromConfig(b.workerAWS, viaProxy), sqs.NewFromConfig(b.mappingAWS, viaProxy)
	case "dynamodb":
		b.lc.WorkerDynamoDB = dynamodb.NewFromConfig(b.workerAWS, func(o *dynamodb.Options) { o.BaseEndpoint, o.HTTPClient = aws.String(px.URL), b.hc })
	default:
		return px.Stop, fmt.Errorf("loadbench: ChaosPath %q: sqs or dynamodb", cfg.ChaosPath)
	}
	// A receive whose response was lost hides its messages for the
	// visibility timeout: wait longer than that before calling it idle.
	b.idle = time.Duration(cfg.Pipeline.VisibilityTimeoutSeconds+15) * time.Second
	return px.Stop, nil
}

// outage takes search-api down for the whole run (the sample worker's
// dependency switch, `agentdlq local dependency down`), in a directory of
// this run's own. cleanup, when not nil, removes the directory.
func (b *bench) outage() (cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "agentdlq-outage-")
	if err != nil {
		return nil, err
	}
	cleanup = func() { _ = os.RemoveAll(dir) } // a temporary directory: a leftover costs nothing
	b.deps = sampleworker.DependencyDir{Dir: dir}
	b.lc.Dependencies = b.deps
	return cleanup, b.deps.Set(OutageDependency, true)
}

// countEffects counts the keys done whose Complete the worker saw fail, and
// the side effects started or completed more than once.
func (res *Result) countEffects(pipelineName string, sent []workload.Sent, table map[string]ledger.Entry, started, completed map[string]int) {
	seen := map[string]bool{}
	for _, s := range sent {
		k := ledger.Key(pipelineName, s.Task.Tenant, s.Task.Key) // the ledger's key, as the worker scopes it
		if s.Task.Key != "" && !seen[k] && table[k].State == ledger.StateDone && completed[k] == 0 {
			res.DoneUnseen++
		}
		seen[k] = true
	}
	res.DuplicateEffects += duplicateEffects(started, completed)
}

// duplicateEffects counts the side effects completed or started more than
// once, from the ledger's counts (ledger.Counting): the no-loss and the
// outage bench judge duplicates the same way.
func duplicateEffects(started, completed map[string]int) int {
	n := 0
	for k, c := range completed {
		n += max(c-1, 0)
		if started[k] > 1 {
			n += started[k] - 1
		}
	}
	return n
}

// countInvocations counts the receives and the invocations by outcome, so
// that a workload made elsewhere is judged the same way: a message
// dead-lettered with a reason the worker writes at once (poison, security,
// effect_unknown, policy_limit, unclassified) must have had exactly one
// invocation; one dead-lettered after its budget (budget_exhausted,
// auth_config, dependency_open) or moved by the broker (receive_limit)
// maxReceiveCount; a processed message that was retried shows how many
// receives its recovery took.
func (res *Result) countInvocations(l *runner.Local, sent []workload.Sent, tagged []dlq.Tagged, maxReceiveCount int) {
	dead := map[string]deadletter.Reason{}
	for _, d := range workload.DeadLetters(tagged) {
		dead[d.OriginalMessageID] = d.Reason
	}
	var poison []int
	transient := map[string][]int{}
	for _, s := range sent {
		n := l.Attempts(s.MessageID)
		res.Receives += n
		res.LostReceives += l.LostReceives(s.MessageID)
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
	res.ExtraReceives = max(0, res.Receives-len(sent))
	res.PoisonInvocations = statsOf(poison, 1)
	for k, c := range transient {
		want := maxReceiveCount
		if k == "retried_then_processed" {
			want = 0
		}
		res.TransientInvocations[k] = statsOf(c, want)
	}
}

// costs fills in the requests and costs of the run, and of the outage's
// recovery.
func (b *bench) costs(ctx context.Context, res *Result, l *runner.Local, tasks []workload.Task, name string, invocations int64, ledgerCallsPerMsg float64) error {
	cfg, p, acct := b.cfg, b.cfg.Pipeline, res.Accounting
	items, err := itemSizes(ctx, l.DynamoDB, l.Table)
	if err != nil {
		return err
	}
	res.Mix = cfg.Mix
	if res.Mix == "" && cfg.Workload == nil {
		res.Mix = "demo"
	}
	memory := p.WorkerMemoryMB
	if memory == 0 {
		memory = 256
	}
	res.Requests = requests(b.meter, b.logs, items, tasks, invocations, res.HandlerMsPerInvocation, memory, p.MaxReceiveCount, res.Receives, b.lc.Concurrency, acct)
	res.Requests.Mix = res.Mix
	if res.Requests.Mix == "" {
		res.Requests.Mix = name
	}
	res.LedgerCallsPerMsg = ledgerCallsPerMsg
	if cfg.Mix == "outage" && acct.ByReason[deadletter.ReasonDependencyOpen] > 0 {
		b.say("recovery: %s back up, redriving %d dependency_open dead letters", OutageDependency, acct.ByReason[deadletter.ReasonDependencyOpen])
		res.Recovery, err = recoverOutage(ctx, cfg.AWS, l, b.meter, b.deps, b.mappingSQS, b.idle, memory, b.lc.Concurrency, acct.ByReason[deadletter.ReasonDependencyOpen])
		if err != nil {
			return err
		}
	}
	return nil
}

// rawRates measures the emulators' own rates: SQS receive-and-delete, and
// the ledger's calls.
func (b *bench) rawRates(ctx context.Context, res *Result, l *runner.Local, tasks []workload.Task, pollers int) error {
	cfg := b.cfg
	b.say("measuring the emulator's raw receive-and-delete rate")
	res.RawMessages = cfg.RawMessages
	if res.RawMessages == 0 {
		res.RawMessages = min(len(tasks), 5000)
	}
	res.RawMessages = min(res.RawMessages, len(tasks))
	var err error
	res.RawMsgsPerSec, err = rawRate(ctx, l.SQS, cfg.Pipeline, cfg.Run, tasks[:res.RawMessages], pollers, cfg.Senders)
	if err != nil {
		return err
	}
	if res.RawMsgsPerSec > 0 {
		res.Ratio = res.PipelineMsgsPerSec / res.RawMsgsPerSec
	}
	b.say("measuring the ledger emulator's raw rate (Begin+Complete on fresh keys)")
	res.LedgerRawCallsPerSec, err = ledgerRate(ctx, ledger.NewDynamo(l.DynamoDB, l.Table), pollers, 5*time.Second)
	return err
}

// failures are the musts the run broke.
func failures(res *Result) []string {
	var out []string
	acct := res.Accounting
	if acct.Lost > 0 {
		out = append(out, fmt.Sprintf("%d messages lost", acct.Lost))
	}
	if !acct.AddsUp() {
		out = append(out, "the accounting does not add up")
	}
	if res.DuplicateEffects > 0 {
		out = append(out, fmt.Sprintf("%d duplicate side effects", res.DuplicateEffects))
	}
	if res.Chaos != "" {
		return out // the rest is what the fault costs
	}
	if res.PoisonInvocations.Off > 0 {
		out = append(out, fmt.Sprintf("%d poison messages invoked other than once", res.PoisonInvocations.Off))
	}
	if len(acct.Unexpected) > 0 {
		out = append(out, fmt.Sprintf("%d messages ended other than their kind says", len(acct.Unexpected)))
	}
	if acct.ExtraDeadLetters > 0 {
		out = append(out, fmt.Sprintf("%d extra dead letters", acct.ExtraDeadLetters))
	}
	return out
}

// Result is what a run measured and found.
type Result struct {
	Tasks     int    `json:"tasks"`
	Workload  string `json:"workload"`
	Pipeline  string `json:"pipeline"`
	Pollers   int    `json:"pollers"`
	BatchSize int    `json:"batch_size"`
	workload.Accounting
	DuplicateEffects       int                        `json:"duplicate_side_effects"`
	PoisonInvocations      InvocationStats            `json:"handler_invocations_per_poison"`
	TransientInvocations   map[string]InvocationStats `json:"handler_invocations_per_transient"`
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
	LedgerCallsPerMsg    float64 `json:"ledger_calls_per_message"`
	LedgerRawCallsPerSec float64 `json:"ledger_emulator_raw_calls_per_s"`
	// ActiveSeconds is the drain until the last handler invocation returned
	// (without the final idle wait); ActiveMsgsPerSec the rate over it, the
	// figure that compares runs with and without chaos.
	ActiveSeconds    float64 `json:"active_seconds"`
	ActiveMsgsPerSec float64 `json:"active_messages_per_s"`
	// Chaos is the fault injected ("scenario on path"), empty without;
	// ChaosRequests the HTTP exchanges through the proxy (every attempt of
	// every call), ChaosBroken those the network broke (no response, or a
	// body cut short).
	Chaos         string `json:"chaos,omitempty"`
	ChaosRequests int64  `json:"chaos_requests,omitempty"`
	ChaosBroken   int64  `json:"chaos_broken_requests,omitempty"`
	// ChaosBrokenSamples describes the first broken exchanges.
	ChaosBrokenSamples []string `json:"chaos_broken_samples,omitempty"`
	// DoneUnseen counts the keys done in the ledger table whose Complete
	// the worker never saw succeed (the response was lost, or came after the
	// invocation's deadline): processed all the same.
	DoneUnseen int `json:"done_but_unseen_by_the_worker,omitempty"`
	// LostDetail describes up to 20 lost messages (kind, deliveries, the
	// ledger entry of their key): a lost message is a bug to find.
	LostDetail []string `json:"lost_detail,omitempty"`
	// Receives is every delivery of the sent messages to the handler;
	// ExtraReceives what exceeds one per message.
	Receives      int `json:"receives"`
	ExtraReceives int `json:"extra_receives"`
	// LostReceives counts receives the SQS emulator counted (a message's
	// ApproximateReceiveCount at its last delivery) that never reached the
	// handler: a ReceiveMessage whose response was lost on the way, its
	// messages in flight until their visibility timeout.
	LostReceives int `json:"lost_receives"`
	// ReceiveErrors counts the mapping's receives that failed at the
	// client after the SDK's retries: lost receives without one were lost
	// silently (a first attempt the SDK retried, or a response never got).
	ReceiveErrors int64    `json:"receive_errors"`
	Failures      []string `json:"failures,omitempty"`
	// Mix is the generated mix's name (empty for a workload file).
	Mix string `json:"mix,omitempty"`
	// Requests are the AWS calls of the drain, per 1,000 tasks, and what
	// they cost per million tasks.
	Requests *Requests `json:"requests,omitempty"`
	// Recovery is the outage mix's last phase: the dependency back up and
	// its dead letters redriven and processed, counted apart.
	Recovery *Recovery `json:"recovery,omitempty"`
}

// InvocationStats are the handler invocations of a set of messages.
type InvocationStats struct {
	Messages int     `json:"messages"`
	Min      int     `json:"min"`
	Max      int     `json:"max"`
	Mean     float64 `json:"mean"`
	Want     int     `json:"want,omitempty"`
	Off      int     `json:"off_target,omitempty"`
}

func statsOf(counts []int, want int) InvocationStats {
	s := InvocationStats{Messages: len(counts), Want: want}
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

// Print writes the figures for a reader: the accounting line, the dead
// letters by reason, the musts and the rates.
func (r *Result) Print(out io.Writer) {
	fmt.Fprintf(out, "\n%s\n", r.Accounting.Line())
	reasons := slices.Sorted(maps.Keys(r.ByReason))
	for _, reason := range reasons {
		fmt.Fprintf(out, "  dead-lettered %-26s %d\n", reason, r.ByReason[deadletter.Reason(reason)])
	}
	fmt.Fprintf(out, "lost %d (must be 0); duplicate side effects %d (must be 0, per the ledger)\n", r.Lost, r.DuplicateEffects)
	for _, d := range r.LostDetail {
		fmt.Fprintf(out, "  lost: %s\n", d)
	}
	if r.DoneUnseen > 0 {
		fmt.Fprintf(out, "keys done in the ledger whose Complete the worker saw fail: %d (processed; the redelivery was acknowledged as a duplicate)\n", r.DoneUnseen)
	}
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
	fmt.Fprintf(out, "receives lost on the way (counted by the queue, never delivered to the handler): %d; receives that failed at the client: %d\n", r.LostReceives, r.ReceiveErrors)
	if r.Chaos != "" {
		fmt.Fprintf(out, "chaos %s: %d receives for %d messages (%d extra); %d extra dead letters, %d messages ended other than their kind says; the network broke %d of %d exchanges through the proxy\n",
			r.Chaos, r.Receives, r.Tasks, r.ExtraReceives, r.ExtraDeadLetters, len(r.Unexpected), r.ChaosBroken, r.ChaosRequests)
		for _, b := range r.ChaosBrokenSamples {
			fmt.Fprintf(out, "  broken: %s\n", b)
		}
	}
	fmt.Fprintf(out, "active drain %.1fs (until the last invocation returned): %.0f messages/s\n", r.ActiveSeconds, r.ActiveMsgsPerSec)
	fmt.Fprintf(out, "sent in %.1fs; drained in %.1fs with %d invocations (%.0f ms each on average): %.0f messages/s through the pipeline\n",
		r.SendSeconds, r.DrainSeconds, r.Invocations, r.HandlerMsPerInvocation, r.PipelineMsgsPerSec)
	if r.RawMessages > 0 {
		fmt.Fprintf(out, "emulator raw receive+delete: %.0f messages/s (%d messages, same pollers); pipeline/raw = %.2f\n",
			r.RawMsgsPerSec, r.RawMessages, r.Ratio)
		fmt.Fprintf(out, "ledger: %.2f calls per message; the ledger's own calls on the DynamoDB emulator alone: %.0f/s with the same concurrency (a ceiling of about %.0f messages/s)\n",
			r.LedgerCallsPerMsg, r.LedgerRawCallsPerSec, r.LedgerRawCallsPerSec/max(r.LedgerCallsPerMsg, 1))
	}
	if r.Requests != nil {
		r.Requests.Print(out)
	}
	if r.Recovery != nil {
		r.Recovery.Print(out)
	}
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
				_, err := l.Begin(ctx, key, owner, "", now, time.Minute)
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

// deadLetters scans the DLQ read-only and tags every message, and checks the
// scan against the DLQ's depth: a receive whose response was lost on the way
// (docs/local.md) hides its messages from the scan for the scan's visibility
// timeout, so a short scan is repeated after it, the results joined by
// message id.
func deadLetters(ctx context.Context, l *runner.Local, api triage.ScanAPI, tasks int) ([]dlq.Tagged, error) {
	opts := triage.ScanOptions{MaxMessages: 10 * tasks, Receivers: 4, MaxDuration: 10 * time.Minute, VisibilityTimeout: 5 * time.Second}
	byID := map[string]dlq.Tagged{}
	for try := 0; ; try++ {
		depth, err := l.Depth(ctx, l.Queues.DLQURL)
		if err != nil {
			return nil, err
		}
		msgs, _, err := triage.Scan(ctx, api, l.Queues.DLQURL, opts)
		if err != nil {
			return nil, err
		}
		for _, m := range msgs {
			t := triage.Tag(m)
			byID[t.MessageID] = t
		}
		if len(byID) >= depth || try == 3 {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(opts.VisibilityTimeout + time.Second):
		}
	}
	out := make([]dlq.Tagged, 0, len(byID))
	for _, t := range byID {
		out = append(out, t)
	}
	return out, nil
}

// ledgerTable reads the whole ledger table of the run (a Scan on the direct
// client) into a map by key.
func ledgerTable(ctx context.Context, l *runner.Local) (map[string]ledger.Entry, error) {
	out := map[string]ledger.Entry{}
	pages := dynamodb.NewScanPaginator(l.DynamoDB, &dynamodb.ScanInput{TableName: aws.String(l.Table), ConsistentRead: aws.Bool(true)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("read the ledger table: %w", err)
		}
		for _, item := range page.Items {
			e, err := ledger.DecodeItem(item)
			if err != nil {
				return nil, err
			}
			out[e.Key] = e
		}
	}
	return out, nil
}

// lostDetail describes up to max messages neither dead-lettered nor done.
func lostDetail(l *runner.Local, sent []workload.Sent, tagged []dlq.Tagged, table map[string]ledger.Entry, completed map[string]int, max int) []string {
	dead := map[string]bool{}
	for _, d := range workload.DeadLetters(tagged) {
		dead[d.OriginalMessageID] = true
	}
	var out []string
	for _, s := range sent {
		if len(out) == max {
			break
		}
		lk := ledger.Key(l.Pipeline.Name, s.Task.Tenant, s.Task.Key)
		e, ok := table[lk]
		if dead[s.MessageID] || (ok && e.State == ledger.StateDone) {
			continue
		}
		entry := "no ledger entry"
		if ok {
			entry = fmt.Sprintf("ledger %s, owner is this message %v, effect started %v, receipt %v, dead-lettered %d, lease until %s",
				e.State, e.Owner == s.MessageID, e.EffectStarted, e.Receipt != "", e.DeadLetterCount, e.LeaseUntil.Format(time.RFC3339))
		}
		out = append(out, fmt.Sprintf("%s (%s, key %q): %d deliveries, %d completes seen; %s", s.MessageID, s.Task.Kind, s.Task.Key, l.Attempts(s.MessageID), completed[lk], entry))
	}
	return out
}
