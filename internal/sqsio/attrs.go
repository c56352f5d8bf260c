package sqsio

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/agentdlq/agentdlq/events/deadletter"
)

// MessageAttributes converts dead-letter attributes to the SDK's message
// attributes (redrive's sends, and tests that seed a DLQ as the worker
// would have); nil for none.
func MessageAttributes(in map[string]deadletter.Attribute) map[string]types.MessageAttributeValue {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]types.MessageAttributeValue, len(in))
	for k, a := range in {
		v := types.MessageAttributeValue{DataType: aws.String(a.DataType)}
		if a.BinaryValue != nil {
			v.BinaryValue = a.BinaryValue
		} else {
			v.StringValue = aws.String(a.StringValue)
		}
		out[k] = v
	}
	return out
}

// DeadLetterAttributes converts received (or sent) SDK message attributes
// back to dead-letter attributes.
func DeadLetterAttributes(in map[string]types.MessageAttributeValue) map[string]deadletter.Attribute {
	out := make(map[string]deadletter.Attribute, len(in))
	for k, v := range in {
		out[k] = deadletter.Attribute{DataType: aws.ToString(v.DataType), StringValue: aws.ToString(v.StringValue), BinaryValue: v.BinaryValue}
	}
	return out
}
