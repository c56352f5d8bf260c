package loadbench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/agentdlq/agentdlq/breaker"
	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/functions/sampleworker"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/local/runner"
	"github.com/agentdlq/agentdlq/local/topology"
	"github.com/agentdlq/agentdlq/local/workload"
	"github.com/agentdlq/agentdlq/pipeline"
)

// OutageConfig is a simulated outage at a steady rate: tasks are sent at
// Rate a second for Before + Outage + After, every other one needing
// OutageDependency (args.fault names it) and the rest not; the dependency
// is down from Before for Outage. Run it once with the pipeline's breaker
// on and once off to compare.
type OutageConfig struct {
	// AWS is required: the clients' configuration, pointed at the emulators.
	AWS aws.Config
	// Pipeline is required: a standard pipeline, used as given (its
	// breaker on or off).
	Pipeline *pipeline.Pipeline
	// Rate is optional (default 20): tasks sent a second, half of them affected.
	Rate int
	// Before, Outage and After are optional (defaults 30 s, 90 s, 30 s):
	// steady sending before the outage, the outage, and after it.
	Before, Outage, After time.Duration
	// Settle is optional (default 5 minutes): how long, after the sending,
	// the hot queue may take to drain before the run is called.
	Settle time.Duration
	// Pollers is optional (default: the pipeline's max_concurrency).
	Pollers int
	// Run is optional (default "outage-HHMMSS"): names the queues and table.
	Run string
	// Progress is optional (default io.Discard): a line per phase.
	Progress io.Writer
}

// OutageResult is one outage run. The musts (Failures) with the breaker
// on: no affected task dead-lettered, the healthy half at least 90 % of
// its throughput during the outage, at most 2 receives spent per affected
// task, the backlog drained, 0 lost, 0 duplicate effects. Off, only 0 lost
// and 0 duplicate effects are musts: the rest is what the outage costs.
type OutageResult struct {
	Pipeline string         `json:"pipeline"`
	Breaker  bool           `json:"breaker"`
	Settings string         `json:"settings"`
	Rate     int            `json:"rate_per_second"`
	Before   float64        `json:"before_seconds"`
	Outage   float64        `json:"outage_seconds"`
	After    float64        `json:"after_seconds"`
	Sent     int            `json:"sent"`
	Affected int            `json:"affected"`
	Healthy  int            `json:"healthy"`
	Done     map[string]int `json:"done"`          // by "affected"/"healthy"
	Dead     map[string]int `json:"dead_lettered"` // by reason
	// HealthyPerSecBefore and HealthyPerSecDuring: healthy tasks done a
	// second before the outage and during it; Ratio is during / before.
	HealthyPerSecBefore float64 `json:"healthy_per_second_before"`
	HealthyPerSecDuring float64 `json:"healthy_per_second_during"`
	HealthyRatio        float64 `json:"healthy_ratio"`
	// Receives spent of their budget by the affected tasks done (the
	// worker's Record.ReceiveCount on the receive that finished them).
	ReceivesMean float64 `json:"receives_per_affected_mean"`
	ReceivesMax  int     `json:"receives_per_affected_max"`
	// DrainSeconds: from the outage's end until the last affected task was done.
	DrainSeconds     float64  `json:"drain_after_recovery_seconds"`
	InFlight         int      `json:"in_flight"`
	Lost             int      `json:"lost"`
	DuplicateEffects int      `json:"duplicate_effects"`
	Requeues         int      `json:"requeues"`
	Transitions      []string `json:"transitions"`
	Failures         []string `json:"failures,omitempty"`
}

