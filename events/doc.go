// Package events holds agentdlq's contracts: the agent task v1 message body
// (a JSON Schema in schema/ and the Go type with its decoder), the reason
// taxonomy that every dead letter carries, the dead-letter metadata codec
// (dlq_reason and dlq_meta, with SQS's ten-attribute limit handled) and the
// redaction applied to every error text that leaves the worker.
//
// The package is pure Go: it imports no AWS SDK, takes values and returns
// values, and is tested with tables.
package events
