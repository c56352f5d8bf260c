package sampleworker

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/agenttask"
	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/internal/sqsio"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/testkit/localtest"
)

// TestDeadLettersOnTheEmulator runs fixtures through the worker with the
// real SQS client against the local SQS emulator and the DynamoDB ledger on
// the local DynamoDB: every dead letter arrives in the DLQ with the original
// body byte for byte, its reason, and every original attribute (folded or
// kept); the ledger counts them. Each fixture runs on both paths: Handle
// (events.SQSEvent) and Invoke (the lean path of the Lambda entry), whose
// payload buffer is then overwritten, as the Lambda runtime reuses it,
// before the DLQ is read.
func TestDeadLettersOnTheEmulator(t *testing.T) {
	t.Parallel()
	cfg := localtest.AWS(t)
	client := sqs.NewFromConfig(cfg)
	for _, tt := range []struct {
		file string
		fifo bool
		lean bool
	}{
		{file: "sqs-mixed.json"},
		{file: "sqs-attributes-10.json"},
		{file: "sqs-fifo-group.json", fifo: true},
		{file: "sqs-mixed.json", lean: true},
		{file: "sqs-attributes-10.json", lean: true},
		{file: "sqs-fifo-group.json", fifo: true, lean: true},
	} {
		name := tt.file
		if tt.lean {
			name += "/lean"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p, _ := testPipeline(t, tt.fifo, 4)
			q := localtest.Queues(t, cfg, p)
			table := localtest.Table(t, cfg)
			l := ledger.NewDynamo(dynamodb.NewFromConfig(cfg), table)
			w, err := New(Config{Pipeline: p, Queues: q, SQS: client, Ledger: l, WorkerVersion: "emulator-test",
				Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), Metrics: io.Discard})
			require.NoError(t, err)

			ev, data := loadEvent(t, tt.file)
			var resp events.SQSEventResponse
			if tt.lean {
				payload := bytes.Clone(data)
				out, err := w.Invoke(context.Background(), payload)
				require.NoError(t, err)
				require.NoError(t, json.Unmarshal(out, &resp))
				for i := range payload {
					payload[i] = 'x' // the runtime's next invocation
				}
			} else {
				resp, err = w.Handle(context.Background(), ev)
				require.NoError(t, err)
			}

			// What the recording DLQ sees is what the emulator must hold.
			want := &recordingRun{}
			want.run(t, tt.file, tt.fifo)
			assert.Len(t, resp.BatchItemFailures, want.retried)

			got := drain(t, client, q.DLQURL, len(want.deadLetters))
			require.Len(t, got, len(want.deadLetters))
			byID := map[string]types.Message{}
			for _, m := range got {
				meta, err := deadletter.ParseMeta([]byte(aws.ToString(m.MessageAttributes[deadletter.AttrMeta].StringValue)))
				require.NoError(t, err)
				byID[meta.MessageID] = m
			}
			for id, dl := range want.deadLetters {
				m, ok := byID[id]
				require.True(t, ok, "dead letter of %s in the DLQ", id)
				assert.Equal(t, dl.body, aws.ToString(m.Body), "body byte for byte")
				assert.Equal(t, string(dl.reason), aws.ToString(m.MessageAttributes[deadletter.AttrReason].StringValue))
				attrs := map[string]deadletter.Attribute{}
				for name, v := range m.MessageAttributes {
					attrs[name] = deadletter.Attribute{DataType: aws.ToString(v.DataType), StringValue: aws.ToString(v.StringValue), BinaryValue: v.BinaryValue}
				}
				_, original, err := deadletter.DecodeDeadLetter(attrs)
				require.NoError(t, err)
				assert.Len(t, original, dl.attrs, "every original attribute of %s", id)
				if dl.key != "" {
					task, err := agenttask.DecodeTask([]byte(dl.body), nil)
					require.NoError(t, err)
					e, found, err := l.Get(context.Background(), ledger.Key(p.Name, task.Tenant, dl.key))
					require.NoError(t, err)
					require.True(t, found)
					assert.Equal(t, ledger.StateDeadLettered, e.State)
					assert.Equal(t, 1, e.DeadLetterCount)
				}
			}
		})
	}
}

// expectedDL is one dead letter the recording DLQ saw.
type expectedDL struct {
	body, key string
	reason    deadletter.Reason
	attrs     int // original message attributes
}

// recordingRun is what the worker does with a fixture on a recording DLQ.
type recordingRun struct {
	retried     int
	deadLetters map[string]expectedDL
}

func (r *recordingRun) run(t *testing.T, file string, fifo bool) {
	t.Helper()
	ev, _ := loadEvent(t, file)
	attrs := map[string]int{}
	for _, m := range ev.Records {
		attrs[m.MessageId] = len(m.MessageAttributes)
	}
	rec := &sqsio.Recorder{}
	w := newTestWorker(t, fifo, 4, rec)
	resp, err := w.Handle(context.Background(), ev)
	require.NoError(t, err)
	r.retried = len(resp.BatchItemFailures)
	dls, err := rec.DeadLetters()
	require.NoError(t, err)
	r.deadLetters = map[string]expectedDL{}
	for _, dl := range dls {
		meta, err := deadletter.ParseMeta(dl.Meta)
		require.NoError(t, err)
		r.deadLetters[dl.MessageID] = struct {
			body, key string
			reason    deadletter.Reason
			attrs     int
		}{dl.Body, meta.IdempotencyKey, dl.Reason, attrs[dl.MessageID]}
	}
}

// drain receives up to n messages from url (long polling, bounded).
func drain(t *testing.T, c *sqs.Client, url string, n int) []types.Message {
	t.Helper()
	// A short visibility timeout, and messages counted once by id: a receive
	// whose response is lost on a loaded machine leaves its messages in
	// flight, and they must come back before the deadline.
	var out []types.Message
	seen := map[string]bool{}
	deadline := time.Now().Add(30 * time.Second)
	for len(out) < n && time.Now().Before(deadline) {
		res, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 5,
			MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		})
		require.NoError(t, err)
		for _, m := range res.Messages {
			if id := aws.ToString(m.MessageId); !seen[id] {
				seen[id] = true
				out = append(out, m)
			}
		}
	}
	return out
}