// RunOutage runs one simulated outage.
func RunOutage(ctx context.Context, cfg OutageConfig) (*OutageResult, error) {
	p := cfg.Pipeline
	if p == nil || p.FIFO {
		return nil, errors.New("loadbench: the outage needs a standard pipeline")
	}
	cfg.defaults()
	say := func(format string, args ...any) { fmt.Fprintf(cfg.Progress, format+"\n", args...) }
	dir, err := os.MkdirTemp("", "agentdlq-outage-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }() // a temporary directory: a leftover costs nothing
	deps := sampleworker.DependencyDir{Dir: dir}

	var (
		mu   sync.Mutex
		done = map[string]outageFate{} // ledger key -> the receive that finished it
		emf  bytes.Buffer
	)
	lc := runner.Config{AWS: cfg.AWS, Pipeline: p, Names: topology.Names{Hot: p.Name + "-" + cfg.Run, DLQ: p.Name + "-" + cfg.Run + "-dlq"},
		Table: "agentdlq-ledger-" + cfg.Run, WorkerVersion: "outage", Concurrency: sampleworker.LambdaConcurrency, Dependencies: deps,
		Metrics: lockedWriter{mu: &mu, w: &emf},
		Observe: func(tenant, key string, receives int, err error) {
			if err != nil {
				return
			}
			mu.Lock()
			done[ledger.Key(p.Name, tenant, key)] = outageFate{receives, time.Now()}
			mu.Unlock()
		}}
	l, err := runner.Setup(ctx, lc)
	if err != nil {
		return nil, err
	}
	l.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil))
	mctx, stopMapping := context.WithCancel(ctx)
	defer stopMapping()
	m, mc, err := l.Mapping(runner.DrainOptions{Pollers: cfg.Pollers}, false)
	if err != nil {
		return nil, err
	}
	mapped := make(chan error, 1)
	go func() { _, err := m.Run(mctx); mapped <- err }()

	res := &OutageResult{Pipeline: p.Name, Breaker: p.Breaker.Enabled, Rate: cfg.Rate,
		Before: cfg.Before.Seconds(), Outage: cfg.Outage.Seconds(), After: cfg.After.Seconds(),
		Done: map[string]int{}, Dead: map[string]int{}}
	if b := p.Breaker; b.Enabled {
		res.Settings = fmt.Sprintf("threshold %d in %ds of %d tenants at least, open %ds, %d probes, ramp %ds, tolerance %ds, retry_after_requeues %d",
			b.Threshold, b.WindowSeconds, b.MinTenants, b.OpenSeconds, b.Probes, b.RampSeconds, b.ToleranceSeconds, p.RetryAfterRequeues)
	}
	say("outage run %s (breaker %v): %d tasks/s for %s, %s down from %s for %s; %d pollers",
		cfg.Run, p.Breaker.Enabled, cfg.Rate, cfg.Before+cfg.Outage+cfg.After, OutageDependency, cfg.Before, cfg.Outage, mc.Pollers)

	// Steady sending, a tick every 100 ms.
	start := time.Now()
	downAt, upAt := start.Add(cfg.Before), start.Add(cfg.Before+cfg.Outage)
	sent, err := sendSteadily(ctx, l, cfg, deps, start, say)
	if err != nil {
		return nil, err
	}
	say("sent %d; draining", len(sent))
	if err := l.WaitEmpty(ctx, l.Queues.HotURL, cfg.Settle); err != nil {
		say("not drained: %v", err)
	}
	stopMapping()
	if err := <-mapped; err != nil && !errors.Is(err, context.Canceled) {
		return nil, err
	}

	tagged, err := deadLetters(ctx, l, l.SQS, len(sent))
	if err != nil {
		return nil, err
	}
	deadBody := map[string]deadletter.Reason{}
	for _, t := range tagged {
		deadBody[t.Body] = t.Reason
	}
	table, err := ledgerTable(ctx, l)
	if err != nil {
		return nil, err
	}
	depth, err := l.Depth(ctx, l.Queues.HotURL)
	if err != nil {
		return nil, err
	}
	res.InFlight = depth
	started, completed, _ := l.Ledger.Counts()
	res.DuplicateEffects = duplicateEffects(started, completed)
	mu.Lock()
	defer mu.Unlock()
	res.tally(sent, done, table, deadBody, start, downAt, upAt, cfg)
	res.readMetrics(emf.String(), start)
	res.judge()
	return res, nil
}

// defaults fills in what cfg leaves zero.
func (cfg *OutageConfig) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&cfg.Before, 30*time.Second)
	def(&cfg.Outage, 90*time.Second)
	def(&cfg.After, 30*time.Second)
	def(&cfg.Settle, 5*time.Minute)
	if cfg.Rate == 0 {
		cfg.Rate = 20
	}
	if cfg.Run == "" {
		cfg.Run = "outage-" + time.Now().UTC().Format("150405")
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
}

// outageFate is the receive that finished a task, and when.
type outageFate struct {
	receives int
	at       time.Time
}

// sendSteadily sends cfg.Rate tasks a second from start, every other one
// needing the outage's dependency, which is down from cfg.Before for
// cfg.Outage; it returns what was sent.
func sendSteadily(ctx context.Context, l *runner.Local, cfg OutageConfig, deps sampleworker.DependencyDir, start time.Time, say func(string, ...any)) ([]workload.Sent, error) {
	var sent []workload.Sent
	downAt, upAt, end := start.Add(cfg.Before), start.Add(cfg.Before+cfg.Outage), start.Add(cfg.Before+cfg.Outage+cfg.After)
	isDown := false
	n := 0
	tick := time.NewTicker(100 * time.Millisecond)
	for now := start; now.Before(end); now = <-tick.C {
		switch {
		case !isDown && !now.Before(downAt) && now.Before(upAt):
			if err := deps.Set(OutageDependency, true); err != nil {
				return sent, err
			}
			isDown = true
			say("%s down", OutageDependency)
		case isDown && !now.Before(upAt):
			if err := deps.Set(OutageDependency, false); err != nil {
				return sent, err
			}
			isDown = false
			say("%s up", OutageDependency)
		}
		want := int(now.Sub(start).Seconds()*float64(cfg.Rate)) + 1
		var batch []workload.Task
		for ; n < want; n++ {
			k := workload.OK
			if n%2 == 0 {
				k = workload.DependencyOpen
			}
			batch = append(batch, workload.Make(cfg.Run, n, k, -1))
		}
		if len(batch) > 0 {
			s, err := l.Send(ctx, batch, 2)
			if err != nil {
				return sent, err
			}
			sent = append(sent, s...)
		}
	}
	tick.Stop()
	if isDown {
		_ = deps.Set(OutageDependency, false)
	}
	return sent, nil
}

