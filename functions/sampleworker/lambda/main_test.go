package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/testkit/localtest"
)

// The Lambda entry wired from its environment, as the CDK app sets it, on
// the emulators: a dead letter too large for the DLQ keeps what it gave up
// as a claim check in the evidence bucket (the SDK's S3 client), with every
// original attribute.
func TestSetupKeepsClaimChecks(t *testing.T) {
	cfg := localtest.AWS(t)
	def, err := pipeline.Load(filepath.Join("..", "..", "..", pipeline.DefaultFile))
	require.NoError(t, err)
	p, err := def.Get("agent-tasks")
	require.NoError(t, err)
	q := localtest.Queues(t, cfg, p)
	bucket := localtest.Bucket(t, cfg)
	pj, err := json.Marshal(p)
	require.NoError(t, err)
	for k, v := range map[string]string{
		"AGENTDLQ_PIPELINE_JSON": string(pj), "AGENTDLQ_LEDGER_TABLE": localtest.Table(t, cfg),
		"AGENTDLQ_HOT_QUEUE_URL": q.HotURL, "AGENTDLQ_HOT_QUEUE_ARN": q.HotARN, "AGENTDLQ_DLQ_URL": q.DLQURL, "AGENTDLQ_DLQ_ARN": q.DLQARN,
		"AGENTDLQ_EVIDENCE_BUCKET": bucket, "AWS_REGION": localtest.Region, "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
	} {
		t.Setenv(k, v)
	}
	w, err := setup(slog.New(slog.NewJSONHandler(io.Discard, nil)))
	require.NoError(t, err)

	body, _ := json.Marshal(map[string]any{
		"task_id": "task-1", "run_id": "run-1", "tenant": "acme", "idempotency_key": "claim-1", "tool": "web.search", "tool_version": "1",
		"trace_id": "trace-1", "created_at": "2026-11-29T10:00:00Z", "schema_version": 1,
		"args": map[string]any{"q": "x", "fault": map[string]any{"kind": "error", "error": "tool crashed"}},
	})
	attrs := map[string]events.SQSMessageAttribute{}
	for i := range 8 {
		attrs["a"+strconv.Itoa(i)] = events.SQSMessageAttribute{DataType: "String", StringValue: aws.String("v" + strconv.Itoa(i))}
	}
	attrs["z-big"] = events.SQSMessageAttribute{DataType: "String", StringValue: aws.String(strings.Repeat("b", 17_000))}
	ev := events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m-claim-1", ReceiptHandle: "rh", Body: string(body), MessageAttributes: attrs,
		Attributes:     map[string]string{"ApproximateReceiveCount": strconv.Itoa(p.MaxReceiveCount), "SentTimestamp": "1764410400000"},
		EventSourceARN: q.HotARN, EventSource: "aws:sqs", AWSRegion: localtest.Region}}}
	resp, err := w.Handle(context.Background(), ev)
	require.NoError(t, err)
	assert.Empty(t, resp.BatchItemFailures, "dead-lettered, not retried")

	client := sqs.NewFromConfig(cfg)
	out, err := client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.DLQURL), MessageAttributeNames: []string{"All"}, WaitTimeSeconds: 1})
	require.NoError(t, err)
	require.Len(t, out.Messages, 1)
	dl := map[string]deadletter.Attribute{}
	for k, v := range out.Messages[0].MessageAttributes {
		dl[k] = deadletter.Attribute{DataType: aws.ToString(v.DataType), StringValue: aws.ToString(v.StringValue)}
	}
	meta, _, err := deadletter.DecodeDeadLetter(dl)
	require.NoError(t, err)
	prefix := "s3://" + bucket + "/"
	require.True(t, strings.HasPrefix(meta.Evidence, prefix+"agent-tasks/evidence/"), meta.Evidence)

	obj, err := s3.NewFromConfig(cfg).GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(strings.TrimPrefix(meta.Evidence, prefix))})
	require.NoError(t, err)
	defer obj.Body.Close()
	var claim deadletter.Evidence
	require.NoError(t, json.NewDecoder(obj.Body).Decode(&claim))
	assert.Equal(t, "m-claim-1", claim.Meta.MessageID)
	require.Len(t, claim.Attributes, 9)
	assert.Equal(t, strings.Repeat("b", 17_000), claim.Attributes["z-big"].StringValue)
}

