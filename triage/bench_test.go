package triage

import (
	"fmt"
	"testing"
	"time"

	"github.com/agentdlq/agentdlq/bench/rusage"
	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/triage/dlq"
	"github.com/agentdlq/agentdlq/triage/report"
)

// synthetic makes n dead letters: 60 % written by the worker (12 reasons ×
// 8 tools, error texts with varying ids and numbers), 35 % broker moves with
// task bodies, 5 % with unreadable metadata; tenants and keys spread out.
func synthetic(tb testing.TB, n int) []dlq.Message {
	tb.Helper()
	tools := []string{"web.search", "http.fetch", "code.exec", "file.read", "file.write", "sql.query", "vector.search", "email.send"}
	var reasons []deadletter.Reason
	for _, r := range deadletter.AllReasons() {
		if r != deadletter.ReasonReceiveLimit {
			reasons = append(reasons, r)
		}
	}
	// Encode a few hundred templates once; messages reuse them with their own ids.
	type tmpl struct {
		attrs map[string]deadletter.Attribute
	}
	var tmpls []tmpl
	for i := range 400 {
		m := poisonMeta(reasons[i%len(reasons)], tools[i%len(tools)], "1", fmt.Sprintf("tenant-%d", i%50), fmt.Sprintf("key-%d", i),
			fmt.Sprintf("call %d to upstream 7f3a%04x failed with status %d after %d ms", i, i, 500+i%4, 100+i))
		m.DeadLetteredAt = t0.Add(-time.Duration(i) * time.Minute)
		attrs, err := deadletter.EncodeDeadLetter(m, map[string]deadletter.Attribute{"origin": {DataType: "String", StringValue: "bench"}})
		if err != nil {
			tb.Fatal(err)
		}
		tmpls = append(tmpls, tmpl{attrs})
	}
	bad := map[string]deadletter.Attribute{deadletter.AttrMeta: {DataType: "String", StringValue: `{"v":9}`}}
	out := make([]dlq.Message, n)
	for i := range out {
		id := fmt.Sprintf("%08d-0000-4000-8000-%012d", i, i)
		body := task(fmt.Sprintf("t%d", i), fmt.Sprintf("tenant-%d", i%50), tools[i%len(tools)], "1", `{"query":"weather in paris","limit":10}`)
		sent := t0.Add(-time.Duration(i%20000) * time.Minute)
		switch {
		case i%20 == 0:
			out[i] = dlq.Message{MessageID: id, Body: body, Attributes: bad, SentTimestamp: sent}
		case i%20 < 8:
			out[i] = brokerMoved(id, body, sent)
		default:
			out[i] = dlq.Message{MessageID: id, Body: body, Attributes: tmpls[i%len(tmpls)].attrs, SentTimestamp: sent, ReceiveCount: 1}
		}
	}
	return out
}

// BenchmarkTriage100k is the core of a triage run: tag, group and compute
// the expiry of 100,000 dead letters (the scan's network time aside).
func BenchmarkTriage100k(b *testing.B) {
	msgs := synthetic(b, 100_000)
	p := testPipeline(b, false)
	b.ReportAllocs()
	cpu0 := rusage.CPUTime()
	var r *report.Report
	for b.Loop() {
		r = Build(tagAll(msgs, nil), p, t0)
	}
	cpu := rusage.CPUTime() - cpu0
	if r.Totals.Messages != 100_000 {
		b.Fatalf("report holds %d messages", r.Totals.Messages)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100_000, "ns/message")
	// CPU time of the process (every thread, the GC's included) per 100,000:
	// on a busy machine wall time says little.
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
}

// BenchmarkTag is one message's tagging (metadata decode, hints, fingerprint).
func BenchmarkTag(b *testing.B) {
	msgs := synthetic(b, 1000)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		_ = Tag(msgs[i%len(msgs)])
		i++
	}
}
