package localtest

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/agentdlq/agentdlq/events/deadletter"
)

// SQSAttributes converts dead-letter attributes to the SDK's message
// attributes, to seed a DLQ as the worker would have.
func SQSAttributes(in map[string]deadletter.Attribute) map[string]sqstypes.MessageAttributeValue {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]sqstypes.MessageAttributeValue, len(in))
	for k, a := range in {
		v := sqstypes.MessageAttributeValue{DataType: aws.String(a.DataType)}
		if a.BinaryValue != nil {
			v.BinaryValue = a.BinaryValue
		} else {
			v.StringValue = aws.String(a.StringValue)
		}
		out[k] = v
	}
	return out
}

// Attributes converts received message attributes back, to compare them.
func Attributes(in map[string]sqstypes.MessageAttributeValue) map[string]deadletter.Attribute {
	out := make(map[string]deadletter.Attribute, len(in))
	for k, v := range in {
		out[k] = deadletter.Attribute{DataType: aws.ToString(v.DataType), StringValue: aws.ToString(v.StringValue), BinaryValue: v.BinaryValue}
	}
	return out
}
