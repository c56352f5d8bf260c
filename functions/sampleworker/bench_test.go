package sampleworker

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/agentdlq/agentdlq/bench/rusage"
	"github.com/agentdlq/agentdlq/events/agenttask"
	"github.com/agentdlq/agentdlq/functions/batch"
	"github.com/agentdlq/agentdlq/internal/sqsio"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/testkit/localtest"
)

// notes pads a task to about 1 KB, as the fixtures do.
var notes = strings.Repeat("The agent compares at-least-once delivery, visibility timeouts and poison handling. ", 9)

// benchEvent builds n ~1 KB tasks; every poisonEvery-th record (0: none) is
// poison of a rotating kind, so that dead-letter metadata is included.
func benchEvent(n, poisonEvery int) events.SQSEvent {
	tools := []string{"web.search", "http.fetch", "sql.query", "vector.search", "file.read", "file.write", "email.send", "code.exec"}
	ev := events.SQSEvent{Records: make([]events.SQSMessage, n)}
	for i := range ev.Records {
		tool := tools[i%len(tools)]
		body := fmt.Sprintf(`{"task_id":"task-%06d","run_id":"run-%04d","tenant":"acme","idempotency_key":"acme:run-%04d:task-%06d","tool":%q,"tool_version":"1","trace_id":"1-6b0c13c0-832c989f1a2cfec9d47a%04d","created_at":"2026-11-29T12:00:00Z","schema_version":1,"args":{"query":"dead-letter queue triage","max_results":10,"context":{"step":%d,"notes":%q}}}`,
			i, i/10, i/10, i, tool, i%10000, i, notes)
		if poisonEvery > 0 && i%poisonEvery == poisonEvery-1 {
			switch (i / poisonEvery) % 3 {
			case 0:
				body = body[:len(body)/2] // json_invalid
			case 1:
				body = strings.Replace(body, `"tool_version":"1"`, `"tool_version":"7"`, 1) // tool_version_unsupported
			case 2:
				body = strings.Replace(body, `"tenant":"acme",`, ``, 1) // schema_invalid
			}
		}
		ev.Records[i] = events.SQSMessage{
			MessageId: fmt.Sprintf("00000000-0000-4000-8000-%012d", i), ReceiptHandle: "rh-" + strconv.Itoa(i), Body: body,
			Attributes: map[string]string{
				"ApproximateReceiveCount": "1", "SentTimestamp": "1796047200000", "SenderId": "AROAEXAMPLE",
				"ApproximateFirstReceiveTimestamp": "1796047200150",
			},
			MessageAttributes: map[string]events.SQSMessageAttribute{
				"tenant":   {DataType: "String", StringValue: aws.String("acme")},
				"producer": {DataType: "String", StringValue: aws.String("agent-runner")},
			},
			EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:agent-tasks", EventSource: "aws:sqs", AWSRegion: "us-east-1",
		}
	}
	return ev
}

// BenchmarkWorker runs the real handler (processor, decode, ledger, tool
// SHA-256, dead letters) on batches of ~1 KB tasks through Handle
// (events.SQSEvent). Each iteration has a fresh in-memory ledger so that it
// does the full work; ns/op is per batch, ns/record per record.
func BenchmarkWorker(b *testing.B) { benchWorker(b, false) }

// BenchmarkWorkerLean is BenchmarkWorker on the lean path: the event is
// decoded once by batch.DecodeEvent (its cost is BenchmarkDecodeEvent's in
// functions/batch) and HandleEvent runs on it, so that the per-record cost
// compares with BenchmarkWorker's Handle.
func BenchmarkWorkerLean(b *testing.B) { benchWorker(b, true) }

func benchWorker(b *testing.B, lean bool) {
	for _, mix := range []struct {
		name        string
		poisonEvery int
	}{{"ok", 0}, {"poison10pct", 10}} {
		for _, size := range []int{10, 100, 10000} {
			b.Run(fmt.Sprintf("%s/batch=%d", mix.name, size), func(b *testing.B) {
				sev := benchEvent(size, mix.poisonEvery)
				handle := func(w *Worker) (events.SQSEventResponse, error) { return w.Handle(context.Background(), sev) }
				if lean {
					payload, err := json.Marshal(sev)
					if err != nil {
						b.Fatal(err)
					}
					ev, err := batch.DecodeEvent(payload)
					if err != nil {
						b.Fatal(err)
					}
					handle = func(w *Worker) (events.SQSEventResponse, error) { return w.HandleEvent(context.Background(), ev) }
				}
				p, q := testPipeline(b, false, 4)
				rec := &sqsio.Recorder{Discard: true} // a real client keeps nothing it sent
				log := slog.New(batch.NewLogHandler(io.Discard, nil))
				b.ReportAllocs()
				cpu0 := rusage.CPUTime()
				for b.Loop() {
					// A fresh worker and ledger each iteration (built inside the
					// timed loop: about a microsecond a batch), so that every
					// iteration does the full work and none is a duplicate.
					rec.Reset()
					w, err := New(Config{Pipeline: p, Queues: q, SQS: rec, Ledger: ledger.NewMemory(), Logger: log, Metrics: io.Discard})
					if err != nil {
						b.Fatal(err)
					}
					resp, err := handle(w)
					if err != nil || len(resp.BatchItemFailures) != 0 {
						b.Fatalf("unexpected failures: %v %v", err, resp.BatchItemFailures)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*size), "ns/record")
				// CPU of the whole process (GC included) per record.
				b.ReportMetric(float64((rusage.CPUTime()-cpu0).Nanoseconds())/float64(b.N*size), "cpu-ns/record")
			})
		}
	}
}

