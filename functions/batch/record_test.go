package batch

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
)

// keptRecord is what a handler kept of a record after its call.
type keptRecord struct {
	id, receipt, arn, sentAt string
	body                     []byte
	attrs                    map[string]events.SQSMessageAttribute
	msg                      events.SQSMessage
}

// keepingSQS keeps the SendMessageBatch inputs it is given, as they are (no
// copy), as a tracing or recording middleware would.
type keepingSQS struct {
	mu     sync.Mutex
	inputs []*sqs.SendMessageBatchInput
}

func (k *keepingSQS) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.inputs = append(k.inputs, in)
	out := &sqs.SendMessageBatchOutput{}
	for _, e := range in.Entries {
		out.Successful = append(out.Successful, types.SendMessageBatchResultEntry{Id: e.Id})
	}
	return out, nil
}

func (k *keepingSQS) ChangeMessageVisibility(context.Context, *sqs.ChangeMessageVisibilityInput, ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	return &sqs.ChangeMessageVisibilityOutput{}, nil
}

// TestRecordValuesAreSafeToKeep: through each entry, what a handler keeps of
// a record (body, ids, attributes, the SQS message) stays as it was after
// the call, when the runtime reuses the payload's buffer and the next
// invocation runs; what the handler does to its body does not change the
// dead letter; and an SQS client that keeps its inputs without copying them
// sees them unchanged by later sends.
func TestRecordValuesAreSafeToKeep(t *testing.T) {
	msg := func(id, body string) events.SQSMessage {
		return events.SQSMessage{
			MessageId: id, ReceiptHandle: "rh-" + id, Body: body, EventSource: "aws:sqs",
			EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:agent-tasks",
			Attributes:     map[string]string{"ApproximateReceiveCount": "1", "SentTimestamp": "1796047200000", "AWSTraceHeader": "Root=1-" + id},
			MessageAttributes: map[string]events.SQSMessageAttribute{
				"tenant": {DataType: "String", StringValue: aws.String("tenant-" + id)},
			},
		}
	}
	first := events.SQSEvent{Records: []events.SQSMessage{msg("a1", `{"poison":"first"}`), msg("a2", `{"ok":"first"}`)}}
	second := events.SQSEvent{Records: []events.SQSMessage{msg("b1", `{"poison":"second, longer"}`), msg("b2", `{"ok":"second, longer"}`)}}

	for _, entry := range []string{"Invoke", "Handle", "HandleEvent"} {
		t.Run(entry, func(t *testing.T) {
			var kept []keptRecord
			var records []Record // the records themselves, read after their calls
			client := &keepingSQS{}
			p, err := New(Config{
				SQS: client, DLQURL: testDLQ, MaxReceiveCount: 4, Pipeline: "agent-tasks",
				Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), Metrics: io.Discard,
				Handler: func(_ context.Context, r Record) error {
					records = append(records, r)
					kept = append(kept, keptRecord{
						id: r.MessageID(), receipt: r.ReceiptHandle(), arn: r.EventSourceARN(), sentAt: r.Attribute("SentTimestamp"),
						body: r.Body(), attrs: r.MessageAttributes(), msg: r.SQSMessage(),
					})
					poison := bytes.Contains(r.Body(), []byte("poison"))
					copy(r.Body(), bytes.Repeat([]byte{'#'}, len(r.Body()))) // the handler's own copy
					if poison {
						return Poison(deadletter.ReasonSchemaInvalid, nil)
					}
					return nil
				},
			})
			require.NoError(t, err)

			// One buffer for both invocations, as the Lambda runtime reuses its own.
			buf := make([]byte, 0, 4096)
			run := func(ev events.SQSEvent) {
				payload, err := json.Marshal(ev)
				require.NoError(t, err)
				buf = append(buf[:0], payload...)
				switch entry {
				case "Invoke":
					_, err = p.Invoke(context.Background(), buf)
				case "Handle":
					_, err = p.Handle(context.Background(), ev)
				case "HandleEvent":
					var lean *Event
					if lean, err = DecodeEvent(buf); err == nil {
						_, err = p.HandleEvent(context.Background(), lean)
					}
				}
				require.NoError(t, err)
				for i := range buf {
					buf[i] = 'x'
				}
			}
			run(first)
			run(second)

			require.Len(t, kept, 4)
			for i, m := range append(first.Records, second.Records...) {
				k := kept[i]
				assert.Equal(t, m.MessageId, k.id)
				assert.Equal(t, m.ReceiptHandle, k.receipt)
				assert.Equal(t, m.EventSourceARN, k.arn)
				assert.Equal(t, "1796047200000", k.sentAt)
				assert.Equal(t, bytes.Repeat([]byte{'#'}, len(m.Body)), k.body, "the handler's copy, as it left it")
				assert.Equal(t, m.MessageAttributes, k.attrs)
				assert.Equal(t, m.Body, k.msg.Body)
				assert.Equal(t, m.Attributes, k.msg.Attributes)
				// The record read after its call, the payload reused since.
				r := records[i]
				assert.Equal(t, m.MessageId, r.MessageID())
				assert.Equal(t, "Root=1-"+m.MessageId, r.Attribute("AWSTraceHeader"))
				assert.Equal(t, int64(1796047200000), r.SentAt().UnixMilli())
				assert.Equal(t, m.MessageAttributes, r.MessageAttributes())
				assert.Equal(t, m.Attributes, r.SQSMessage().Attributes)
				assert.Equal(t, m.Body, r.SQSMessage().Body, "as received")
				assert.Equal(t, "aws:sqs", r.SQSMessage().EventSource)
			}
			// The dead letters, as the client kept them: the bodies as
			// received, whatever the handler did to its copy.
			require.Len(t, client.inputs, 2)
			for i, want := range []events.SQSMessage{first.Records[0], second.Records[0]} {
				in := client.inputs[i]
				require.Len(t, in.Entries, 1)
				e := in.Entries[0]
				assert.Equal(t, want.Body, aws.ToString(e.MessageBody))
				assert.Equal(t, "tenant-"+want.MessageId, aws.ToString(e.MessageAttributes["tenant"].StringValue))
				assert.Equal(t, string(deadletter.ReasonSchemaInvalid), aws.ToString(e.MessageAttributes[deadletter.AttrReason].StringValue))
				meta, err := deadletter.ParseMeta([]byte(aws.ToString(e.MessageAttributes[deadletter.AttrMeta].StringValue)))
				require.NoError(t, err)
				assert.Equal(t, want.MessageId, meta.MessageID)
				assert.Equal(t, hexSHA256(want.Body), meta.InputSHA256)
				assert.Equal(t, "Root=1-"+want.MessageId, aws.ToString(e.MessageSystemAttributes["AWSTraceHeader"].StringValue))
			}
		})
	}
}

