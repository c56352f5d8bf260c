package localtest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/testkit/localtest"
)

// These tests pin what the local pipeline relies on in the emulators, and the
// gaps docs/local.md lists: when an emulator changes, a test here says so.

func testPipeline(t *testing.T, fifo bool) *pipeline.Pipeline {
	t.Helper()
	f, err := pipeline.Load("../../" + pipeline.DefaultFile)
	require.NoError(t, err)
	name := "agent-tasks"
	if fifo {
		name = "agent-steps"
	}
	p, err := f.Get(name)
	require.NoError(t, err)
	cp := *p
	return &cp
}

func receive(t *testing.T, c *sqs.Client, url string, vis int32) []types.Message {
	t.Helper()
	out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: vis,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"All"},
	})
	require.NoError(t, err)
	return out.Messages
}

// Fault: a message that is never deleted. Must hold: after exactly
// maxReceiveCount receives the emulator's redrive policy moves it to the DLQ
// with its id, body and SentTimestamp (what triage infers receive_limit from).
func TestSQSRedrivePolicyMovesAfterMaxReceiveCount(t *testing.T) {
	t.Parallel()
	cfg := localtest.AWS(t)
	c := sqs.NewFromConfig(cfg)
	p := testPipeline(t, false)
	q := localtest.Queues(t, cfg, p)
	sent, err := c.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(q.HotURL), MessageBody: aws.String(`{"n":1}`)})
	require.NoError(t, err)

	var sentTimestamp string
	for i := 1; i <= p.MaxReceiveCount; i++ {
		msgs := receive(t, c, q.HotURL, 30)
		require.Len(t, msgs, 1, "receive %d", i)
		sentTimestamp = msgs[0].Attributes["SentTimestamp"]
		assert.Equal(t, strconv.Itoa(i), msgs[0].Attributes["ApproximateReceiveCount"])
		// Give it back at once (a failed attempt without waiting for the visibility timeout).
		_, err := c.ChangeMessageVisibility(context.Background(), &sqs.ChangeMessageVisibilityInput{
			QueueUrl: aws.String(q.HotURL), ReceiptHandle: msgs[0].ReceiptHandle, VisibilityTimeout: 0})
		require.NoError(t, err)
	}
	assert.Empty(t, receive(t, c, q.HotURL, 30), "receive %d must not see the message", p.MaxReceiveCount+1)
	dl := receive(t, c, q.DLQURL, 30)
	require.Len(t, dl, 1)
	assert.Equal(t, aws.ToString(sent.MessageId), aws.ToString(dl[0].MessageId))
	assert.Equal(t, `{"n":1}`, aws.ToString(dl[0].Body))
	assert.Equal(t, sentTimestamp, dl[0].Attributes["SentTimestamp"], "a standard queue keeps the original enqueue time")
	// AWS stamps DeadLetterQueueSourceArn on a redrive-policy move; fauxqs
	// does not, and the harness (scripts/fauxqs.mjs) adds it, as it adds the
	// sender's access key as SenderId: triage trusts dead-letter evidence by them.
	assert.Equal(t, q.HotARN, dl[0].Attributes["DeadLetterQueueSourceArn"], "the broker's mark of a moved message")
	assert.Equal(t, "test", dl[0].Attributes["SenderId"], "the access key that sent it")
}

// Must hold: ChangeMessageVisibility hides a received message for the given
// time (the worker's backoff), and attributes of every type round-trip.
func TestSQSVisibilityAndAttributes(t *testing.T) {
	t.Parallel()
	cfg := localtest.AWS(t)
	c := sqs.NewFromConfig(cfg)
	q := localtest.Queues(t, cfg, testPipeline(t, false))
	ctx := context.Background()
	_, err := c.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(q.HotURL), MessageBody: aws.String("x"),
		MessageAttributes: map[string]types.MessageAttributeValue{
			"s": {DataType: aws.String("String"), StringValue: aws.String("v")},
			"n": {DataType: aws.String("Number"), StringValue: aws.String("42")},
			"b": {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1, 2}},
		},
	})
	require.NoError(t, err)
	msgs := receive(t, c, q.HotURL, 30)
	require.Len(t, msgs, 1)
	m := msgs[0]
	assert.Equal(t, "v", aws.ToString(m.MessageAttributes["s"].StringValue))
	assert.Equal(t, "Number", aws.ToString(m.MessageAttributes["n"].DataType))
	assert.Equal(t, []byte{0, 1, 2}, m.MessageAttributes["b"].BinaryValue)
	assert.NotEmpty(t, aws.ToString(m.MD5OfBody))

	_, err = c.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(q.HotURL), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 2})
	require.NoError(t, err)
	assert.Empty(t, receive(t, c, q.HotURL, 30), "hidden by ChangeMessageVisibility")
	time.Sleep(1200 * time.Millisecond)
	again := receive(t, c, q.HotURL, 30)
	require.Len(t, again, 1, "visible again after the backoff")
	assert.Equal(t, "2", again[0].Attributes["ApproximateReceiveCount"])
}

