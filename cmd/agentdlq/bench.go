package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/spf13/cobra"

	"github.com/agentdlq/agentdlq/bench/benchsum"
	"github.com/agentdlq/agentdlq/bench/rusage"
	"github.com/agentdlq/agentdlq/internal/sqsio"
	"github.com/agentdlq/agentdlq/ledger"
)

func newBenchCmd(_ *globalFlags) *cobra.Command {
	f := &runFlags{}
	var repeats, warmup int
	var cpuProfile string
	var out *output
	cmd := &cobra.Command{
		Use:   "bench --event FILE --repeats R [--max-receive-count N] [--fifo] [-o json|table]",
		Short: "Time the real worker handler on a Lambda SQS event file",
		Long: `bench decodes the event file once, warms up, then calls the worker's
handler R times, each repeat with a fresh in-memory ledger (so every repeat
does the full work) and a recording DLQ, and prints one JSON line:

  records, repeats, records_per_s, ns_per_record (wall), cpu_ns_per_record
  (user+sys CPU of the process, getrusage), rss_mb (peak RSS),
  failures_by_kind {poison, transient, exhausted}, ok_digest, decoder, goarch

poison counts records dead-lettered at once, exhausted those dead-lettered
on their last allowed receive (budget_exhausted, auth_config,
dependency_open), transient the batch item failures. ok_digest is the hex
SHA-256 over the lines "<messageId>:<hex SHA-256 of args>\n" of the
successful records, in event order. The JSON line is the default (scripts
read it, as they read the worker-only bench's); -o table prints the same
figures one a line.`,
		Example: `  agentdlq bench --event events/testdata/sqs-large-batch.json --repeats 2000
  agentdlq bench --event events/testdata/sqs-mixed.json --repeats 500 -o table
  agentdlq bench --event events/testdata/sqs-large-batch.json --repeats 2000 --cpuprofile cpu.prof`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if repeats < 1 || warmup < 0 {
				return withExit(2, fmt.Errorf("--repeats must be at least 1 and --warmup at least 0 (got %d, %d)", repeats, warmup))
			}
			ev, err := readSQSEvent(f.event)
			if err != nil {
				return withExit(2, err)
			}
			if len(ev.Records) == 0 {
				return withExit(2, fmt.Errorf("%s: the event has no records to time", f.event))
			}
			if cpuProfile != "" {
				pf, err := os.Create(cpuProfile)
				if err != nil {
					return err
				}
				if err := pprof.StartCPUProfile(pf); err != nil {
					_ = pf.Close() // the profile never started: that error is the one to say
					return err
				}
				defer func() {
					pprof.StopCPUProfile()
					if err := pf.Close(); err != nil {
						fmt.Fprintln(cmd.ErrOrStderr(), "agentdlq bench: --cpuprofile:", err)
					}
				}()
			}
			res, err := runBench(cmd, f, ev, repeats, warmup)
			if err != nil {
				return err
			}
			if out.JSON() {
				return writeJSONLine(cmd.OutOrStdout(), res)
			}
			return res.writeTable(cmd.OutOrStdout())
		},
	}
	f.register(cmd)
	out = addOutput(cmd, formatJSON, formatTable)
	cmd.Flags().IntVar(&repeats, "repeats", 100, "timed calls of the handler")
	cmd.Flags().IntVar(&warmup, "warmup", 5, "untimed calls before the timed ones")
	cmd.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the run to this file (go tool pprof)")
	_ = cmd.MarkFlagRequired("repeats")
	return cmd
}

// taskDecoder names the decoder agenttask.DecodeTask runs (the single-pass
// scanner), the label a bench report carries so that figures of different
// decoders are not compared: change it when the decoder changes.
const taskDecoder = "scan-v1"

type benchResult struct {
	Records        int     `json:"records"`
	Repeats        int     `json:"repeats"`
	RecordsPerS    float64 `json:"records_per_s"`
	NsPerRecord    float64 `json:"ns_per_record"`
	CPUNsPerRecord float64 `json:"cpu_ns_per_record"`
	RSSMB          float64 `json:"rss_mb"`
	// HandlerRSSMB is the peak resident set while the timed repeats ran
	// (Linux: the high-water mark is reset before them), without the
	// harness's own decoding of the event file; 0 where it cannot be read.
	HandlerRSSMB   float64           `json:"handler_rss_mb"`
	FailuresByKind benchsum.Failures `json:"failures_by_kind"`
	OKDigest       string            `json:"ok_digest"`
	DeadLetters    map[string]int    `json:"dead_letters_by_reason"`
	// Decoder names the task decoder the worker ran (taskDecoder).
	Decoder   string `json:"decoder"`
	GOARCH    string `json:"goarch"`
	GoVersion string `json:"go_version"`
}

