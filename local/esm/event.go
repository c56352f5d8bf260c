package esm

import (
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// EventSource is the eventSource of every record.
const EventSource = "aws:sqs"

// Event builds the Lambda SQS event of received messages, in receive order,
// as Lambda's event source delivers them: every system attribute
// (ApproximateReceiveCount, SentTimestamp, MessageGroupId, ...), every message
// attribute with its dataType and stringValue or binaryValue, the MD5s, and
// the queue's ARN and region.
func Event(msgs []types.Message, queueARN, region string) events.SQSEvent {
	ev := events.SQSEvent{Records: make([]events.SQSMessage, 0, len(msgs))}
	for _, m := range msgs {
		r := events.SQSMessage{
			MessageId:              aws.ToString(m.MessageId),
			ReceiptHandle:          aws.ToString(m.ReceiptHandle),
			Body:                   aws.ToString(m.Body),
			Md5OfBody:              aws.ToString(m.MD5OfBody),
			Md5OfMessageAttributes: aws.ToString(m.MD5OfMessageAttributes),
			Attributes:             make(map[string]string, len(m.Attributes)),
			MessageAttributes:      make(map[string]events.SQSMessageAttribute, len(m.MessageAttributes)),
			EventSourceARN:         queueARN,
			EventSource:            EventSource,
			AWSRegion:              region,
		}
		for k, v := range m.Attributes {
			r.Attributes[k] = v
		}
		for k, v := range m.MessageAttributes {
			a := events.SQSMessageAttribute{
				DataType: aws.ToString(v.DataType),
				// Lambda sends empty lists, not null.
				StringListValues: []string{},
				BinaryListValues: [][]byte{},
			}
			if v.StringValue != nil {
				a.StringValue = aws.String(*v.StringValue)
			}
			if v.BinaryValue != nil {
				a.BinaryValue = append([]byte{}, v.BinaryValue...)
			}
			r.MessageAttributes[k] = a
		}
		ev.Records = append(ev.Records, r)
	}
	return ev
}

// Outcome is what the mapping does with one batch after the handler returned.
type Outcome struct {
	// Delete are the indexes of the records to delete, in event order.
	Delete []int
	// Failed are the indexes of the records left to their visibility timeout.
	Failed []int
	// BatchFailed is set when the whole batch failed; Reason says why.
	BatchFailed bool
	Reason      string
}

// Decide applies Lambda's rules for a partial batch response to one
// invocation's result: handlerErr (an error or a recovered panic) fails the
// whole batch; an itemIdentifier that is empty or not a message id of the
// batch fails the whole batch; otherwise every record not reported is deleted.
func Decide(ev events.SQSEvent, resp events.SQSEventResponse, handlerErr error) Outcome {
	all := func(reason string) Outcome {
		o := Outcome{BatchFailed: true, Reason: reason}
		for i := range ev.Records {
			o.Failed = append(o.Failed, i)
		}
		return o
	}
	if handlerErr != nil {
		return all(fmt.Sprintf("handler error: %v", handlerErr))
	}
	index := make(map[string]int, len(ev.Records))
	for i, r := range ev.Records {
		index[r.MessageId] = i
	}
	failed := make(map[int]bool, len(resp.BatchItemFailures))
	for _, f := range resp.BatchItemFailures {
		i, ok := index[f.ItemIdentifier]
		if f.ItemIdentifier == "" || !ok {
			return all(fmt.Sprintf("batchItemFailures names %q, which is not a message id of the batch", f.ItemIdentifier))
		}
		failed[i] = true
	}
	var o Outcome
	for i := range ev.Records {
		if failed[i] {
			o.Failed = append(o.Failed, i)
		} else {
			o.Delete = append(o.Delete, i)
		}
	}
	return o
}