// tally counts what became of each task sent: done (by half, and when),
// dead-lettered (by reason) or missing, and the healthy half's throughput
// before and during the outage.
func (res *OutageResult) tally(sent []workload.Sent, done map[string]outageFate, table map[string]ledger.Entry, deadBody map[string]deadletter.Reason,
	start, downAt, upAt time.Time, cfg OutageConfig) {
	var recv []int
	var healthyBefore, healthyDuring int
	var lastAffected time.Time
	missing := 0
	for _, s := range sent {
		affected := s.Task.Kind == workload.DependencyOpen
		half := "healthy"
		if affected {
			half = "affected"
			res.Affected++
		} else {
			res.Healthy++
		}
		res.Sent++
		k := ledger.Key(res.Pipeline, s.Task.Tenant, s.Task.Key)
		f, ok := done[k]
		if !ok && table[k].State == ledger.StateDone {
			ok = true // done though the worker did not see its Complete succeed
		}
		if r, isDead := deadBody[s.Task.Body]; isDead {
			res.Dead[string(r)]++
			continue
		}
		if !ok {
			missing++
			continue
		}
		res.Done[half]++
		if affected {
			recv = append(recv, f.receives)
			if f.at.After(lastAffected) {
				lastAffected = f.at
			}
			continue
		}
		switch {
		case f.at.Before(downAt) && f.at.After(start.Add(5*time.Second)):
			healthyBefore++
		case !f.at.Before(downAt) && f.at.Before(upAt):
			healthyDuring++
		}
	}
	res.Lost = max(missing-res.InFlight, 0)
	res.HealthyPerSecBefore = float64(healthyBefore) / max(cfg.Before.Seconds()-5, 1)
	res.HealthyPerSecDuring = float64(healthyDuring) / cfg.Outage.Seconds()
	if res.HealthyPerSecBefore > 0 {
		res.HealthyRatio = res.HealthyPerSecDuring / res.HealthyPerSecBefore
	}
	sum := 0
	for _, r := range recv {
		sum += r
		res.ReceivesMax = max(res.ReceivesMax, r)
	}
	if len(recv) > 0 {
		res.ReceivesMean = float64(sum) / float64(len(recv))
	}
	if !lastAffected.IsZero() {
		res.DrainSeconds = max(lastAffected.Sub(upAt).Seconds(), 0)
	}
}

// readMetrics reads the worker's metric lines (EMF): the requeues, and the
// breaker's transitions, timed from start.
func (res *OutageResult) readMetrics(emf string, start time.Time) {
	for line := range strings.Lines(emf) {
		var d struct {
			To         string `json:"To"`
			Cause      string `json:"Cause"`
			Requeued   int    `json:"Requeued"`
			Transition int    `json:"BreakerTransitions"`
			AWS        struct {
				Timestamp int64 `json:"Timestamp"`
			} `json:"_aws"`
		}
		if json.Unmarshal([]byte(line), &d) != nil {
			continue
		}
		res.Requeues += d.Requeued
		if d.Transition > 0 {
			at := time.UnixMilli(d.AWS.Timestamp).Sub(start).Seconds()
			res.Transitions = append(res.Transitions, fmt.Sprintf("%.0fs %s (%s)", at, d.To, d.Cause))
		}
	}
}

// judge lists the musts the run broke: 0 lost and 0 duplicate effects;
// with the breaker on, nothing dead-lettered as dependency_open, the
// healthy half at 90 % of its throughput, at most 2 receives an affected
// task, and the backlog drained.
func (res *OutageResult) judge() {
	fail := func(f string, a ...any) { res.Failures = append(res.Failures, fmt.Sprintf(f, a...)) }
	if res.Lost > 0 {
		fail("%d lost", res.Lost)
	}
	if res.DuplicateEffects > 0 {
		fail("%d duplicate effects", res.DuplicateEffects)
	}
	if res.Breaker {
		if d := res.Dead[string(deadletter.ReasonDependencyOpen)]; d > 0 {
			fail("%d affected tasks dead-lettered as dependency_open", d)
		}
		if res.HealthyRatio < 0.9 {
			fail("healthy throughput during the outage %.0f %% of before, want at least 90 %%", 100*res.HealthyRatio)
		}
		if res.ReceivesMax > 2 {
			fail("an affected task spent %d receives, want at most 2", res.ReceivesMax)
		}
		if res.InFlight > 0 || res.Done["affected"] < res.Affected {
			fail("backlog not drained: %d affected done of %d, %d in flight", res.Done["affected"], res.Affected, res.InFlight)
		}
	}
}

