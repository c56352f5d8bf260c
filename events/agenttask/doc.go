// Package agenttask is the agent task v1 contract: the message body that
// producers put on a hot queue (a JSON Schema in schema/, embedded as
// TaskSchema), its Go type, a single-pass decoder that validates and extracts
// in one go, and the sample tool catalog with the versions each tool supports.
//
// The package is pure Go: it imports no AWS SDK, takes values and returns
// values, and is tested with tables, differential tests against
// encoding/json and fuzzing (make fuzz). A body that breaks a rule is a
// *ValidationError carrying its dead-letter reason (package
// events/deadletter).
//
// # Decoding a task
//
// DecodeTask validates a body and names the first rule it breaks, as a
// *ValidationError with the poison reason (json_invalid, schema_invalid,
// tool_unknown, tool_version_unsupported) and the field. It is a single pass
// over the body: the whole body,
// args included, is validated as JSON exactly as encoding/json does; the
// eight string fields are decoded (escapes, surrogate pairs, invalid UTF-8
// replaced, as encoding/json) into one allocation; Args is the raw sub-slice
// of the body. It must agree with the tests' encoding/json reference decoder
// on every input (tests and FuzzDecodeTask), and with the JSON Schema
// (TestSchemaAgreesWithDecodeTask): schema_version is valid when its value is
// the integer 1, whether written 1, 1.0 or 1e0; strings are limited to the
// schema's maxLength in characters; the six identifiers (task_id, run_id,
// tenant, idempotency_key, tool, tool_version) refuse the C0 and C1
// controls, DEL and the bidi controls (U+061C, U+200E, U+200F,
// U+202A–U+202E, U+2066–U+2069) as schema_invalid ("must not contain
// control characters"; the schema's pattern), so that no key prints as two
// nor drives the terminal that shows it; duplicate keys: the last one wins.
//
// # Tool versions
//
// tool_version is semver. A catalog entry (Tool.Versions) declares the range
// it supports: a major ("2", which is 2.x) or a constraint in the syntax of
// github.com/Masterminds/semver/v3 (">=1.2.0 <4.0.0", "1.x || 3.x"); the
// sample worker's tools support 1.x through 3.x (functions/sampleworker's
// Versions). A version that is not
// semver, or is outside the range, is tool_version_unsupported, and the
// error names the range, so a producer's patch release is accepted and a
// major the worker does not know is refused. Short forms read as the
// library reads them: "2" is 2.0.0, "2.1" is 2.1.0. Parsed ranges and the
// verdict for each version seen (up to 64 a range) are remembered, so the
// check costs a map lookup and no allocation for the versions a fleet sends.
package agenttask
