package agenttask_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/agentdlq/agentdlq/bench/rusage"
	"github.com/agentdlq/agentdlq/events/agenttask"
	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/testkit/localtest"
)

// benchBody is a ~1 KB agent task, shaped like the fixtures' valid tasks.
var benchBody = []byte(`{"task_id":"task-0001-7f3a9c2e","run_id":"run-2026-11-29-0001","tenant":"acme-corp","idempotency_key":"acme-corp:run-2026-11-29-0001:step-03","tool":"web.search","tool_version":"2","trace_id":"1-6749a3c0-5d1e8f2b9c4a7e6d3f0b1a2c","created_at":"2026-11-29T19:00:00.000Z","schema_version":1,"args":{"query":"durable retry strategies for agent tool calls with idempotency keys and dead-letter queues","locale":"en-US","max_results":10,"safe_search":true,"filters":{"site":["docs.aws.amazon.com","go.dev","martinfowler.com"],"published_after":"2024-01-01","exclude_terms":["sponsored","advertisement"]},"context":{"step":3,"of":12,"parent_step":"step-02","notes":"The agent is comparing at-least-once delivery, visibility timeouts, partial batch responses and poison message handling across queue services. Keep results technical and cite primary sources. Prefer pages that explain maxReceiveCount, redrive policies and message retention.","budget":{"tokens":4096,"usd":0.05}},"ranking":{"boost":{"recency":0.3,"authority":0.5},"dedupe":true},"user_agent":"agentdlq-sample/1.0 (+https://example.com/agentdlq)"}}`)

// cpuPerOp reports the process's CPU time per operation beside the wall
// time, so a figure taken on a busy machine still says what the code costs.
// Call it before the loop; it reports when the benchmark ends.
func cpuPerOp(b *testing.B) {
	start := rusage.CPUTime()
	if start == 0 {
		return // no getrusage here
	}
	b.Cleanup(func() {
		if end := rusage.CPUTime(); b.N > 0 {
			b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
		}
	})
}

