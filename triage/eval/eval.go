package eval

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/report"
)

// evalRecord is one eval case, one JSONL line, Braintrust-shaped (it converts
// to LangSmith, promptfoo and OpenAI Evals): the redacted task as input, the
// outcome it must get as expected.
type evalRecord struct {
	// ID is stable across runs and redrives: the hash of the group's reason,
	// tool, tool version, schema version and error signature, plus the input
	// hash; never the SQS message id (a redrive changes it).
	ID       string       `json:"id"`
	Input    any          `json:"input"`
	Expected evalExpected `json:"expected"`
	Metadata evalMetadata `json:"metadata"`
	Tags     []string     `json:"tags"`
}

// evalExpected is what the worker must do with the input.
type evalExpected struct {
	Outcome string            `json:"outcome"` // always "dead_letter"
	Reason  deadletter.Reason `json:"reason"`
	Class   deadletter.Class  `json:"class"`
}

// evalMetadata says where a case came from.
type evalMetadata struct {
	Pipeline       string    `json:"pipeline"`
	Fingerprint    string    `json:"fingerprint"`
	Tool           string    `json:"tool,omitempty"`
	ToolVersion    string    `json:"tool_version,omitempty"`
	SchemaVersion  int       `json:"schema_version,omitempty"`
	ErrorSignature string    `json:"error_signature,omitempty"`
	Inferred       bool      `json:"inferred,omitempty"`
	FirstSeen      time.Time `json:"first_seen"`
	LastSeen       time.Time `json:"last_seen"`
	// GroupCount is the group's size in the DLQ; Occurrences how many of
	// them had this very input.
	GroupCount  int `json:"group_count"`
	Occurrences int `json:"occurrences"`
	// InputSHA256 is the hash of the exported input as it stands (inputHash).
	InputSHA256 string `json:"input_sha256"`
	// CaseSHA256 is the hash that deduplicates cases and keys the id
	// (caseHash: the input without its per-delivery identifiers).
	CaseSHA256 string `json:"case_sha256"`
	// TraceID is the task's trace_id of the message the input came from
	// (the first of the case), so that the item links back to its run: as
	// the exported input carries it (hashed or dropped when eval.hash_fields
	// or eval.drop_fields name trace_id), else dlq_meta's trace id under
	// the same rules. Empty when the task has none.
	TraceID string `json:"trace_id,omitempty"`
	// AWSTraceHeader is the X-Ray header (the AWSTraceHeader system
	// attribute) of that message, where the dead letter carries one.
	AWSTraceHeader string `json:"aws_trace_header,omitempty"`
}

// evalRecords turns the recurring poison and unclassified groups of a report
// into eval records, one per distinct case (representatives deduplicated by
// caseHash, the SHA-256 of the redacted input without its per-delivery
// identifiers; the first message of a case is its input, the others count as
// occurrences), ordered by group then id. Messages
// that cannot be exported (a body that is not UTF-8) are returned as skipped.
func evalRecords(r *report.Report, p *pipeline.Pipeline) ([]evalRecord, []report.Entry) {
	var out []evalRecord
	var skipped []report.Entry
	for gi := range r.Groups {
		g := &r.Groups[gi]
		if !g.Recurring {
			continue
		}
		byID := map[string]int{}
		start := len(out)
		for _, t := range g.Letters {
			if t.BodyErr != nil {
				skipped = append(skipped, report.Entry{MessageID: t.MessageID, Stage: "export", Reason: t.Reason, Problem: t.BodyErr.Error() + ": not exported"})
				continue
			}
			input := RedactInput(t.Body, p.Eval)
			sum, caseSum := inputHash(input), caseHash(input)
			id := evalID(g.Fingerprint, caseSum)
			if i, ok := byID[id]; ok {
				out[i].Metadata.Occurrences++
				continue
			}
			byID[id] = len(out)
			tags := []string{string(g.Reason), string(g.Class)}
			if g.Tool != "" {
				tags = append(tags, g.Tool)
			}
			out = append(out, evalRecord{
				ID:       id,
				Input:    input,
				Expected: evalExpected{Outcome: "dead_letter", Reason: g.Reason, Class: g.Class},
				Metadata: evalMetadata{
					Pipeline: p.Name, Fingerprint: g.Fingerprint, Tool: g.Tool, ToolVersion: g.ToolVersion,
					SchemaVersion: g.SchemaVersion, ErrorSignature: g.Signature, Inferred: g.Inferred == g.Count,
					FirstSeen: g.FirstSeen, LastSeen: g.LastSeen, GroupCount: g.Count, Occurrences: 1, InputSHA256: sum, CaseSHA256: caseSum,
					TraceID: traceOf(t, input, p.Eval), AWSTraceHeader: deadletter.Redact(t.System[awsTraceHeader], 0),
				},
				Tags: tags,
			})
		}
		part := out[start:]
		sort.Slice(part, func(i, j int) bool { return part[i].ID < part[j].ID })
	}
	return out, skipped
}

