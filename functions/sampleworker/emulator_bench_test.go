package sampleworker

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/agentdlq/agentdlq/bench/rusage"
	"github.com/agentdlq/agentdlq/functions/batch"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/testkit/localtest"
)

// BenchmarkWorkerOnEmulators: the worker as its Lambda runs it, with the
// real SDK clients: the DynamoDB ledger on the DynamoDB emulator and the
// dead letters sent to the SQS emulator, on a generated mix of 100 records
// (all ok, and 10 % ok), through Invoke (the lean path). The emulators are
// other processes, so the CPU and allocations are the worker's, SDK
// included: what an ok record and a dead letter cost in Lambda, where the
// bench's in-memory ledger and recording DLQ cost nothing. Every iteration
// gets fresh idempotency keys (a key already done would be acknowledged as
// a duplicate, without the work). Needs the emulators:
// scripts/test.sh -run '^$' -bench WorkerOnEmulators -benchtime 20x ./functions/sampleworker/
func BenchmarkWorkerOnEmulators(b *testing.B) {
	cfg := localtest.AWS(b)
	plain := awshttp.NewBuildableClient() // the SDK's own HTTP client, not the test's logging one
	for _, ok := range []int{100, 10} {
		b.Run(fmt.Sprintf("ok=%d%%", ok), func(b *testing.B) {
			data := localtest.GenMix(b, 100, ok)
			name := fmt.Sprintf("mix-100-ok%d", ok)
			keyPart := []byte(":task-" + name[:3] + "-") // ":task-mix-", as events/gen writes the keys
			if bytes.Count(data, keyPart) < 100 {
				b.Fatalf("the generated keys no longer hold %q", keyPart)
			}
			p, _ := testPipeline(b, false, 4)
			q := localtest.Queues(b, cfg, p)
			table := localtest.Table(b, cfg)
			w, err := New(Config{Pipeline: p, Queues: q,
				SQS:    sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.HTTPClient = plain }),
				Ledger: ledger.NewDynamo(dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.HTTPClient = plain }), table),
				Logger: slog.New(batch.NewLogHandler(io.Discard, nil)), Metrics: io.Discard, WorkerVersion: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			payload := make([]byte, len(data))
			ctx := context.Background()
			b.ReportAllocs()
			var cpu int64
			i := 0
			for b.Loop() {
				b.StopTimer()
				copy(payload, data) // the runtime's buffer, decoded in place
				fresh := fmt.Appendf(nil, ":task-%03d-", i%1000)
				for j := 0; ; {
					k := bytes.Index(payload[j:], keyPart)
					if k < 0 {
						break
					}
					copy(payload[j+k:], fresh)
					j += k + len(fresh)
				}
				i++
				b.StartTimer()
				c0 := rusage.CPUTime()
				if _, err := w.Invoke(ctx, payload); err != nil {
					b.Fatal(err)
				}
				cpu += int64(rusage.CPUTime() - c0)
			}
			b.ReportMetric(float64(cpu)/float64(b.N*100), "cpu-ns/record")
		})
	}
}