// order is a payload of a handler's own, not an agent task.
type order struct{ id, tenant, trace string }

func (o order) DeadLetterFields() deadletter.TaskFields {
	return deadletter.TaskFields{TaskID: o.id, Tenant: o.tenant, TraceID: o.trace, IdempotencyKey: "order:" + o.id}
}

// TestDescribeTakesAnyPayload: what a handler's own type names is what the
// dead letter's dlq_meta and the log line carry.
func TestDescribeTakesAnyPayload(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) {
		c.Handler = func(_ context.Context, r Record) error {
			r.Describe(order{id: "o-1", tenant: "acme", trace: "trace-o-1"})
			return Poison(deadletter.ReasonSchemaInvalid, nil)
		}
	})
	got := h.run(t, events.SQSEvent{Records: []events.SQSMessage{sqsMsg("m1", `{"order":"o-1"}`, 1)}})
	require.Equal(t, deadLettered(deadletter.ReasonSchemaInvalid), got["m1"])
	require.Len(t, h.sqs.sent, 1)
	meta, err := deadletter.ParseMeta([]byte(aws.ToString(h.sqs.sent[0].MessageAttributes[deadletter.AttrMeta].StringValue)))
	require.NoError(t, err)
	assert.Equal(t, "o-1", meta.TaskID)
	assert.Equal(t, "acme", meta.Tenant)
	assert.Equal(t, "trace-o-1", meta.TraceID)
	assert.Equal(t, "order:o-1", meta.IdempotencyKey)
	assert.Contains(t, h.logs.String(), `"trace_id":"trace-o-1"`)
}
