package localtest

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/internal/sqsio"
)

// SQSAttributes converts dead-letter attributes to the SDK's message
// attributes, to seed a DLQ as the worker would have.
var SQSAttributes = sqsio.MessageAttributes

// Attributes converts received message attributes back, to compare them.
func Attributes(in map[string]sqstypes.MessageAttributeValue) map[string]deadletter.Attribute {
	out := make(map[string]deadletter.Attribute, len(in))
	for k, v := range in {
		out[k] = deadletter.Attribute{DataType: aws.ToString(v.DataType), StringValue: aws.ToString(v.StringValue), BinaryValue: v.BinaryValue}
	}
	return out
}