// Must hold: a FIFO queue delivers a group in order, one group's messages
// never to two receivers at once, with MessageGroupId on the message.
func TestSQSFIFOGroups(t *testing.T) {
	t.Parallel()
	cfg := localtest.AWS(t)
	c := sqs.NewFromConfig(cfg)
	q := localtest.Queues(t, cfg, testPipeline(t, true))
	ctx := context.Background()
	for i := range 3 {
		_, err := c.SendMessage(ctx, &sqs.SendMessageInput{
			QueueUrl: aws.String(q.HotURL), MessageBody: aws.String(strconv.Itoa(i)),
			MessageGroupId: aws.String("run-1"), MessageDeduplicationId: aws.String(strconv.Itoa(i)),
		})
		require.NoError(t, err)
	}
	msgs := receive(t, c, q.HotURL, 30)
	require.NotEmpty(t, msgs)
	for i, m := range msgs {
		assert.Equal(t, strconv.Itoa(i), aws.ToString(m.Body))
		assert.Equal(t, "run-1", m.Attributes["MessageGroupId"])
	}
	assert.Empty(t, receive(t, c, q.HotURL, 30), "the group is locked while its messages are in flight")
}

// Gap: fauxqs has no message move tasks; redrive start is tested on its
// serialized request, and locally selective redrive (receive, send, delete)
// is the way back.
func TestSQSNoMessageMoveTasks(t *testing.T) {
	t.Parallel()
	cfg := localtest.AWS(t)
	c := sqs.NewFromConfig(cfg)
	q := localtest.Queues(t, cfg, testPipeline(t, false))
	_, err := c.StartMessageMoveTask(context.Background(), &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(q.DLQARN), DestinationArn: aws.String(q.HotARN)})
	var api smithy.APIError
	require.ErrorAs(t, err, &api, "if fauxqs gained move tasks, update docs/local.md")
	t.Logf("StartMessageMoveTask on fauxqs: %s: %s", api.ErrorCode(), api.ErrorMessage())
}

// Must hold: conditional writes (the ledger's lease). Gaps: no TTL, no transactions.
func TestDynamoDBConditionalWritesAndGaps(t *testing.T) {
	t.Parallel()
	cfg := localtest.AWS(t)
	c := dynamodb.NewFromConfig(cfg)
	table := localtest.Table(t, cfg)
	ctx := context.Background()
	put := func() error {
		_, err := c.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:           aws.String(table),
			Item:                map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "k1"}},
			ConditionExpression: aws.String("attribute_not_exists(pk)"),
		})
		return err
	}
	require.NoError(t, put())
	var cond *ddbtypes.ConditionalCheckFailedException
	require.ErrorAs(t, put(), &cond)

	_, err := c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(table),
		TimeToLiveSpecification: &ddbtypes.TimeToLiveSpecification{AttributeName: aws.String("expires_at"), Enabled: aws.Bool(true)},
	})
	t.Logf("UpdateTimeToLive on dynalite: %v", err)
	assert.Error(t, err, "if dynalite gained TTL, update docs/local.md")
	_, err = c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{{
		Put: &ddbtypes.Put{TableName: aws.String(table), Item: map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "k2"}}},
	}}})
	t.Logf("TransactWriteItems on dynalite: %v", err)
	assert.Error(t, err, "if dynalite gained transactions, update docs/local.md")
}

// Must hold: S3 put and get with path-style addressing on the gofakes3 server.
func TestS3PathStyle(t *testing.T) {
	t.Parallel()
	cfg := localtest.AWS(t)
	c := s3.NewFromConfig(cfg)
	bucket := localtest.Bucket(t, cfg)
	ctx := context.Background()
	_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("a/b.jsonl"), Body: bytes.NewReader([]byte("{}\n"))})
	require.NoError(t, err)
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("a/b.jsonl")})
	require.NoError(t, err)
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	require.NoError(t, err)
	assert.Equal(t, "{}\n", string(b))
}

func TestUnique(t *testing.T) {
	t.Parallel()
	a, b := localtest.Unique("x"), localtest.Unique("x")
	assert.NotEqual(t, a, b)
	assert.Regexp(t, `^x-[0-9a-f]{12}$`, a)
}

