package awsmeter_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/internal/awsmeter"
)

// fakeAWS answers the JSON protocol of SQS and DynamoDB by X-Amz-Target,
// and records whether DynamoDB was asked for its consumed capacity.
type fakeAWS struct {
	askedCapacity atomic.Int32
	failFirst     atomic.Int32 // answer this many requests with a 500 first
}

func (f *fakeAWS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if f.failFirst.Load() > 0 {
		f.failFirst.Add(-1)
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `{"__type":"InternalFailure","message":"try again"}`)
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	switch target := r.Header.Get("X-Amz-Target"); target {
	case "AmazonSQS.ReceiveMessage":
		big := strings.Repeat("x", 70*1024)
		_, _ = io.WriteString(w, `{"Messages":[{"MessageId":"1","ReceiptHandle":"h1","Body":"`+big+`"},{"MessageId":"2","ReceiptHandle":"h2","Body":"small"}]}`)
	case "AmazonSQS.DeleteMessageBatch":
		_, _ = io.WriteString(w, `{"Successful":[{"Id":"0"},{"Id":"1"}],"Failed":[]}`)
	case "DynamoDB_20120810.UpdateItem":
		if strings.Contains(string(body), `"ReturnConsumedCapacity":"TOTAL"`) {
			f.askedCapacity.Add(1)
		}
		_, _ = io.WriteString(w, `{"ConsumedCapacity":{"TableName":"t","CapacityUnits":2}}`)
	case "DynamoDB_20120810.PutItem":
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","message":"The conditional request failed"}`)
	default:
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"__type":"UnknownOperation","message":"`+target+`"}`)
	}
}

func config(url string) aws.Config {
	return aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(url),
		Credentials: credentials.NewStaticCredentialsProvider("k", "s", ""),
		Retryer:     func() aws.Retryer { return retry.NewStandard(func(o *retry.StandardOptions) { o.MaxBackoff = 0 }) }}
}

func find(t *testing.T, m *awsmeter.Meter, role, op string) awsmeter.Stats {
	t.Helper()
	for _, s := range m.Snapshot() {
		if s.Role == role && s.Operation == op {
			return s
		}
	}
	t.Fatalf("no %s %s in %+v", role, op, m.Snapshot())
	return awsmeter.Stats{}
}

// The meter counts calls by role, service and operation; an SQS receive of
// 70 KiB plus a few bytes is two billed requests; a batch's entries are
// counted; retries are attempts, not calls.
func TestMeterCountsSQS(t *testing.T) {
	f := &fakeAWS{}
	srv := httptest.NewServer(f)
	defer srv.Close()
	var m awsmeter.Meter
	api := sqs.NewFromConfig(m.Config(config(srv.URL), "mapping"))
	ctx := context.Background()
	f.failFirst.Store(1) // the first receive is retried once
	out, err := api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(srv.URL + "/q"), MaxNumberOfMessages: 10})
	require.NoError(t, err)
	require.Len(t, out.Messages, 2)
	_, err = api.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(srv.URL + "/q"), Entries: []sqstypes.DeleteMessageBatchRequestEntry{
		{Id: aws.String("0"), ReceiptHandle: aws.String("h1")}, {Id: aws.String("1"), ReceiptHandle: aws.String("h2")}}})
	require.NoError(t, err)

	recv := find(t, &m, "mapping", "ReceiveMessage")
	assert.Equal(t, "SQS", recv.Service)
	assert.EqualValues(t, 1, recv.Calls)
	assert.EqualValues(t, 2, recv.Attempts, "the retry is a second billed attempt")
	assert.EqualValues(t, 2, recv.Entries)
	assert.EqualValues(t, 70*1024+len("small"), recv.PayloadBytes)
	assert.EqualValues(t, 2, recv.BilledRequests, "70 KiB and 5 bytes are two 64 KiB chunks")
	del := find(t, &m, "mapping", "DeleteMessageBatch")
	assert.EqualValues(t, 1, del.Calls)
	assert.EqualValues(t, 2, del.Entries)
	assert.EqualValues(t, 1, del.BilledRequests)
}

// DynamoDB is asked for its consumed capacity on every item call the
// caller did not ask it for, and the units it reports are summed; a write
// refused on its condition is counted as such.
func TestMeterCountsDynamoDBCapacity(t *testing.T) {
	f := &fakeAWS{}
	srv := httptest.NewServer(f)
	defer srv.Close()
	var m awsmeter.Meter
	api := dynamodb.NewFromConfig(m.Config(config(srv.URL), "worker"))
	ctx := context.Background()
	key := map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "k"}}
	for range 3 {
		_, err := api.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("t"), Key: key, UpdateExpression: aws.String("SET a = :a"),
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":a": &ddbtypes.AttributeValueMemberS{Value: "v"}}})
		require.NoError(t, err)
	}
	_, err := api.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: key, ConditionExpression: aws.String("attribute_not_exists(pk)")})
	var ccf *ddbtypes.ConditionalCheckFailedException
	require.ErrorAs(t, err, &ccf)

	assert.EqualValues(t, 3, f.askedCapacity.Load(), "every UpdateItem asked for ReturnConsumedCapacity")
	up := find(t, &m, "worker", "UpdateItem")
	assert.Equal(t, "DynamoDB", up.Service)
	assert.EqualValues(t, 3, up.Calls)
	assert.InDelta(t, 6.0, up.WriteUnits, 1e-9, "2 units reported by each of 3 writes")
	put := find(t, &m, "worker", "PutItem")
	assert.EqualValues(t, 1, put.Errors)
	assert.EqualValues(t, 1, put.ConditionFailed)
}

func TestBilledSQSAndByteCounter(t *testing.T) {
	for _, c := range []struct {
		payload int
		want    int64
	}{{0, 1}, {1, 1}, {64 * 1024, 1}, {64*1024 + 1, 2}, {1 << 20, 16}} {
		assert.Equal(t, c.want, awsmeter.BilledSQS(c.payload), "payload %d", c.payload)
	}
	var b awsmeter.ByteCounter
	_, _ = io.WriteString(&b, "{\"a\":1}\n{\"b\":2}\n")
	_, _ = io.WriteString(&b, "partial")
	n, lines := b.Counts()
	assert.EqualValues(t, 23, n)
	assert.EqualValues(t, 2, lines)
}
