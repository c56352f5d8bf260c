package batch_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/functions/batch"
	"github.com/agentdlq/agentdlq/local/esm"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/testkit/localtest"
)

// TestRetryAfterOnTheEmulator shows on the SQS emulator what a Retry-After
// does to the message. Counted: ChangeMessageVisibility hides it for the
// delay, and it comes back with ApproximateReceiveCount 2. Requeued (the
// pipeline allows it): a copy is sent to the hot queue with the delay as
// DelaySeconds and AttrRequeued, the original is deleted (as Lambda deletes
// an acknowledged record), and the copy comes back with
// ApproximateReceiveCount 1 — the rate-limited receive was not counted.
// The delay is 4 s: an immediate receive must find nothing, a long poll
// must find the message again.
func TestRetryAfterOnTheEmulator(t *testing.T) {
	t.Parallel()
	const delay = 4 * time.Second
	cfg := localtest.AWS(t)
	for _, tt := range []struct {
		name     string
		requeues int
	}{
		{name: "counted: hidden for the delay", requeues: 0},
		{name: "requeued: not counted", requeues: 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			p := &pipeline.Pipeline{Name: "retry-after", Owner: "o", MaxReceiveCount: 3, RetryAfterRequeues: tt.requeues}
			p.ApplyDefaults()
			require.NoError(t, p.Validate())
			q := localtest.Queues(t, cfg, p)
			client := sqs.NewFromConfig(cfg)
			proc, err := batch.New(batch.Config{
				Handler: func(context.Context, batch.Record) error {
					return batch.Transient(errors.New("upstream returned 429")).After(delay)
				},
				SQS: client, DLQURL: q.DLQURL, HotQueueURL: q.HotURL, MaxReceiveCount: p.MaxReceiveCount, Pipeline: p.Name,
				RetryAfterRequeues: p.RetryAfterRequeues,
				Logger:             slog.New(slog.NewJSONHandler(io.Discard, nil)), Metrics: io.Discard,
			})
			require.NoError(t, err)
			_, err = client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.HotURL), MessageBody: aws.String(`{"task":"rate limited"}`),
				MessageAttributes: map[string]types.MessageAttributeValue{"tenant": {DataType: aws.String("String"), StringValue: aws.String("acme")}}})
			require.NoError(t, err)

			receive := func(wait int32) []types.Message {
				out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.HotURL), MaxNumberOfMessages: 10, WaitTimeSeconds: wait,
					MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}})
				require.NoError(t, err)
				return out.Messages
			}
			first := receive(5)
			require.Len(t, first, 1)
			resp, err := proc.Handle(ctx, esm.Event(first, q.HotARN, cfg.Region))
			require.NoError(t, err)
			if tt.requeues == 0 {
				require.Len(t, resp.BatchItemFailures, 1, "retried")
			} else {
				require.Empty(t, resp.BatchItemFailures, "acknowledged: the copy carries it on")
				_, err = client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(q.HotURL), ReceiptHandle: first[0].ReceiptHandle})
				require.NoError(t, err)
			}

			assert.Empty(t, receive(0), "hidden (or delayed) for the Retry-After")
			var again []types.Message
			for range 4 {
				if again = receive(5); len(again) > 0 {
					break
				}
			}
			require.Len(t, again, 1, "back after the Retry-After")
			m := again[0]
			assert.Equal(t, `{"task":"rate limited"}`, aws.ToString(m.Body))
			assert.Equal(t, "acme", aws.ToString(m.MessageAttributes["tenant"].StringValue))
			if tt.requeues == 0 {
				assert.Equal(t, aws.ToString(first[0].MessageId), aws.ToString(m.MessageId), "the same message")
				assert.Equal(t, "2", m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)], "the receive counted")
				_, ok := m.MessageAttributes[batch.AttrRequeued]
				assert.False(t, ok)
				return
			}
			assert.NotEqual(t, aws.ToString(first[0].MessageId), aws.ToString(m.MessageId), "a copy")
			assert.Equal(t, "1", m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)], "a fresh receive count")
			assert.Equal(t, "0/1", aws.ToString(m.MessageAttributes[batch.AttrRequeued].StringValue), "no receive spent, one requeue")
			// The copy as the worker sees it: the budget still counts 1.
			var seen int
			probe, err := batch.New(batch.Config{
				Handler: func(_ context.Context, r batch.Record) error { seen = r.ReceiveCount; return nil },
				SQS:     client, DLQURL: q.DLQURL, MaxReceiveCount: 3, Pipeline: p.Name, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), Metrics: io.Discard,
			})
			require.NoError(t, err)
			_, err = probe.Handle(ctx, esm.Event(again, q.HotARN, cfg.Region))
			require.NoError(t, err)
			assert.Equal(t, 1, seen, "Record.ReceiveCount of the copy")
			n, err := esm.Depth(ctx, client, q.DLQURL)
			require.NoError(t, err)
			assert.Zero(t, n, "nothing dead-lettered")
		})
	}
}
