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
// # Redaction
//
// Redact is the one rule set of the module: the dlq_meta error texts, the
// worker's log lines and triage's eval export all go through it, and
// IsSecretKey names the keys whose values are secrets whatever they hold
// (password, pwd, passphrase, token, api_key, card_number, cvv, ...; not
// max_tokens or secretsmanager). It removes authorization headers, bearer
// and basic credentials, JWTs, AWS access key ids (also inside an
// identifier, AKIA..._x), provider keys (sk-/pk-/rk-, Slack xox?-/xapp-,
// GitHub, GitLab, Hugging Face hf_, npm npm_, Google AIza), credentials in
// URLs (a password may hold '/'), signed URL parameters, key=value and JSON
// pairs under a secret key (also in escaped JSON, \"password\":\"...\"),
// email addresses, payment card numbers (13 to 19 digits, plain, spaced or
// dashed, starting with 2 to 6 and passing the Luhn check, so that order ids
// and epoch times are kept) and long opaque blobs. Each rule runs only when
// one pass over the text found its trigger, so a text without secrets costs
// that pass alone. FuzzRedactSecrets plants one secret of each class in
// fuzzed text and checks that neither Redact nor EncodeDeadLetter lets it
// through.
package deadletter
