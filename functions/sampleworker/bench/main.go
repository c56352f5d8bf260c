// Command bench times the sample worker as its Lambda runs it, without the
// CLI: the process holds what the worker's bootstrap holds (the processor,
// the sample worker, the Go runtime) and, in place of the AWS clients, an
// in-memory ledger and a recording DLQ, as `agentdlq bench` has. It is the
// agentdlq side of make bench-sizes and make bench-peer.
//
//	bench -event FILE -repeats R [-warmup W] [-max-receive-count N] [-fifo] [-path lean|events] [-failed-out FILE]
//	bench -idle
//
// With -path lean (the default, what the Lambda entry runs), each repeat
// gets the event file's bytes in a payload buffer, as the Lambda runtime
// hands them to lambda.Handler's Invoke, and the worker's Invoke decodes
// and handles them; the buffer is filled again from the file for the next
// repeat, as the runtime reuses its buffer. With -path events the file is decoded once into an
// events.SQSEvent before the clock starts and Handle runs on it every
// repeat (how `agentdlq bench` measures).
//
// It prints one JSON line: records, repeats, cpu_ns_per_record (user+sys
// CPU of handling, getrusage, without the event's decoding),
// decode_cpu_ns_per_record (the decoding: on the lean path DecodeEvent's
// CPU a record, measured apart after the repeats and taken out of Invoke's;
// on -path events the json.Decoder's), the two adding up to the whole
// invocation's CPU, which make bench-sizes compares with the peer's, rss_mb (the process's peak RSS, everything
// included), handler_rss_mb (peak RSS from the timed repeats on), idle_rss_mb
// (RSS with the worker built, before the event is read), gomemlimit_mib,
// gomaxprocs, failures_by_kind, dead_letters_by_reason and ok_digest (as `agentdlq
// bench`: hex SHA-256 over "<messageId>:<hex SHA-256 of args>\n" of the
// successful records in event order). GOMEMLIMIT and GOMAXPROCS are the Go
// runtime's; with them unset and AWS_LAMBDA_FUNCTION_MEMORY_SIZE set, the
// bench derives them from it as the Lambda entry does (90 % of it; the
// vCPUs it pays for: lambdaenv.MaxProcs), which is what the construct sets.
// -failed-out writes the message ids of the last repeat's batch item
// failures (the records the worker leaves to SQS to deliver again) as a JSON
// array, from which make bench-settle builds the next receive's event.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/agentdlq/agentdlq/bench/benchsum"
	"github.com/agentdlq/agentdlq/bench/rusage"
	"github.com/agentdlq/agentdlq/functions/batch"
	"github.com/agentdlq/agentdlq/functions/sampleworker"
	"github.com/agentdlq/agentdlq/internal/lambdaenv"
	"github.com/agentdlq/agentdlq/internal/sqsio"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/pipeline"
)

type result struct {
	Path                 string            `json:"path"`
	Records              int               `json:"records"`
	Repeats              int               `json:"repeats"`
	RecordsPerS          float64           `json:"records_per_s"`
	CPUNsPerRecord       float64           `json:"cpu_ns_per_record"`
	DecodeCPUNsPerRecord float64           `json:"decode_cpu_ns_per_record"`
	RSSMB                float64           `json:"rss_mb"`
	HandlerRSSMB         float64           `json:"handler_rss_mb"`
	IdleRSSMB            float64           `json:"idle_rss_mb"`
	GoMemLimitMiB        float64           `json:"gomemlimit_mib"`
	GoMaxProcs           int               `json:"gomaxprocs"`
	FailuresByKind       benchsum.Failures `json:"failures_by_kind"`
	DeadLetters          map[string]int    `json:"dead_letters_by_reason"`
	OKDigest             string            `json:"ok_digest"`
	GOARCH               string            `json:"goarch"`
	GoVersion            string            `json:"go_version"`
}

