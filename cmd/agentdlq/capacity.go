package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentdlq/agentdlq/capacity"
	"github.com/agentdlq/agentdlq/pipeline"
)

type capacityFlags struct {
	pipeline    string
	rate        float64
	toolLatency string
	payload     int
	measured    string
	out         *output
}

func newCapacityCmd(g *globalFlags) *cobra.Command {
	f := &capacityFlags{}
	cmd := &cobra.Command{
		Use:   "capacity --pipeline P --rate R [--tool-latency p50,p99] [--payload-bytes N] [-o table|json]",
		Short: "Size a pipeline for a task rate: settings to use, concurrency and cost predicted, the first quota the rate hits",
		Long: `capacity sizes a pipeline of pipelines.json for a sustained rate of R tasks a
second. It recommends the batch size, the batching window, the event source
mapping's maximum concurrency or provisioned pollers, the worker's memory, the
processor's Concurrency and the worker's reserved concurrency (never below the
mapping's maximum, so the drain does not throttle itself); it predicts the
Lambda concurrency (p50 and p99), the billed GB-seconds, the ledger's write
units a second, the drain's and the worker's cost per million tasks and a
month; it checks the pipeline's own settings against the rate (the event
source's maximum concurrency or provisioned pollers, the reserved
concurrency, batching, memory, visibility timeout) and says which fails and
why; and it lists the quotas the rate comes near, the nearest first, each
with its documented figure and source: the mapping's scaling (300 a minute,
1,000 batches), the account's concurrency (1,000 by default), FIFO
throughput, DynamoDB's table and partition throughput, StartMessageMoveTask's
500 messages a second and the in-flight limit.

It is arithmetic, no AWS call: documented figures, public prices (us-east-1,
arm64, dated) and the requests per task the load bench measured on its
mostly-ok mix (agentdlq local bench --mix cost). --tool-latency is the tool
call's latency at p50 and p99 (default 200ms,1s; a bare number is
milliseconds); --payload-bytes a task's size on the queue (default 1024).
--measured FILE takes the requests per task from a bench run of your own
instead (the JSON lines of agentdlq local bench -o json: the mostly-ok
mix's line if there is one, else the last). docs/deploying.md shows how to
read it.`,
		Example: `  agentdlq capacity --pipeline agent-tasks --rate 50
  agentdlq capacity --pipeline agent-tasks --rate 2000 --tool-latency 300ms,2s --payload-bytes 4096
  agentdlq capacity --pipeline agent-steps --rate 400 -o json | jq .first_quota
  agentdlq local bench --mix cost --tasks 2000 -o json > cost.jsonl
  agentdlq capacity --pipeline agent-tasks --rate 200 --measured cost.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runCapacity(g, f, c.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&f.pipeline, "pipeline", "", "pipeline of pipelines.json (required)")
	cmd.Flags().Float64Var(&f.rate, "rate", 0, "sustained task rate, tasks a second (required)")
	cmd.Flags().StringVar(&f.toolLatency, "tool-latency", "200ms,1s", "the tool call's latency at p50,p99 (durations; a bare number is milliseconds)")
	cmd.Flags().IntVar(&f.payload, "payload-bytes", 1024, "a task's size on the queue, in bytes")
	cmd.Flags().StringVar(&f.measured, "measured", "", "requests per task measured by a bench run of your own: the JSON lines of local bench -o json")
	f.out = addOutput(cmd, formatTable, formatJSON)
	return cmd
}

func runCapacity(g *globalFlags, f *capacityFlags, out io.Writer) error {
	if f.pipeline == "" {
		return withExit(exitRefused, errors.New("--pipeline is required"))
	}
	if !(f.rate > 0) {
		return withExit(exitRefused, fmt.Errorf("--rate %v: a positive number of tasks a second", f.rate))
	}
	p50, p99, err := parseLatencies(f.toolLatency)
	if err != nil {
		return withExit(exitRefused, err)
	}
	p, err := g.loadPipeline(f.pipeline)
	if err != nil {
		return err
	}
	in := capacity.Input{Pipeline: p, Rate: f.rate, ToolP50: p50, ToolP99: p99, PayloadBytes: f.payload}
	if f.measured != "" {
		pt, err := readMeasured(f.measured)
		if err != nil {
			return withExit(exitRefused, err)
		}
		in.PerTask = pt
	}
	plan, err := capacity.Size(in)
	if err != nil {
		if errors.Is(err, capacity.ErrInput) {
			return withExit(exitRefused, err)
		}
		return err
	}
	if f.out.JSON() {
		return writeJSON(out, plan)
	}
	printPlan(out, p, plan)
	return nil
}

// parseLatencies reads "p50,p99": two durations, or milliseconds.
func parseLatencies(s string) (p50, p99 time.Duration, err error) {
	parts := strings.Split(s, ",")
	if len(parts) != 2 {
		return 0, 0, fmt.Errorf("--tool-latency %q: p50,p99 such as 200ms,1s", s)
	}
	var ds [2]time.Duration
	for i, part := range parts {
		part = strings.TrimSpace(part)
		if ms, perr := strconv.ParseFloat(part, 64); perr == nil {
			ds[i] = time.Duration(ms * float64(time.Millisecond))
		} else if ds[i], perr = time.ParseDuration(part); perr != nil {
			return 0, 0, fmt.Errorf("--tool-latency %q: %q is not a duration", s, part)
		}
		if ds[i] < 0 {
			return 0, 0, fmt.Errorf("--tool-latency %q: a latency is not negative", s)
		}
	}
	if ds[1] < ds[0] {
		return 0, 0, fmt.Errorf("--tool-latency %q: p99 is below p50", s)
	}
	return ds[0], ds[1], nil
}

func printPlan(out io.Writer, p *pipeline.Pipeline, pl *capacity.Plan) {
	rec, pr := pl.Recommend, pl.Predict
	kind := "standard"
	if pl.FIFO {
		kind = "FIFO"
	}
	fmt.Fprintf(out, "pipeline %s (%s) at %g tasks/s, tool %g ms p50 / %g ms p99, %d-byte tasks\n\n", pl.Pipeline, kind, pl.Rate, pl.ToolP50Ms, pl.ToolP99Ms, pl.Payload)
	fmt.Fprintf(out, "recommended                        now in pipelines.json\n")
	row := func(name string, v, now string) { fmt.Fprintf(out, "  %-30s %-14s %s\n", name, v, now) }
	row("batch size", strconv.Itoa(rec.BatchSize), strconv.Itoa(p.BatchSize))
	row("batching window (s)", strconv.Itoa(rec.BatchWindowSeconds), strconv.Itoa(p.BatchWindowSeconds))
	nowPollers, nowMax := "none", "none"
	if pp := p.ProvisionedPollers; pp != nil {
		nowPollers = fmt.Sprintf("%d..%d", pp.Minimum, pp.Maximum)
	} else {
		nowMax = strconv.Itoa(p.MaxConcurrency)
	}
	if rec.ProvisionedPollers != nil {
		row("provisioned pollers", fmt.Sprintf("%d..%d", rec.ProvisionedPollers.Min, rec.ProvisionedPollers.Max), nowPollers)
		row("maximum concurrency", "none", nowMax)
	} else {
		row("maximum concurrency", strconv.Itoa(rec.MaxConcurrency), nowMax)
		if p.ProvisionedPollers != nil {
			row("provisioned pollers", "none", nowPollers)
		}
	}
	row("reserved concurrency", strconv.Itoa(rec.ReservedConcurrency), strconv.Itoa(p.ReservedConcurrency))
	row("worker memory (MB)", strconv.Itoa(rec.WorkerMemoryMB), strconv.Itoa(p.WorkerMemoryMB))
	row("processor Concurrency", strconv.Itoa(rec.ProcessorConcurrency), "16 (the sample worker's)")
	row("visibility timeout (s) >=", strconv.Itoa(rec.VisibilityTimeoutSeconds), strconv.Itoa(p.VisibilityTimeoutSeconds))
	for _, w := range rec.Why {
		fmt.Fprintf(out, "  - %s\n", w)
	}
	fmt.Fprintf(out, "\nthe pipeline's settings at this rate\n")
	for _, c := range pl.Checks {
		mark := "ok  "
		if !c.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(out, "  %s %-28s %s (recommended %s)\n", mark, c.Setting, c.Pipeline, c.Recommended)
		if c.Note != "" {
			fmt.Fprintf(out, "       %s\n", c.Note)
		}
	}
	fmt.Fprintf(out, "\npredicted\n")
	fmt.Fprintf(out, "  records per invocation         %.1f (%.1f invocations/s)\n", pr.RecordsPerInvocation, pr.InvocationsPerSecond)
	fmt.Fprintf(out, "  billed ms per invocation       %.0f p50, %.0f p99 (the drain's own part %.0f)\n", pr.BilledMsP50, pr.BilledMsP99, pr.BilledMsDrainOnly)
	fmt.Fprintf(out, "  Lambda concurrency             %.1f p50, %.1f p99\n", pr.LambdaConcurrency, pr.LambdaConcurrencyP99)
	fmt.Fprintf(out, "  billed GB-seconds              %.2f a second, %.0f a month\n", pr.GBSecondsPerSecond, pr.GBSecondsPerMonth)
	fmt.Fprintf(out, "  ledger units                   %.0f writes/s, %.1f reads/s\n", pr.LedgerWriteUnitsPerS, pr.LedgerReadUnitsPerS)
	fmt.Fprintf(out, "  SQS requests (the drain's)     %.0f/s\n", pr.SQSRequestsPerSecond)
	fmt.Fprintf(out, "  messages in flight             %.0f\n", pr.InFlightMessages)
	fmt.Fprintf(out, "  cost per million tasks         $%.2f the drain's own, $%.2f with the tool's time (%s %s, prices of %s)\n",
		pr.DrainCostPerMillion.Total, pr.WorkerCostPerMillion.Total, pl.Prices.Region, pl.Prices.Arch, pl.Prices.Date)
	fmt.Fprintf(out, "  cost a month at this rate      $%.0f the drain's own, $%.0f with the tool's time\n", pr.DrainCostPerMonth, pr.WorkerCostPerMonth)
	fmt.Fprintf(out, "\nquotas, the nearest first\n")
	for _, q := range pl.Quotas {
		fmt.Fprintf(out, "  %5.1f%%  %-45s %.0f of %.0f %s\n", 100*q.Share, q.Name, q.Used, q.Limit, q.Unit)
		if q.Note != "" {
			fmt.Fprintf(out, "          %s\n", q.Note)
		}
		fmt.Fprintf(out, "          %s\n", q.Source)
	}
	if pl.FirstQuota != "" {
		fmt.Fprintf(out, "\nfirst quota: %s, reached near %.0f tasks/s\n", pl.FirstQuota, pl.MaxRate)
	}
}

// readMeasured reads the requests per task of a bench run from the JSON
// lines of `agentdlq local bench -o json`: the mostly-ok mix's, else the
// last line that has them.
func readMeasured(path string) (*capacity.PerTask, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--measured: %w", err)
	}
	var found *capacity.PerTask
	for i, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var res struct {
			Requests *struct {
				Mix     string           `json:"mix"`
				PerTask capacity.PerTask `json:"per_task"`
			} `json:"requests"`
		}
		if err := json.Unmarshal([]byte(line), &res); err != nil {
			return nil, fmt.Errorf("--measured %s: line %d: %w", path, i+1, err)
		}
		if res.Requests == nil {
			continue
		}
		pt := res.Requests.PerTask
		if pt.Deliveries <= 0 || pt.Invocations <= 0 {
			return nil, fmt.Errorf("--measured %s: line %d has no deliveries or invocations per task", path, i+1)
		}
		found = &pt
		if res.Requests.Mix == "mostly-ok" {
			break
		}
	}
	if found == nil {
		return nil, fmt.Errorf("--measured %s: no line of agentdlq local bench -o json with requests", path)
	}
	return found, nil
}