// Print writes the result as text.
func (r *OutageResult) Print(w io.Writer) {
	on := "off"
	if r.Breaker {
		on = "on (" + r.Settings + ")"
	}
	fmt.Fprintf(w, "outage of %s: %.0f s at %d tasks/s (%.0f s before, %.0f s after), breaker %s\n", OutageDependency, r.Outage, r.Rate, r.Before, r.After, on)
	fmt.Fprintf(w, "  sent %d: %d affected (need %s), %d healthy\n", r.Sent, r.Affected, OutageDependency, r.Healthy)
	fmt.Fprintf(w, "  done: %d affected, %d healthy; dead-lettered %v; in flight %d; lost %d; duplicate effects %d\n",
		r.Done["affected"], r.Done["healthy"], r.Dead, r.InFlight, r.Lost, r.DuplicateEffects)
	fmt.Fprintf(w, "  healthy throughput: %.1f/s before, %.1f/s during the outage (%.0f %%)\n", r.HealthyPerSecBefore, r.HealthyPerSecDuring, 100*r.HealthyRatio)
	fmt.Fprintf(w, "  receives spent per affected task done: mean %.2f, max %d; uncounted requeues %d\n", r.ReceivesMean, r.ReceivesMax, r.Requeues)
	fmt.Fprintf(w, "  last affected task done %.0f s after recovery\n", r.DrainSeconds)
	if len(r.Transitions) > 0 {
		fmt.Fprintf(w, "  breaker: %s\n", strings.Join(r.Transitions, ", "))
	}
	for _, f := range r.Failures {
		fmt.Fprintf(w, "  FAIL: %s\n", f)
	}
}

// WithOutageBreaker returns a copy of p with the breaker on, its window,
// open time and ramp scaled to a short outage (the defaults are for ten
// minutes): threshold 5 in 20 s of 2 tenants at least (the default: the
// affected tasks are acme's and initech's), open 10 s, 3 probes, ramp
// 15 s, tolerance the outage and a minute, and retry_after_requeues as
// many as that needs.
func WithOutageBreaker(p *pipeline.Pipeline, outage time.Duration) *pipeline.Pipeline {
	cp := *p
	cp.Breaker = pipeline.Breaker{Enabled: true, Threshold: 5, MinTenants: breaker.DefaultMinTenants, WindowSeconds: 20, OpenSeconds: 10, Probes: 3, RampSeconds: 15,
		ToleranceSeconds: int(outage.Seconds()) + 60}
	cp.RetryAfterRequeues = min(max(cp.RetryAfterRequeues, cp.Breaker.RequiredRequeues()), 100)
	return &cp
}

// ScaledBreakerBelow is the outage below which OutageBreaker scales the
// breaker's settings (WithOutageBreaker): from it on, the pipeline's
// defaults are the settings a platform team would run for such an outage.
const ScaledBreakerBelow = 5 * time.Minute

// WithDefaultBreaker returns a copy of p with the breaker on with the
// pipeline's defaults (threshold 5 in 60 s, open 30 s, 3 probes, ramp
// 60 s), tolerance the outage and a minute, and retry_after_requeues as
// many as that needs (at most 100: with open 30 s a tolerance of up to
// 686 s, so an outage of up to about 10 minutes and a half).
func WithDefaultBreaker(p *pipeline.Pipeline, outage time.Duration) *pipeline.Pipeline {
	cp := *p
	cp.Breaker = pipeline.Breaker{Enabled: true, ToleranceSeconds: int(outage.Seconds()) + 60}
	cp.ApplyDefaults()
	cp.RetryAfterRequeues = min(max(cp.RetryAfterRequeues, cp.Breaker.RequiredRequeues()), 100)
	return &cp
}

// OutageBreaker is the breaker the outage bench runs with: scaled
// (WithOutageBreaker) for an outage shorter than ScaledBreakerBelow, the
// pipeline's defaults (WithDefaultBreaker) for a longer one.
func OutageBreaker(p *pipeline.Pipeline, outage time.Duration) *pipeline.Pipeline {
	if outage < ScaledBreakerBelow {
		return WithOutageBreaker(p, outage)
	}
	return WithDefaultBreaker(p, outage)
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