func main() {
	if limit, ok := lambdaenv.MemoryLimit(os.Getenv); ok { // as the Lambda entry
		debug.SetMemoryLimit(limit)
	}
	if n, ok := lambdaenv.MaxProcs(os.Getenv); ok {
		runtime.GOMAXPROCS(n)
	}
	var (
		event      = flag.String("event", "", "Lambda SQS event file (JSON, as Lambda delivers it)")
		repeats    = flag.Int("repeats", 100, "timed invocations")
		warmup     = flag.Int("warmup", 5, "untimed invocations before the timed ones")
		maxReceive = flag.Int("max-receive-count", 4, "the hot queue's maxReceiveCount")
		fifo       = flag.Bool("fifo", false, "treat the queue as FIFO")
		path       = flag.String("path", "lean", "lean (Invoke on the payload, as the Lambda entry) or events (json.Decoder into events.SQSEvent and Handle, as lambda.Start(w.Handle))")
		decode     = flag.String("decode", "each", "each: decode the payload every invocation, as Lambda does; once: decode it once before the clock and handle that event every repeat, as agentdlq bench and the peer's bench do (lean path only)")
		idle       = flag.Bool("idle", false, "print the RSS with the worker built and nothing handled, and exit")
		memProfile = flag.String("memprofile", "", "write a heap profile after the run to this file (go tool pprof)")
		cpuProfile = flag.String("cpuprofile", "", "write a CPU profile of the run to this file (go tool pprof)")
		failedOut  = flag.String("failed-out", "", "write the message ids of the last repeat's batch item failures to this file (a JSON array)")
	)
	flag.Parse()
	defer profile(*cpuProfile, *memProfile)()
	if err := run(*event, *repeats, *warmup, *maxReceive, *fifo, *path, *decode, *failedOut, *idle); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1) //nolint:gocritic // the profile is not needed on failure
	}
}

// profile starts the CPU profile into cpu and the heap profiling for mem
// (either may be ""), and returns the func that writes them. A profile that
// cannot be written is said on stderr; the bench runs on without it.
func profile(cpu, mem string) (stop func()) {
	var cpuFile *os.File
	if cpu != "" {
		f, err := os.Create(cpu)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench: cpu profile:", err)
		} else {
			cpuFile = f
		}
	}
	if mem != "" {
		runtime.MemProfileRate = 64 << 10
	}
	return func() {
		if cpuFile != nil {
			pprof.StopCPUProfile()
			if err := cpuFile.Close(); err != nil {
				fmt.Fprintln(os.Stderr, "bench: cpu profile:", err)
			}
		}
		if mem == "" {
			return
		}
		f, err := os.Create(mem)
		if err == nil {
			err = pprof.Lookup("heap").WriteTo(f, 0)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench: heap profile:", err)
		}
	}
}

