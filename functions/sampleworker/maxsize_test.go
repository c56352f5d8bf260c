package sampleworker

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/functions/batch"
	"github.com/agentdlq/agentdlq/internal/sqsio"
	"github.com/agentdlq/agentdlq/ledger"
)

// TestBodyAtTheHotQueueMaximumIsDeadLetteredAtOnce: a poison body as large
// as a hot queue sized to its DLQ (the DLQ's maximum less
// deadletter.Reserve) is dead-lettered on its first receive with its own
// reason, its attributes and its dlq_meta, at SQS's 1 MiB (the default) and
// at a DLQ of 256 KiB. Before, the worker assumed 256 KiB and retried a
// 1 MiB body until the broker moved it as receive_limit.
func TestBodyAtTheHotQueueMaximumIsDeadLetteredAtOnce(t *testing.T) {
	t.Parallel()
	for _, dlqMax := range []int{0, 256 << 10} {
		limit := dlqMax
		if limit == 0 {
			limit = batch.DefaultMaxMessageBytes
		}
		for _, tt := range []struct {
			name   string
			body   func(n int) string
			reason deadletter.Reason
		}{
			{name: "invalid JSON", body: func(n int) string { return `{"task_id":"` + strings.Repeat("x", n-len(`{"task_id":"`)) }, reason: deadletter.ReasonJSONInvalid},
			{name: "not a task", body: func(n int) string { return `{"pad":"` + strings.Repeat("x", n-len(`{"pad":""}`)) + `"}` }, reason: deadletter.ReasonSchemaInvalid},
		} {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				rec := &sqsio.Recorder{}
				p, q := testPipeline(t, false, 4)
				w, err := New(Config{
					Pipeline: p, Queues: q, SQS: rec, Ledger: ledger.NewMemory(), DLQMaxMessageBytes: dlqMax,
					Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), Metrics: io.Discard,
					Now: func() time.Time { return time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC) },
				})
				require.NoError(t, err)
				body := tt.body(limit - deadletter.Reserve)
				require.Len(t, body, limit-deadletter.Reserve)
				ev := events.SQSEvent{Records: []events.SQSMessage{{
					MessageId: "m-max", ReceiptHandle: "rh", Body: body, EventSource: "aws:sqs", EventSourceARN: q.HotARN,
					Attributes: map[string]string{"ApproximateReceiveCount": "1", "SentTimestamp": "1796047200000"},
					MessageAttributes: map[string]events.SQSMessageAttribute{
						"tenant":   {DataType: "String", StringValue: aws.String("acme")},
						"producer": {DataType: "String", StringValue: aws.String("agent-runner")},
					},
				}}}
				resp, err := w.Handle(context.Background(), ev)
				require.NoError(t, err)
				assert.Empty(t, resp.BatchItemFailures, "dead-lettered on the first receive, not retried")

				letters, err := rec.DeadLetters()
				require.NoError(t, err)
				require.Len(t, letters, 1)
				dl := letters[0]
				assert.Equal(t, tt.reason, dl.Reason)
				assert.Equal(t, body, dl.Body, "the body byte for byte")
				assert.Equal(t, "acme", dl.Attributes["tenant"].StringValue)
				assert.Equal(t, "agent-runner", dl.Attributes["producer"].StringValue)
				meta, original, err := deadletter.DecodeDeadLetter(dl.Attributes)
				require.NoError(t, err)
				assert.Empty(t, meta.Reduced, "the whole dlq_meta fits beside the body")
				assert.Equal(t, 1, meta.Attempts)
				assert.Len(t, original, 2)
				assert.LessOrEqual(t, deadletter.MessageSize(len(dl.Body), dl.Attributes), limit)
			})
		}
	}
}