// A long poll whose client gave up (its context ended, the connection
// closed) must not take a message that arrives later: fauxqs alone hands it
// the message and writes the response to the closed socket, leaving the
// message in flight, received by no one, for its visibility timeout;
// scripts/fauxqs.mjs gives such a receive's messages back at once. Both
// kinds of queue: a FIFO group would stay locked as well.
func TestSQSAbandonedLongPollTakesNothing(t *testing.T) {
	t.Parallel()
	cfg := localtest.AWS(t)
	client := sqs.NewFromConfig(cfg)
	ctx := context.Background()
	for _, fifo := range []bool{false, true} {
		name := localtest.Unique("abandoned")
		attrs := map[string]string{"VisibilityTimeout": "30"}
		if fifo {
			name += ".fifo"
			attrs["FifoQueue"] = "true"
		}
		q, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
		require.NoError(t, err)
		url := q.QueueUrl
		t.Cleanup(func() { _, _ = client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: url}) })

		pollCtx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		_, err = client.ReceiveMessage(pollCtx, &sqs.ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: 5})
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded, "the poll was abandoned")
		time.Sleep(100 * time.Millisecond) // the emulator has seen the connection close

		in := &sqs.SendMessageInput{QueueUrl: url, MessageBody: aws.String("after the abandoned poll")}
		if fifo {
			in.MessageGroupId, in.MessageDeduplicationId = aws.String("g"), aws.String("d")
		}
		_, err = client.SendMessage(ctx, in)
		require.NoError(t, err)
		var got []types.Message
		for deadline := time.Now().Add(3 * time.Second); len(got) == 0 && time.Now().Before(deadline); {
			out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: 1})
			require.NoError(t, err)
			got = out.Messages
		}
		require.Len(t, got, 1, "fifo=%v: the message is not held by the abandoned poll", fifo)
		assert.Equal(t, "after the abandoned poll", aws.ToString(got[0].Body))
	}
}

// What fauxqs writes on the wire for bodies the project sends (issue 18's
// first suspect for the lost receives): for multi-byte UTF-8, JSON escapes,
// the edges of SQS's allowed characters and a large body, each
// ReceiveMessage response read off a raw connection has exactly the bytes
// its Content-Length says (none missing, none after it), is valid JSON, and
// gives back every body byte for byte. It holds: the lost receives were the
// SDK's request-body race (sdkhttp), not the emulator.
func TestSQSResponsesAreWholeAndValid(t *testing.T) {
	t.Parallel()
	cfg := localtest.AWS(t)
	c := sqs.NewFromConfig(cfg)
	q := localtest.Queues(t, cfg, testPipeline(t, false))
	bodies := []string{
		`{"task_id":"t1","tenant":"` + strings.Repeat("ü", 121) + `","args":{}}`,
		`{"q":"東京の天気","emoji":"🙂🚀","mixed":"aé漢😀"}`,
		`{"esc":"\"\\\/\b\f\n\r\t\u0001\u001f\u2028\u2029\ud83d\ude00"}`,
		"raw controls allowed by SQS:\t\n\r end",
		"edges: \ud7ff \ue000 \ufffd \U00010000 \U0010ffff",
		`{"big":"` + strings.Repeat("aé漢😀\\\"", 9000) + `"}`,
		"</xml> & <not-xml attr=\"1\"> ' \\u0000 as text",
	}
	for _, b := range bodies {
		_, err := c.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(q.HotURL), MessageBody: aws.String(b)})
		require.NoError(t, err, "send %.40q", b)
	}
	endpoint := os.Getenv(localtest.EnvSQS)
	got := map[string]bool{}
	for attempt := 0; attempt < 20 && len(got) < len(bodies); attempt++ {
		for _, m := range rawReceive(t, endpoint, q.HotURL) {
			got[m] = true
		}
	}
	for _, b := range bodies {
		assert.True(t, got[b], "body not given back byte for byte: %.60q", b)
	}
}

// rawReceive sends one ReceiveMessage over a fresh connection, reads the
// response with net/http's parser, checks that nothing follows the
// Content-Length bytes and that they are valid JSON, and returns the bodies.
func rawReceive(t *testing.T, endpoint, queueURL string) []string {
	t.Helper()
	u, err := url.Parse(endpoint)
	require.NoError(t, err)
	conn, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
	require.NoError(t, err)
	defer func() { _ = conn.Close() }() // the response was read through it
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	req := fmt.Sprintf(`{"QueueUrl":%q,"MaxNumberOfMessages":10,"VisibilityTimeout":60,"WaitTimeSeconds":1}`, queueURL)
	_, err = fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-amz-json-1.0\r\nX-Amz-Target: AmazonSQS.ReceiveMessage\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", u.Host, len(req), req)
	require.NoError(t, err)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Greater(t, resp.ContentLength, int64(0), "fauxqs sends a Content-Length")
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err, "the body has fewer bytes than its Content-Length")
	rest, _ := io.ReadAll(br)
	require.Empty(t, rest, "bytes after the Content-Length's %d: the header undercounts the body", resp.ContentLength)
	require.True(t, json.Valid(body), "the response is not valid JSON")
	var out struct{ Messages []struct{ Body string } }
	require.NoError(t, json.Unmarshal(body, &out))
	var bodies []string
	for _, m := range out.Messages {
		bodies = append(bodies, m.Body)
	}
	return bodies
}