func run(file string, repeats, warmup, maxReceive int, fifo bool, path, decode, failedOut string, idle bool) error {
	if _, err := newWorker(maxReceive, fifo, &sqsio.Recorder{}); err != nil {
		return err
	}
	runtime.GC()
	idleMB := rusage.StatusMB("VmRSS")
	if idle {
		return printIdle(idleMB)
	}
	if file == "" || repeats < 1 || warmup < 0 || (path != "lean" && path != "events") || (decode != "each" && decode != "once") || (decode == "once" && path != "lean") {
		return errors.New("usage: bench -event FILE -repeats R [-warmup W] [-max-receive-count N] [-fifo] [-path lean|events] [-decode each|once (lean)]")
	}
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // only read
	st, err := f.Stat()
	if err != nil {
		return err
	}
	size := int(st.Size())
	fill := func(buf []byte) error {
		_, err := f.ReadAt(buf, 0)
		return err
	}
	var b bencher
	if path == "lean" {
		b, err = newLean(size, fill, decode == "once")
	} else {
		b, err = newEvents(size, fill)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	records := b.records()
	if records == 0 {
		return fmt.Errorf("%s: the event has no records to time", file)
	}
	ctx := context.Background()
	for range warmup {
		if _, err := b.chunk(ctx, 1, maxReceive, fifo, true); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
	}
	// Chunks of repeats, each with its own worker and fresh ledger built
	// before the clock starts (every repeat does the full work), at most 32
	// repeats and about 10,000 records a chunk, as `agentdlq bench`, and on
	// the lean path at most 1 MiB of payload buffers (the runtime has one).
	chunk := max(1, min(32, 10000/records))
	if path == "lean" && decode == "each" {
		chunk = max(1, min(chunk, (1<<20)/size))
	}
	runtime.GC()
	debug.FreeOSMemory()
	peak := rusage.ResetPeak()
	start := time.Now()
	last, decodeCPU, handleCPU, err := timeChunks(ctx, b, repeats, chunk, maxReceive, fifo)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	wall := time.Since(start)
	total := float64(records * repeats)
	res := &result{
		Path: path, Records: records, Repeats: repeats,
		RecordsPerS:          round(total / wall.Seconds()),
		CPUNsPerRecord:       round(float64(handleCPU.Nanoseconds()) / total),
		DecodeCPUNsPerRecord: round(float64(decodeCPU.Nanoseconds()) / total),
		RSSMB:                round(rusage.MaxRSSMB()),
		IdleRSSMB:            round(idleMB),
		GoMaxProcs:           runtime.GOMAXPROCS(0),
		GOARCH:               runtime.GOARCH, GoVersion: runtime.Version(),
	}
	if peak {
		res.HandlerRSSMB = round(rusage.StatusMB("VmHWM"))
	}
	if l := debug.SetMemoryLimit(-1); l != math.MaxInt64 {
		res.GoMemLimitMiB = round(float64(l) / (1 << 20))
	}
	if err := last.summarize(res, b); err != nil {
		return err
	}
	if failedOut != "" {
		if err := writeFailed(failedOut, last); err != nil {
			return err
		}
	}
	if l, ok := b.(*lean); ok && l.once == nil {
		// Invoke's CPU is decode and handling: split with DecodeEvent's.
		est, err := l.estimateDecode()
		if err != nil {
			return err
		}
		res.DecodeCPUNsPerRecord = round(min(est, res.CPUNsPerRecord))
		res.CPUNsPerRecord = round(res.CPUNsPerRecord - res.DecodeCPUNsPerRecord)
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

// timeChunks runs repeats in chunks of at most chunk, and returns the last
// chunk's outcome and the CPU time decoding and handling took in all.
func timeChunks(ctx context.Context, b bencher, repeats, chunk, maxReceive int, fifo bool) (last *outcome, decodeCPU, handleCPU time.Duration, err error) {
	for done := 0; done < repeats; {
		n := min(chunk, repeats-done)
		o, err := b.chunk(ctx, n, maxReceive, fifo, done+n < repeats)
		if err != nil {
			return nil, 0, 0, err
		}
		decodeCPU += o.decodeCPU
		handleCPU += o.handleCPU
		last = o
		done += n
	}
	return last, decodeCPU, handleCPU, nil
}

// printIdle writes the memory of a worker built and idle, as JSON.
func printIdle(idleMB float64) error {
	idleRes := map[string]float64{"idle_rss_mb": round(idleMB), "peak_rss_mb": round(rusage.MaxRSSMB()), "gomaxprocs": float64(runtime.GOMAXPROCS(0))}
	if l := debug.SetMemoryLimit(-1); l != math.MaxInt64 {
		idleRes["gomemlimit_mib"] = round(float64(l) / (1 << 20))
	}
	return json.NewEncoder(os.Stdout).Encode(idleRes)
}

// writeFailed writes the message ids of the outcome's batch item failures
// to file, as a JSON array.
func writeFailed(file string, last *outcome) error {
	ids := make([]string, 0, len(last.resp.BatchItemFailures))
	for _, f := range last.resp.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	out, err := json.Marshal(ids)
	if err != nil {
		return err
	}
	return os.WriteFile(file, out, 0o644)
}

// bencher runs chunks of repeats on one path.
type bencher interface {
	records() int
	// chunk runs n repeats; drop says the recorded dead letters may be
	// dropped (not the last chunk).
	chunk(ctx context.Context, n, maxReceive int, fifo, drop bool) (*outcome, error)
	// okRecords yields the id and body of every record of the last
	// repeat's event, in order.
	okRecords(yield func(id string, body []byte) bool)
}

type outcome struct {
	decodeCPU, handleCPU time.Duration
	resp                 events.SQSEventResponse
	rec                  *sqsio.Recorder
}

// lean: the Lambda entry's path, Invoke on the payload buffer.
type lean struct {
	size int
	fill func([]byte) error
	bufs [][]byte // payload buffers, reused as the runtime reuses its own
	n    int
	once *batch.Event // -decode once: the event every repeat handles
}

func newLean(size int, fill func([]byte) error, once bool) (*lean, error) {
	l := &lean{size: size, fill: fill}
	buf := make([]byte, size)
	if err := fill(buf); err != nil {
		return nil, err
	}
	ev, err := batch.DecodeEvent(buf)
	if err != nil {
		return nil, err
	}
	l.n = ev.Len()
	if once {
		l.once = ev
		return l, nil
	}
	l.bufs = [][]byte{buf}
	return l, nil
}

// estimateDecode measures DecodeEvent's CPU a record on the payload, about
// 20,000 records' worth, after the timed repeats and the RSS readings (its
// garbage would raise the peak): DecodeEvent decodes a copy of the payload,
// which Invoke spares, so the estimate is a little high.
func (l *lean) estimateDecode() (float64, error) {
	buf := make([]byte, l.size)
	if err := l.fill(buf); err != nil {
		return 0, err
	}
	k := max(3, 20000/max(1, l.n))
	c0 := rusage.CPUTime()
	for range k {
		if _, err := batch.DecodeEvent(buf); err != nil {
			return 0, err
		}
	}
	return float64((rusage.CPUTime() - c0).Nanoseconds()) / float64(k*max(1, l.n)), nil
}

func (l *lean) records() int { return l.n }

func (l *lean) chunk(ctx context.Context, n, maxReceive int, fifo, drop bool) (*outcome, error) {
	if l.once != nil {
		return l.chunkOnce(ctx, n, maxReceive, fifo, drop)
	}
	for len(l.bufs) < n {
		l.bufs = append(l.bufs, make([]byte, l.size))
	}
	for i := range n {
		if err := l.fill(l.bufs[i]); err != nil {
			return nil, err
		}
	}
	workers, recs, err := newWorkers(n, maxReceive, fifo)
	if err != nil {
		return nil, err
	}
	o := &outcome{}
	var out []byte
	c0 := rusage.CPUTime()
	for i := range n {
		// A real SQS client keeps nothing it sent: only the last repeat's
		// dead letters are read, and recorded.
		recs[i].Discard = drop || i < n-1
		if out, err = workers[i].Invoke(ctx, l.bufs[i]); err != nil {
			return nil, err
		}
	}
	o.handleCPU = rusage.CPUTime() - c0 // decode and handling: run splits it
	if err := json.Unmarshal(out, &o.resp); err != nil {
		return nil, err
	}
	o.rec = recs[n-1]
	return o, nil
}

// chunkOnce handles the event decoded once (-decode once) n times.
func (l *lean) chunkOnce(ctx context.Context, n, maxReceive int, fifo, drop bool) (*outcome, error) {
	workers, recs, err := newWorkers(n, maxReceive, fifo)
	if err != nil {
		return nil, err
	}
	o := &outcome{}
	c0 := rusage.CPUTime()
	for i := range n {
		recs[i].Discard = drop || i < n-1
		resp, err := workers[i].HandleEvent(ctx, l.once)
		if err != nil {
			return nil, err
		}
		_ = batch.MarshalResponse(resp)
		o.resp = resp
	}
	o.handleCPU = rusage.CPUTime() - c0
	o.rec = recs[n-1]
	return o, nil
}

func (l *lean) okRecords(yield func(string, []byte) bool) {
	ev := l.once
	if ev == nil { // Invoke decoded the last buffer in place: read the file again
		buf := make([]byte, l.size)
		if l.fill(buf) != nil {
			return
		}
		var err error
		if ev, err = batch.DecodeEvent(buf); err != nil {
			return
		}
	}
	for i := range ev.Len() {
		if !yield(ev.MessageID(i), ev.Body(i)) {
			return
		}
	}
}

// eventsPath: lambda.Start(w.Handle), as aws-lambda-go runs a handler of
// events.SQSEvent: the payload buffer is decoded each invocation with a
// json.Decoder over it (its reflection handler's code), then Handle runs.
type eventsPath struct {
	size int
	fill func([]byte) error
	buf  []byte
	ev   events.SQSEvent // the last repeat's
}

func newEvents(size int, fill func([]byte) error) (*eventsPath, error) {
	e := &eventsPath{size: size, fill: fill, buf: make([]byte, size)}
	if err := fill(e.buf); err != nil {
		return nil, err
	}
	if err := json.NewDecoder(bytes.NewBuffer(e.buf)).Decode(&e.ev); err != nil {
		return nil, err
	}
	return e, nil
}

func (e *eventsPath) records() int { return len(e.ev.Records) }

func (e *eventsPath) chunk(ctx context.Context, n, maxReceive int, fifo, drop bool) (*outcome, error) {
	o := &outcome{}
	for i := range n {
		rec := &sqsio.Recorder{}
		w, err := newWorker(maxReceive, fifo, rec)
		if err != nil {
			return nil, err
		}
		if err := e.fill(e.buf); err != nil {
			return nil, err
		}
		rec.Discard = drop || i < n-1
		c0 := rusage.CPUTime()
		var ev events.SQSEvent
		if err := json.NewDecoder(bytes.NewBuffer(e.buf)).Decode(&ev); err != nil {
			return nil, err
		}
		c1 := rusage.CPUTime()
		resp, err := w.Handle(ctx, ev)
		if err != nil {
			return nil, err
		}
		_, _ = json.Marshal(resp) // what the runtime sends back
		c2 := rusage.CPUTime()
		o.decodeCPU += c1 - c0
		o.handleCPU += c2 - c1
		o.resp, o.rec, e.ev = resp, rec, ev
	}
	return o, nil
}

func (e *eventsPath) okRecords(yield func(string, []byte) bool) {
	for _, r := range e.ev.Records {
		if !yield(r.MessageId, []byte(r.Body)) {
			return
		}
	}
}

// summarize reads the last repeat's outcome into res.
func (o *outcome) summarize(res *result, b bencher) error {
	sum, err := benchsum.Summarize(o.resp, o.rec, b.okRecords)
	res.FailuresByKind, res.DeadLetters, res.OKDigest = sum.Failures, sum.DeadLetters, sum.OKDigest
	return err
}

// newWorker builds the sample worker as `agentdlq bench` does: a local
// pipeline, the recording DLQ, a fresh memory ledger, logs and metrics
// discarded, concurrency 1.
// newWorkers builds n workers, each with its own recording DLQ (a chunk's
// repeats, built before the clock starts).
func newWorkers(n, maxReceive int, fifo bool) ([]*sampleworker.Worker, []*sqsio.Recorder, error) {
	workers := make([]*sampleworker.Worker, n)
	recs := make([]*sqsio.Recorder, n)
	for i := range n {
		recs[i] = &sqsio.Recorder{}
		w, err := newWorker(maxReceive, fifo, recs[i])
		if err != nil {
			return nil, nil, err
		}
		workers[i] = w
	}
	return workers, recs, nil
}

func newWorker(maxReceive int, fifo bool, rec *sqsio.Recorder) (*sampleworker.Worker, error) {
	p := &pipeline.Pipeline{Name: "invoke", Owner: "local", FIFO: fifo}
	p.ApplyDefaults()
	p.MaxReceiveCount = maxReceive
	q := pipeline.Queues{HotURL: "local://" + p.HotQueueName(), DLQURL: "local://" + p.DLQName(), FIFO: fifo}
	return sampleworker.New(sampleworker.Config{
		Pipeline: p, Queues: q, SQS: rec, Ledger: ledger.NewMemory(), WorkerVersion: "bench",
		Logger: slog.New(batch.NewLogHandler(io.Discard, nil)), Metrics: io.Discard, // the Lambda entry's handler
	})
}

func round(x float64) float64 { return math.Round(x*10) / 10 }