// TestBodyAtTheHotQueueMaximumOnTheEmulators: on the SQS emulator, a hot
// queue whose MaximumMessageSize is its DLQ's (1 MiB) less
// deadletter.Reserve takes a poison body of that size; the worker wired from
// its environment dead-letters it on its first receive as json_invalid,
// with its attributes, into the DLQ, which takes it.
func TestBodyAtTheHotQueueMaximumOnTheEmulators(t *testing.T) {
	cfg := localtest.AWS(t)
	ctx := context.Background()
	def, err := pipeline.Load(filepath.Join("..", "..", "..", pipeline.DefaultFile))
	require.NoError(t, err)
	p, err := def.Get("agent-tasks")
	require.NoError(t, err)
	q := localtest.Queues(t, cfg, p)
	client := sqs.NewFromConfig(cfg)
	const dlqMax = 1 << 20
	hotMax := dlqMax - deadletter.Reserve
	for url, size := range map[string]int{q.HotURL: hotMax, q.DLQURL: dlqMax} {
		_, err := client.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url),
			Attributes: map[string]string{"MaximumMessageSize": strconv.Itoa(size)}})
		require.NoError(t, err)
	}
	pj, err := json.Marshal(p)
	require.NoError(t, err)
	for k, v := range map[string]string{
		"AGENTDLQ_PIPELINE_JSON": string(pj), "AGENTDLQ_LEDGER_TABLE": localtest.Table(t, cfg),
		"AGENTDLQ_HOT_QUEUE_URL": q.HotURL, "AGENTDLQ_HOT_QUEUE_ARN": q.HotARN, "AGENTDLQ_DLQ_URL": q.DLQURL, "AGENTDLQ_DLQ_ARN": q.DLQARN,
		"AGENTDLQ_DLQ_MAX_MESSAGE_BYTES": strconv.Itoa(dlqMax),
		"AWS_REGION":                     localtest.Region, "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
	} {
		t.Setenv(k, v)
	}
	w, err := setup(slog.New(slog.NewJSONHandler(io.Discard, nil)))
	require.NoError(t, err)

	// The hot queue's largest message: the body and its two attributes.
	attrs := map[string]sqstypes.MessageAttributeValue{
		"tenant": {DataType: aws.String("String"), StringValue: aws.String("acme")},
		"source": {DataType: aws.String("String"), StringValue: aws.String("agent-runner")},
	}
	attrBytes := 0
	for name, a := range attrs {
		attrBytes += len(name) + len(aws.ToString(a.DataType)) + len(aws.ToString(a.StringValue))
	}
	body := `{"task_id":"` + strings.Repeat("x", hotMax-attrBytes-len(`{"task_id":"`)) // invalid JSON: never closed
	_, err = client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.HotURL), MessageBody: aws.String(body), MessageAttributes: attrs})
	require.NoError(t, err, "the hot queue takes its maximum")
	_, err = client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.HotURL), MessageBody: aws.String(body + "x"), MessageAttributes: attrs})
	require.Error(t, err, "and nothing larger")

	var got []sqstypes.Message
	for range 10 {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.HotURL), MessageAttributeNames: []string{"All"},
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}, WaitTimeSeconds: 1})
		require.NoError(t, err)
		if got = out.Messages; len(got) > 0 {
			break
		}
	}
	require.Len(t, got, 1)
	m := got[0]
	rec := events.SQSMessage{MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body),
		Attributes: m.Attributes, MessageAttributes: map[string]events.SQSMessageAttribute{},
		EventSource: "aws:sqs", EventSourceARN: q.HotARN, AWSRegion: localtest.Region}
	for name, a := range m.MessageAttributes {
		rec.MessageAttributes[name] = events.SQSMessageAttribute{DataType: aws.ToString(a.DataType), StringValue: a.StringValue}
	}
	require.Equal(t, "1", rec.Attributes["ApproximateReceiveCount"])
	payload, err := json.Marshal(events.SQSEvent{Records: []events.SQSMessage{rec}})
	require.NoError(t, err)
	out, err := w.Invoke(ctx, payload)
	require.NoError(t, err)
	assert.JSONEq(t, `{"batchItemFailures":null}`, string(out), "dead-lettered on the first receive, not retried")

	var dl []sqstypes.Message
	for range 10 {
		res, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.DLQURL), MessageAttributeNames: []string{"All"}, WaitTimeSeconds: 1})
		require.NoError(t, err)
		if dl = res.Messages; len(dl) > 0 {
			break
		}
	}
	require.Len(t, dl, 1)
	assert.Equal(t, body, aws.ToString(dl[0].Body), "the body byte for byte")
	letter := map[string]deadletter.Attribute{}
	for k, v := range dl[0].MessageAttributes {
		letter[k] = deadletter.Attribute{DataType: aws.ToString(v.DataType), StringValue: aws.ToString(v.StringValue)}
	}
	meta, original, err := deadletter.DecodeDeadLetter(letter)
	require.NoError(t, err)
	assert.Equal(t, deadletter.ReasonJSONInvalid, meta.Reason)
	assert.Equal(t, 1, meta.Attempts)
	assert.Empty(t, meta.Reduced)
	assert.Equal(t, "acme", original["tenant"].StringValue)
	assert.Equal(t, "agent-runner", original["source"].StringValue)
}