func BenchmarkDecodeTask(b *testing.B) {
	catalog := sampleCatalog()
	b.Logf("body %d bytes", len(benchBody))
	b.SetBytes(int64(len(benchBody)))
	b.ReportAllocs()
	cpuPerOp(b)
	for b.Loop() {
		if _, err := agenttask.DecodeTask(benchBody, catalog); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeTaskStd(b *testing.B) {
	catalog := sampleCatalog()
	b.SetBytes(int64(len(benchBody)))
	b.ReportAllocs()
	cpuPerOp(b)
	for b.Loop() {
		if _, err := agenttask.DecodeTaskStd(benchBody, catalog); err != nil {
			b.Fatal(err)
		}
	}
}

func benchMeta() (deadletter.Meta, map[string]deadletter.Attribute) {
	at := time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC)
	m := deadletter.Meta{
		Reason: deadletter.ReasonBudgetExhausted, Attempts: 4,
		FirstFailureAt: at, LastFailureAt: at.Add(6 * time.Minute), DeadLetteredAt: at.Add(6 * time.Minute),
		ErrorCode: "ServiceUnavailable", Error: "web.search: upstream returned 503 Service Unavailable (retry-after 2s)",
		SourceQueueARN: "arn:aws:sqs:us-east-1:123456789012:agent-tasks", MessageID: "0b4c6f9e-2f51-4c1a-9d2e-6a7b8c9d0e1f",
		SentAt: at, WorkerVersion: "v0.1.0", TaskID: "task-0001", RunID: "run-0001", Tenant: "acme-corp",
		Tool: "web.search", ToolVersion: "2", SchemaVersion: 1, IdempotencyKey: "acme-corp:run-0001:step-03",
		TraceID: "1-6749a3c0-5d1e8f2b9c4a7e6d3f0b1a2c", InputSHA256: strings.Repeat("ab", 32), Effect: deadletter.EffectReadOnly,
	}
	for i := 1; i <= 4; i++ {
		m.History = append(m.History, deadletter.Attempt{Receive: i, At: at.Add(time.Duration(i) * time.Minute), Class: deadletter.ClassTransient, ErrorCode: "ServiceUnavailable", Error: "upstream returned 503"})
	}
	attrs := map[string]deadletter.Attribute{
		"tenant":   {DataType: "String", StringValue: "acme-corp"},
		"priority": {DataType: "Number", StringValue: "5"},
		"trace":    {DataType: "String.trace", StringValue: "1-6749a3c0-5d1e8f2b9c4a7e6d3f0b1a2c"},
	}
	return m, attrs
}

func BenchmarkEncodeDeadLetter(b *testing.B) {
	m, attrs := benchMeta()
	b.ReportAllocs()
	cpuPerOp(b)
	for b.Loop() {
		if _, err := deadletter.EncodeDeadLetter(m, attrs); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeDeadLetter(b *testing.B) {
	m, attrs := benchMeta()
	dl, err := deadletter.EncodeDeadLetter(m, attrs)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpuPerOp(b)
	for b.Loop() {
		if _, _, err := deadletter.DecodeDeadLetter(dl); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRedact(b *testing.B) {
	cases := []struct{ name, text string }{
		{"plain", "web.search: upstream returned 503 Service Unavailable after 2.1s (request 6a7b8c9d)"},
		{"secrets", `POST https://user:hunter2@api.example.com/v1?sig=abc123 failed: Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.sig123456 for bob@example.com, api_key=sk-live-0123456789abcdef0123`},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			cpuPerOp(b)
			for b.Loop() {
				deadletter.Redact(c.text, deadletter.MaxErrorRunes)
			}
		})
	}
}

// BenchmarkDecodeTaskLargeBatch decodes the 100 ~1 KB tasks of
// testdata/sqs-large-batch.json (eight tools, escapes and non-ASCII text
// among them); one op is one task.
func BenchmarkDecodeTaskLargeBatch(b *testing.B) {
	var bodies [][]byte
	var total int64
	for _, s := range fixtureBodiesOf(b, "sqs-large-batch.json") {
		bodies = append(bodies, []byte(s))
		total += int64(len(s))
	}
	if len(bodies) == 0 {
		b.Fatal("no bodies")
	}
	catalog := sampleCatalog()
	b.SetBytes(total / int64(len(bodies)))
	b.ReportAllocs()
	cpuPerOp(b)
	i := 0
	for b.Loop() {
		if _, err := agenttask.DecodeTask(bodies[i], catalog); err != nil {
			b.Fatal(err)
		}
		if i++; i == len(bodies) {
			i = 0
		}
	}
}

// BenchmarkUnmarshalTaskStruct is the baseline the issue measured: plain
// encoding/json into the Task struct, with no validation at all.
func BenchmarkUnmarshalTaskStruct(b *testing.B) {
	b.SetBytes(int64(len(benchBody)))
	b.ReportAllocs()
	cpuPerOp(b)
	for b.Loop() {
		var t agenttask.Task
		if err := json.Unmarshal(benchBody, &t); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeTaskIndep decodes the bodies of the independent
// generator's all-ok batch (scripts/peer-bench/gen.mjs -n 100 -ok 100
// -seed 1, make bench-indep's events): pretty-printed and spaced bodies,
// shuffled members, args nested up to seven deep, \u escapes, exponents,
// duplicate members. One op is one task. It skips when there is no Node.
func BenchmarkDecodeTaskIndep(b *testing.B) {
	data, _ := localtest.PeerGen(b, 100, 100, 1)
	var ev events.SQSEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		b.Fatal(err)
	}
	var bodies [][]byte
	var total int64
	for _, r := range ev.Records {
		bodies = append(bodies, []byte(r.Body))
		total += int64(len(r.Body))
	}
	b.SetBytes(total / int64(len(bodies)))
	b.ReportAllocs()
	cpuPerOp(b)
	i := 0
	for b.Loop() {
		if _, err := agenttask.DecodeTask(bodies[i], nil); err != nil {
			b.Fatal(err)
		}
		if i++; i == len(bodies) {
			i = 0
		}
	}
}
