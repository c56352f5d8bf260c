package batch_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/agentdlq/agentdlq/bench/rusage"
	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/functions/batch"
	"github.com/agentdlq/agentdlq/internal/sqsio"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/testkit/localtest"
)

// BenchmarkDeadLetterSendPath: what the SQS send path costs a dead letter,
// in this process. Every record of a batch of 100 is dead-lettered, through
// the real aws-sdk-go-v2 SQS client to the SQS emulator (its serialization,
// signing, HTTP and the answer's checksum checks; the emulator is another
// process, so the allocations and CPU are the client's), and through the
// recording DLQ of agentdlq bench and the worker's bench (no SDK), for the
// difference. Needs the emulators (scripts/test.sh or make bench starts
// them): go test -run '^$' -bench DeadLetterSendPath -benchtime 50x.
func BenchmarkDeadLetterSendPath(b *testing.B) {
	cfg := localtest.AWS(b)
	p := &pipeline.Pipeline{Name: "send-path", Owner: "o", MaxReceiveCount: 3}
	p.ApplyDefaults()
	q := localtest.Queues(b, cfg, p)
	body := `{"v":1,"task_id":"t","args":{"q":"` + fmt.Sprintf("%0900d", 0) + `"}}` // ~1 KB
	ev := events.SQSEvent{Records: make([]events.SQSMessage, 100)}
	for i := range ev.Records {
		ev.Records[i] = events.SQSMessage{
			MessageId: fmt.Sprintf("00000000-0000-4000-8000-%012d", i), ReceiptHandle: "rh", Body: body,
			Attributes: map[string]string{"ApproximateReceiveCount": "1", "SentTimestamp": strconv.FormatInt(1796047200000+int64(i), 10)},
			MessageAttributes: map[string]events.SQSMessageAttribute{
				"tenant": {DataType: "String", StringValue: aws.String("acme")},
				"run":    {DataType: "String", StringValue: aws.String("run-42")},
			},
			EventSourceARN: "arn:aws:sqs:us-east-1:000000000000:" + p.HotQueueName(), EventSource: "aws:sqs",
		}
	}
	handler := func(context.Context, batch.Record) error {
		return batch.Poison(deadletter.ReasonToolUnknown, errors.New(`tool "web.serch" is not in the catalog`))
	}
	for _, c := range []struct {
		name string
		api  batch.SQSAPI
	}{
		// The SDK's own HTTP client, not the test's logging one.
		{"sdk-to-emulator", sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.HTTPClient = awshttp.NewBuildableClient() })},
		{"recorder", &sqsio.Recorder{Discard: true}},
	} {
		b.Run(c.name, func(b *testing.B) {
			proc, err := batch.New(batch.Config{Handler: handler, SQS: c.api, DLQURL: q.DLQURL, MaxReceiveCount: 3, Pipeline: p.Name,
				Logger: slog.New(batch.NewLogHandler(io.Discard, nil)), Metrics: io.Discard})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			cpu0 := rusage.CPUTime()
			for b.Loop() {
				resp, err := proc.Handle(ctx, ev)
				if err != nil || len(resp.BatchItemFailures) != 0 {
					b.Fatalf("handle: %v, %d retried: every record must be dead-lettered", err, len(resp.BatchItemFailures))
				}
			}
			n := float64(b.N * len(ev.Records))
			b.ReportMetric(float64((rusage.CPUTime()-cpu0).Nanoseconds())/n, "cpu-ns/deadletter")
		})
	}
}
