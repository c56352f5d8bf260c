// Package deadletter is what every dead letter carries, whatever the task:
// the closed reason taxonomy (Reason, with its Class, NextAction and
// Redrivable), the dlq_reason and dlq_meta codec, and Redact, the redaction
// applied to every error text that leaves a worker (metadata, logs and the
// eval export alike).
//
// The package is pure Go: it imports no AWS SDK, takes values and returns
// values, and is tested with tables and fuzzing.
//
// # Dead letters
//
// EncodeDeadLetter stamps dlq_reason and dlq_meta on a dead letter and keeps
// at most eight of the message's own attributes (by name order); the rest,
// and any original attribute whose name starts with dlq_, are folded into
// dlq_meta, which DecodeDeadLetter restores byte for byte. The error text is
// redacted (Redact) and cut to 256 characters; dlq_meta is at most 16 KiB
// (the attempt history is dropped first, then ErrMetaTooLarge). The reasons,
// with their class, next action and redrivability, are in docs/reasons.md,
// generated from Taxonomy by go run ./events/gen.
//
package deadletter