// BenchmarkWorkerParts splits a record's cost on the same 100 ~1 KB tasks:
// decode only, decode + the tool's SHA-256 receipt (the work every worker
// does), and the whole handler through the processor (ledger, metrics and
// all). The difference of the last two is what the processor adds.
func BenchmarkWorkerParts(b *testing.B) {
	ev := benchEvent(100, 0)
	catalog := Catalog(nil)
	body := func(i int) []byte { return []byte(ev.Records[i].Body) }
	bodies := make([][]byte, len(ev.Records))
	for i := range bodies {
		bodies[i] = body(i)
	}
	run := func(b *testing.B, f func()) {
		b.ReportAllocs()
		cpu0 := rusage.CPUTime()
		for b.Loop() {
			f()
		}
		b.ReportMetric(float64((rusage.CPUTime()-cpu0).Nanoseconds())/float64(b.N*len(bodies)), "cpu-ns/record")
	}
	b.Run("decode", func(b *testing.B) {
		run(b, func() {
			for _, bd := range bodies {
				if _, err := agenttask.DecodeTask(bd, catalog); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	b.Run("decode+receipt", func(b *testing.B) {
		run(b, func() {
			for _, bd := range bodies {
				t, err := agenttask.DecodeTask(bd, catalog)
				if err != nil {
					b.Fatal(err)
				}
				_ = Receipt(t.Args)
			}
		})
	})
	b.Run("handler", func(b *testing.B) {
		p, q := testPipeline(b, false, 4)
		rec := &sqsio.Recorder{Discard: true}
		ctx := context.Background()
		run(b, func() {
			w, err := New(Config{Pipeline: p, Queues: q, SQS: rec, Ledger: ledger.NewMemory(), Logger: slog.New(slog.DiscardHandler), Metrics: io.Discard})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := w.Handle(ctx, ev); err != nil {
				b.Fatal(err)
			}
		})
	})
}

// BenchmarkParseFault parses the args of a task that asks for a fault, as
// most records of the sqs-mixed fixture do.
func BenchmarkParseFault(b *testing.B) {
	args := []byte(`{"q":"weather in paris","context":{"lang":"en","n":3},"fault":{"retryable":true,"status":503,"error":"upstream unavailable","until_receive":3},"tail":"more text after the fault than in it"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseFault(args); err != nil {
			b.Fatal(err)
		}
	}
}

// indepArgs returns the args of the independent generator's tasks
// (scripts/peer-bench/gen.mjs -n 100 -ok okPct -seed 1, make bench-indep's
// events), as DecodeTask cuts them.
func indepArgs(b *testing.B, okPct int) [][]byte {
	data, _ := localtest.PeerGen(b, 100, okPct, 1)
	var ev events.SQSEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		b.Fatal(err)
	}
	var args [][]byte
	for _, r := range ev.Records {
		if task, err := agenttask.DecodeTask([]byte(r.Body), nil); err == nil {
			args = append(args, task.Args)
		}
	}
	if len(args) == 0 {
		b.Fatal("no args")
	}
	return args
}

// BenchmarkParseFaultIndep runs ParseFault on the args of the independent
// generator's tasks, all ok (no fault: the prefilter's case) and 40 % ok
// (faults among them, and faults of the wrong shape, which ParseFault
// reports as errors); one op is one task's args.
func BenchmarkParseFaultIndep(b *testing.B) {
	for _, okPct := range []int{100, 40} {
		b.Run(fmt.Sprintf("ok=%d", okPct), func(b *testing.B) {
			args := indepArgs(b, okPct)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				_, _ = ParseFault(args[i])
				if i++; i == len(args) {
					i = 0
				}
			}
		})
	}
}
