package esm_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/local/esm"
)

func TestEventIsLambdaShaped(t *testing.T) {
	t.Parallel()
	msgs := []types.Message{{
		MessageId: aws.String("m1"), ReceiptHandle: aws.String("rh1"), Body: aws.String(`{"a":1}`),
		MD5OfBody: aws.String("md5b"), MD5OfMessageAttributes: aws.String("md5a"),
		Attributes: map[string]string{"ApproximateReceiveCount": "2", "SentTimestamp": "1700000000000", "MessageGroupId": "run-7"},
		MessageAttributes: map[string]types.MessageAttributeValue{
			"idempotency_key": {DataType: aws.String("String"), StringValue: aws.String("k1")},
			"blob":            {DataType: aws.String("Binary"), BinaryValue: []byte{1, 2}},
		},
	}}
	ev := esm.Event(msgs, "arn:aws:sqs:us-east-1:000000000000:agent-tasks", "us-east-1")
	got, err := json.Marshal(ev)
	require.NoError(t, err)
	// The JSON Lambda hands a handler (field names and shapes of the AWS docs' example event).
	want := `{"Records":[{
		"messageId":"m1","receiptHandle":"rh1","body":"{\"a\":1}","md5OfBody":"md5b","md5OfMessageAttributes":"md5a",
		"attributes":{"ApproximateReceiveCount":"2","SentTimestamp":"1700000000000","MessageGroupId":"run-7"},
		"messageAttributes":{
			"idempotency_key":{"stringValue":"k1","stringListValues":[],"binaryListValues":[],"dataType":"String"},
			"blob":{"binaryValue":"AQI=","stringListValues":[],"binaryListValues":[],"dataType":"Binary"}},
		"eventSourceARN":"arn:aws:sqs:us-east-1:000000000000:agent-tasks","eventSource":"aws:sqs","awsRegion":"us-east-1"}]}`
	assert.JSONEq(t, want, string(got))

	// The event owns its data: changing the received message changes nothing.
	msgs[0].MessageAttributes["blob"].BinaryValue[0] = 9
	assert.Equal(t, []byte{1, 2}, ev.Records[0].MessageAttributes["blob"].BinaryValue)
}

func TestDecide(t *testing.T) {
	t.Parallel()
	ev := events.SQSEvent{Records: []events.SQSMessage{{MessageId: "a"}, {MessageId: "b"}, {MessageId: "c"}}}
	fail := func(ids ...string) events.SQSEventResponse {
		var r events.SQSEventResponse
		for _, id := range ids {
			r.BatchItemFailures = append(r.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: id})
		}
		return r
	}
	tests := []struct {
		name       string
		resp       events.SQSEventResponse
		err        error
		wantDelete []int // indexes deleted
		wantFailed []int // indexes left to the visibility timeout
		wantBatch  bool  // the whole batch failed
	}{
		{name: "all succeed", resp: fail(), wantDelete: []int{0, 1, 2}},
		{name: "one item failure", resp: fail("b"), wantDelete: []int{0, 2}, wantFailed: []int{1}},
		{name: "all reported", resp: fail("c", "a", "b"), wantFailed: []int{0, 1, 2}},
		{name: "reported twice", resp: fail("b", "b"), wantDelete: []int{0, 2}, wantFailed: []int{1}},
		{name: "handler error fails the batch", resp: fail("b"), err: errors.New("boom"), wantFailed: []int{0, 1, 2}, wantBatch: true},
		{name: "empty identifier fails the batch", resp: fail(""), wantFailed: []int{0, 1, 2}, wantBatch: true},
		{name: "unknown identifier fails the batch", resp: fail("zz"), wantFailed: []int{0, 1, 2}, wantBatch: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := esm.Decide(ev, tt.resp, tt.err)
			if d := cmp.Diff(tt.wantDelete, o.Delete); d != "" {
				t.Errorf("Delete (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.wantFailed, o.Failed); d != "" {
				t.Errorf("Failed (-want +got):\n%s", d)
			}
			assert.Equal(t, tt.wantBatch, o.BatchFailed)
			if tt.wantBatch {
				assert.NotEmpty(t, o.Reason)
			}
		})
	}
}
