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
// Redact is the one rule set of the module for text: the dlq_meta error
// texts (at encoding, and again when ParseMeta reads them), the worker's log
// lines, triage's reports and eval export and the console all go through it.
// IsSecretKey names the keys whose values are secrets whatever they hold:
// the name is split into words (separators, camel case, acronyms) and read
// for a term, long ones anywhere (password, secret, token, apikey,
// privatekey, accesskey, sshkey, encryptionkey, credential, cookie,
// signature, ...), short ones at a word's start (pw, pwd, pass, auth, sid,
// otp, pin, session, creds, ...), plurals included; a term described by a
// count, length, type or time (token_count, max_tokens, session_timeout) is
// evidence and kept. RedactValue applies both to a task's decoded JSON
// (everything under a secret key, Redact on the rest), RedactAttribute to a
// message attribute.
//
// Redact removes PEM blocks whole (to the end of the text when the END line
// is missing), authorization headers, bearer and basic credentials, JWTs,
// AWS access key ids (also inside an identifier, AKIA..._x), provider keys
// (sk-/pk-/rk-, Slack xox?-/xapp-, GitHub, GitLab, Hugging Face hf_, npm
// npm_, Google AIza), credentials in URLs (a password may hold '/'), signed
// URL parameters, the values of key=value, key: value and JSON pairs under
// a secret key (a string, an array or an object; also in escaped JSON,
// query strings and headers, and nested in other values), email addresses,
// payment card numbers (13 to 19 digits, plain, spaced or dashed, starting
// with 2 to 6 and passing the Luhn check, so that order ids and epoch times
// are kept) and long opaque blobs. Each rule runs only when one pass over
// the text found its trigger, so a text without secrets costs that pass
// alone.
//
// The corpus of package redacttest (every key spelling, the kept names, the
// shapes of secrets in text) holds them; FuzzRedactSecrets and
// FuzzRedactKeySpellings plant it in fuzzed text and check that neither
// Redact, RedactValue nor EncodeDeadLetter lets it through.
package deadletter