// writeTable prints the figures one a line.
func (r *benchResult) writeTable(w io.Writer) error {
	reasons := make([]string, 0, len(r.DeadLetters))
	for k, n := range r.DeadLetters {
		reasons = append(reasons, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(reasons)
	rows := [][]string{
		{"records", fmt.Sprint(r.Records)}, {"repeats", fmt.Sprint(r.Repeats)},
		{"records/s", fmt.Sprint(r.RecordsPerS)}, {"ns/record (wall)", fmt.Sprint(r.NsPerRecord)},
		{"CPU ns/record", fmt.Sprint(r.CPUNsPerRecord)}, {"peak RSS MB", fmt.Sprint(r.RSSMB)},
		{"handler peak RSS MB", fmt.Sprint(r.HandlerRSSMB)},
		{"failures", fmt.Sprintf("poison %d, transient %d, exhausted %d", r.FailuresByKind.Poison, r.FailuresByKind.Transient, r.FailuresByKind.Exhausted)},
		{"dead letters", orDash(strings.Join(reasons, ", "))}, {"ok digest", r.OKDigest},
		{"decoder", r.Decoder}, {"build", r.GOARCH + " " + r.GoVersion},
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	for _, row := range rows {
		fmt.Fprintf(tw, "%s\t%s\n", row[0], row[1])
	}
	return tw.Flush()
}

func runBench(cmd *cobra.Command, f *runFlags, ev events.SQSEvent, repeats, warmup int) (*benchResult, error) {
	ctx := cmd.Context()
	type run struct {
		handle func() (events.SQSEventResponse, error)
		rec    *sqsio.Recorder
	}
	build := func(n int) ([]run, error) {
		runs := make([]run, n)
		for i := range runs {
			rec := &sqsio.Recorder{}
			w, err := newLocalWorker(f, ev, ledger.NewMemory(), rec, io.Discard)
			if err != nil {
				return nil, err
			}
			runs[i] = run{handle: func() (events.SQSEventResponse, error) { return w.Handle(ctx, ev) }, rec: rec}
		}
		return runs, nil
	}
	warm, err := build(warmup)
	if err != nil {
		return nil, err
	}
	for _, r := range warm {
		if _, err := r.handle(); err != nil {
			return nil, fmt.Errorf("%s: %w", f.event, err)
		}
	}
	// Every timed repeat has its own worker and fresh ledger, built before
	// the clock starts, in chunks so that the finished ledgers do not pile
	// up in memory: at most 32 repeats, and at most about 10,000 ledger
	// entries, a chunk (a batch of 10,000 records gets chunks of 1). The
	// ledgers are the bench's scaffolding, not the worker's memory.
	chunk := max(1, min(32, 10000/len(ev.Records)))
	var (
		resp      events.SQSEventResponse
		wall, cpu time.Duration
		last      run
	)
	runtime.GC()
	debug.FreeOSMemory()
	peak := rusage.ResetPeak()
	for done := 0; done < repeats; {
		n := min(chunk, repeats-done)
		runs, err := build(n)
		if err != nil {
			return nil, err
		}
		cpu0 := rusage.CPUTime()
		start := time.Now()
		for i, r := range runs {
			// A real SQS client keeps nothing it sent. Only the last
			// repeat's dead letters are read: the recording DLQ keeps
			// (copies) those alone.
			r.rec.Discard = done+i < repeats-1
			if resp, err = r.handle(); err != nil {
				return nil, fmt.Errorf("%s: %w", f.event, err)
			}
		}
		wall += time.Since(start)
		cpu += rusage.CPUTime() - cpu0
		last = runs[n-1]
		done += n
	}

	total := float64(len(ev.Records) * repeats)
	res := &benchResult{
		Records: len(ev.Records), Repeats: repeats,
		RecordsPerS:    round(total / wall.Seconds()),
		NsPerRecord:    round(float64(wall.Nanoseconds()) / total),
		CPUNsPerRecord: round(float64(cpu.Nanoseconds()) / total),
		RSSMB:          round(rusage.MaxRSSMB()),
		HandlerRSSMB:   round(handlerRSS(peak)),
		Decoder:        taskDecoder, GOARCH: runtime.GOARCH, GoVersion: runtime.Version(),
	}
	// The outcome of the last repeat (every repeat does the same work).
	sum, err := benchsum.Summarize(resp, last.rec, func(yield func(string, []byte) bool) {
		for _, r := range ev.Records {
			if !yield(r.MessageId, []byte(r.Body)) {
				return
			}
		}
	})
	if err != nil {
		return nil, err
	}
	res.FailuresByKind, res.DeadLetters, res.OKDigest = sum.Failures, sum.DeadLetters, sum.OKDigest
	return res, nil
}

// handlerRSS is the peak resident set since rusage.ResetPeak, 0 where it
// could not be reset or read.
func handlerRSS(reset bool) float64 {
	if !reset {
		return 0
	}
	return rusage.StatusMB("VmHWM")
}

func round(x float64) float64 { return float64(int64(x*10+0.5)) / 10 }