// evalID is the stable id of an eval case; see evalRecord.ID.
// fingerprint is the group's (the hash of its reason, tool, tool version,
// schema version and error signature).
func evalID(fingerprint, inputSHA256 string) string {
	h := sha256.New()
	fmt.Fprintf(h, "eval1\x00%s\x00%s\n", fingerprint, inputSHA256)
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// inputHash is the hex SHA-256 of an input's canonical JSON (keys sorted).
func inputHash(input any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(input) // inputs are built from JSON or strings: they always encode
	sum := sha256.Sum256(bytes.TrimRight(buf.Bytes(), "\n"))
	return hex.EncodeToString(sum[:])
}

// identityFields are the agent task fields that differ between deliveries
// of the same case (ids, trace, creation time). They stay in the exported
// input (an input without them breaks the task schema), but caseHash leaves
// them out, so that a producer sending the same bad task a thousand times
// makes one case, not a thousand. An eval harness must give each replay
// fresh ids anyway: a replayed idempotency key is a ledger no-op.
var identityFields = []string{"task_id", "run_id", "idempotency_key", "trace_id", "created_at"}

// caseHash is the hex SHA-256 of an input's canonical JSON without the
// top-level identityFields (inputHash of the whole input when it is not an object).
func caseHash(input any) string {
	obj, ok := input.(map[string]any)
	if !ok {
		return inputHash(input)
	}
	c := make(map[string]any, len(obj))
	for k, v := range obj {
		c[k] = v
	}
	for _, f := range identityFields {
		delete(c, f)
	}
	return inputHash(c)
}

// RedactInput is the task as an eval input: the body parsed as JSON (kept as
// a redacted string when it is not JSON), the configured drop fields
// removed, the hash fields replaced by HashValue of their value, then
// deadletter.RedactValue: everything under secret-named keys
// (deadletter.IsSecretKey: password, pw, apiKey, private_key, credentials,
// session, ...) replaced, and deadletter.Redact applied to every string and
// number (a password=... in an error string, a PEM block, a card number sent
// as a JSON number). These are the rules of the dead-letter metadata and the
// worker's logs: one rule set.
func RedactInput(body string, cfg pipeline.Eval) any {
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return deadletter.Redact(body, 0)
	}
	if obj, ok := v.(map[string]any); ok {
		dropAndHash(obj, cfg)
	}
	return redactValue(v, "")
}

// dropAndHash removes obj's configured drop fields and replaces its hash
// fields by HashValue of their value.
func dropAndHash(obj map[string]any, cfg pipeline.Eval) {
	for _, path := range cfg.DropFields {
		dropPath(obj, strings.Split(path, "."))
	}
	for _, path := range cfg.HashFields {
		hashPath(obj, strings.Split(path, "."))
	}
}

func dropPath(obj map[string]any, path []string) {
	if len(path) == 1 {
		delete(obj, path[0])
		return
	}
	if next, ok := obj[path[0]].(map[string]any); ok {
		dropPath(next, path[1:])
	}
}

func hashPath(obj map[string]any, path []string) {
	v, ok := obj[path[0]]
	if !ok {
		return
	}
	if len(path) > 1 {
		if next, ok := v.(map[string]any); ok {
			hashPath(next, path[1:])
		}
		return
	}
	s, isString := v.(string)
	if !isString {
		b, _ := json.Marshal(v)
		s = string(b)
	}
	obj[path[0]] = triage.HashValue(s)
}

// redactValue is deadletter.RedactValue: one rule set for every view of a
// task's body (the values under secret-named keys, whatever their depth,
// and Redact on every other string and number).
func redactValue(v any, _ string) any { return deadletter.RedactValue(v) }
