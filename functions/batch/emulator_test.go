package batch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/functions/batch"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/testkit/localtest"
)

// TestDeadLettersFitAtTheSizeLimit sends dead letters at a DLQ's 256 KiB
// message size limit (the default of queues made before August 2025) to
// the SQS emulator (whose DLQ refuses a larger
// message, counting body, attribute names, types and values as SQS does)
// and the claim checks to the S3 emulator. Before FitDeadLetter, the first
// two were batch item failures on every receive.
func TestDeadLettersFitAtTheSizeLimit(t *testing.T) {
	t.Parallel()
	cfg := localtest.AWS(t)
	ctx := t.Context()
	p := &pipeline.Pipeline{Name: "fit-limit", Owner: "o", MaxReceiveCount: 3}
	p.ApplyDefaults()
	q := localtest.Queues(t, cfg, p)
	client := sqs.NewFromConfig(cfg)
	const limit = 256 * 1024
	_, err := client.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(q.DLQURL),
		Attributes: map[string]string{string(types.QueueAttributeNameMaximumMessageSize): strconv.Itoa(limit)}})
	require.NoError(t, err)
	bucket := localtest.Bucket(t, cfg)
	s3c := s3.NewFromConfig(cfg)

	proc, err := batch.New(batch.Config{
		Handler: func(context.Context, batch.Record) error {
			// A long error text: the full dlq_meta is ~900 bytes, its identity ~400.
			return batch.Poison(deadletter.ReasonSchemaInvalid, errors.New("args must be an object: "+strings.Repeat("detail ", 40)))
		},
		SQS: client, DLQURL: q.DLQURL, MaxReceiveCount: 3, Pipeline: p.Name, MaxMessageBytes: limit,
		Evidence: s3c, EvidenceBucket: bucket,
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), Metrics: io.Discard,
	})
	require.NoError(t, err)

	// A body of n bytes: a JSON string, so that it is a realistic task body.
	body := func(n int) string { return `"` + strings.Repeat("b", n-2) + `"` }
	manyAttrs := map[string]events.SQSMessageAttribute{}
	for i := range 10 {
		manyAttrs[fmt.Sprintf("a%02d", i)] = events.SQSMessageAttribute{DataType: "String", StringValue: aws.String(strings.Repeat("v", 9000))}
	}
	msg := func(id, b string, attrs map[string]events.SQSMessageAttribute) events.SQSMessage {
		return events.SQSMessage{MessageId: id, ReceiptHandle: "rh-" + id, Body: b, MessageAttributes: attrs, EventSource: "aws:sqs",
			EventSourceARN: "arn:aws:sqs:us-east-1:000000000000:fit-limit",
			Attributes:     map[string]string{"ApproximateReceiveCount": "1", "SentTimestamp": strconv.FormatInt(time.Now().UnixMilli(), 10)}}
	}
	tests := []struct {
		name string
		msg  events.SQSMessage
		// wantReduced is what dlq_meta says was given up; wantRetried that
		// the record could not be dead-lettered at all.
		wantReduced []deadletter.Reduction
		wantRetried bool
	}{
		{name: "fits as it is", msg: msg("fits", body(limit-900), nil)},
		{name: "folded attributes too large for dlq_meta", msg: msg("folded", body(1000), manyAttrs),
			wantReduced: []deadletter.Reduction{deadletter.ReducedHistory, deadletter.ReducedFolded}},
		{name: "the body leaves room for the identity only", msg: msg("identity", body(limit-550), map[string]events.SQSMessageAttribute{
			"tenant": {DataType: "String", StringValue: aws.String("acme")}}),
			wantReduced: []deadletter.Reduction{deadletter.ReducedHistory, deadletter.ReducedFolded, deadletter.ReducedAttributes, deadletter.ReducedMeta}},
		{name: "the body leaves no room at all", msg: msg("full", body(limit-40), nil), wantRetried: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := proc.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{tt.msg}})
			require.NoError(t, err)
			if tt.wantRetried {
				require.Len(t, resp.BatchItemFailures, 1, "the broker moves it after maxReceiveCount, body intact")
				return
			}
			require.Empty(t, resp.BatchItemFailures, "dead-lettered on this receive, not retried")
		})
	}
	// What the DLQ holds: every dead letter's body byte for byte. A receive
	// whose response the client loses (docs/local.md: the emulator
	// connection race, likelier with these ~256 KiB messages) hides its
	// messages for the visibility timeout: keep that short, so that they
	// come back within the loop; a message seen twice is counted once.
	got := map[string]types.Message{}
	for range 40 {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.DLQURL), MaxNumberOfMessages: 10,
			MessageAttributeNames: []string{"All"}, WaitTimeSeconds: 1, VisibilityTimeout: 2})
		require.NoError(t, err)
		for _, m := range out.Messages {
			attrs := map[string]deadletter.Attribute{}
			for name, a := range m.MessageAttributes {
				attrs[name] = deadletter.Attribute{DataType: aws.ToString(a.DataType), StringValue: aws.ToString(a.StringValue), BinaryValue: a.BinaryValue}
			}
			meta, _, err := deadletter.DecodeDeadLetter(attrs)
			require.NoError(t, err)
			got[meta.MessageID] = m
		}
		if len(got) == 3 {
			break
		}
	}
	require.Len(t, got, 3)
	for _, tt := range tests {
		if tt.wantRetried {
			continue
		}
		m := got[tt.msg.MessageId]
		assert.Equal(t, tt.msg.Body, aws.ToString(m.Body), "%s: the body byte for byte", tt.name)
		meta := aws.ToString(m.MessageAttributes[deadletter.AttrMeta].StringValue)
		var back deadletter.Meta
		require.NoError(t, json.Unmarshal([]byte(meta), &back))
		assert.Equal(t, tt.wantReduced, back.Reduced, tt.name)
		if len(tt.wantReduced) < 2 {
			assert.Empty(t, back.Evidence)
			continue
		}
		// The claim check holds every original attribute and the whole metadata.
		key := strings.TrimPrefix(back.Evidence, "s3://"+bucket+"/")
		require.NotEqual(t, back.Evidence, key, "%s: points into the evidence bucket", tt.name)
		obj, err := s3c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		require.NoError(t, err)
		var ev deadletter.Evidence
		require.NoError(t, json.NewDecoder(obj.Body).Decode(&ev))
		_ = obj.Body.Close()
		assert.Len(t, ev.Attributes, len(tt.msg.MessageAttributes), tt.name)
		assert.Equal(t, tt.msg.MessageId, ev.Meta.MessageID)
		assert.Equal(t, tt.wantReduced, ev.Reduced)
	}
}
