package batch

import (
	"context"
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
	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/testkit/localtest"
)

// BenchmarkProcessor measures the processor alone: a handler that begins
// the record's key in the ledger and finishes (no decoding, no tool work),
// or, for every tenth record of the poison mix, returns Poison, so that the
// dead-letter path (metadata, redaction, send, ledger, log) is included.
func BenchmarkProcessor(b *testing.B) {
	body := strings.Repeat("x", 1024)
	handler := func(ctx context.Context, r Record) error {
		if id := r.MessageID(); id[len(id)-1] == 'p' {
			return Poison(deadletter.ReasonSchemaInvalid, &agenttask.ValidationError{Reason: deadletter.ReasonSchemaInvalid, Field: "tenant", Detail: "required field is missing"})
		}
		if err := r.Begin(ctx, "t", r.MessageID(), "", false); err != nil {
			return err
		}
		r.SetReceipt("receipt")
		return nil
	}
	for _, mix := range []struct {
		name        string
		poisonEvery int
	}{{"ok", 0}, {"poison10pct", 10}} {
		for _, size := range []int{10, 100, 10000} {
			b.Run(fmt.Sprintf("%s/batch=%d", mix.name, size), func(b *testing.B) {
				ev := events.SQSEvent{Records: make([]events.SQSMessage, size)}
				for i := range ev.Records {
					id := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
					if mix.poisonEvery > 0 && i%mix.poisonEvery == mix.poisonEvery-1 {
						id += "p"
					}
					ev.Records[i] = events.SQSMessage{
						MessageId: id, ReceiptHandle: "rh", Body: body,
						Attributes: map[string]string{"ApproximateReceiveCount": "1", "SentTimestamp": strconv.FormatInt(1796047200000+int64(i), 10)},
						MessageAttributes: map[string]events.SQSMessageAttribute{
							"tenant": {DataType: "String", StringValue: aws.String("acme")},
						},
						EventSourceARN: testHotARN, EventSource: "aws:sqs",
					}
				}
				sqs := &fakeSQS{discard: true}
				log := slog.New(NewLogHandler(io.Discard, nil))
				ctx := context.Background()
				b.ReportAllocs()
				cpu0 := rusage.CPUTime()
				for b.Loop() {
					p, err := New(Config{Handler: handler, SQS: sqs, DLQURL: testDLQ, MaxReceiveCount: 4, Pipeline: "bench",
						Ledger: ledger.NewMemory(), Logger: log, Metrics: io.Discard})
					if err != nil {
						b.Fatal(err)
					}
					if _, err := p.Handle(ctx, ev); err != nil {
						b.Fatal(err)
					}
				}
				n := float64(b.N * size)
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/record")
				b.ReportMetric(float64((rusage.CPUTime()-cpu0).Nanoseconds())/n, "cpu-ns/record")
			})
		}
	}
}

// BenchmarkDeadLetterAttrs: what a lean dead letter pays to read its
// message attributes back from the payload (AppendDeadLetterAttrs), per
// record of a generated mix (0-10 attributes each, some binary).
func BenchmarkDeadLetterAttrs(b *testing.B) {
	ev, err := DecodeEvent(localtest.GenMix(b, 100, 10))
	if err != nil {
		b.Fatal(err)
	}
	var dst []deadletter.NamedAttribute
	n := 0
	for b.Loop() {
		for i := range ev.ev.Records {
			clear(dst)
			dst = ev.ev.Records[i].AppendDeadLetterAttrs(dst[:0])
			n += len(dst)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ev.ev.Records)), "ns/record")
	b.ReportMetric(float64(n)/float64(b.N*len(ev.ev.Records)), "attrs/record")
}
