package localtest

import "github.com/agentdlq/agentdlq/internal/sqsio"

// SQSAttributes converts dead-letter attributes to the SDK's message
// attributes, to seed a DLQ as the worker would have.
var SQSAttributes = sqsio.MessageAttributes

// Attributes converts received message attributes back, to compare them.
var Attributes = sqsio.DeadLetterAttributes
