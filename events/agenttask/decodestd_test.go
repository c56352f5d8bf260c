package agenttask

import (
	"bytes"
	"encoding/json"
	"math/big"
	"unicode/utf8"

	"github.com/agentdlq/agentdlq/events/deadletter"
)

// DecodeTaskStd is the reference decoder built on encoding/json: slow, simple
// and obviously right. DecodeTask must agree with it on every input; tests
// and fuzzing hold them together. It lives in a test file (exported to the
// agenttask_test package only): no caller outside the tests needs it.
//
// The rules, checked in this order (the first that fails is reported):
// the body is a JSON object (json_invalid); then each of task_id, run_id,
// tenant, idempotency_key, tool, tool_version, trace_id, created_at is
// present, a string, not empty and within its maxLength, and the first six
// (the identifiers) hold no control character (identControl); schema_version is
// present, a number whose value is an integer (1, 1.0 and 1e0 alike, as in
// JSON Schema), and 1; args is present and an object (schema_invalid with
// the field); then, with a catalog, the tool is known (tool_unknown) and
// supports the version (tool_version_unsupported). Duplicate keys: the last
// one wins, as in encoding/json.
func DecodeTaskStd(body []byte, catalog Catalog) (Task, error) {
	var t Task
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if !json.Valid(body) || trimmed[0] != '{' {
		return t, invalid(deadletter.ReasonJSONInvalid, "", detailNotObject)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return t, invalid(deadletter.ReasonJSONInvalid, "", detailNotObject)
	}
	dsts := [...]*string{&t.TaskID, &t.RunID, &t.Tenant, &t.IdempotencyKey, &t.Tool, &t.ToolVersion, &t.TraceID, &t.CreatedAt}
	for i, f := range requiredStrings {
		v, ok := raw[f.name]
		switch {
		case !ok:
			return Task{}, invalid(deadletter.ReasonSchemaInvalid, f.name, detailMissing)
		case v[0] != '"' || json.Unmarshal(v, dsts[i]) != nil:
			return Task{}, invalid(deadletter.ReasonSchemaInvalid, f.name, detailString)
		case *dsts[i] == "":
			return Task{}, invalid(deadletter.ReasonSchemaInvalid, f.name, detailEmpty)
		case utf8.RuneCountInString(*dsts[i]) > f.max:
			return Task{}, invalid(deadletter.ReasonSchemaInvalid, f.name, f.detail)
		case f.ident && identControl([]byte(*dsts[i])):
			return Task{}, invalid(deadletter.ReasonSchemaInvalid, f.name, detailControl)
		}
	}
	sv, ok := raw["schema_version"]
	if !ok {
		return Task{}, invalid(deadletter.ReasonSchemaInvalid, "schema_version", detailMissing)
	}
	if sv[0] != '-' && (sv[0] < '0' || sv[0] > '9') {
		return Task{}, invalid(deadletter.ReasonSchemaInvalid, "schema_version", detailInteger)
	}
	n, ok := new(big.Rat).SetString(string(sv))
	if !ok || !n.IsInt() {
		return Task{}, invalid(deadletter.ReasonSchemaInvalid, "schema_version", detailInteger)
	}
	if n.Cmp(big.NewRat(SchemaVersion, 1)) != 0 {
		return Task{}, invalid(deadletter.ReasonSchemaInvalid, "schema_version", detailVersion)
	}
	t.SchemaVersion = SchemaVersion
	args, ok := raw["args"]
	if !ok {
		return Task{}, invalid(deadletter.ReasonSchemaInvalid, "args", detailMissing)
	}
	if args[0] != '{' {
		return Task{}, invalid(deadletter.ReasonSchemaInvalid, "args", detailArgs)
	}
	t.Args = args
	if err := checkCatalog(t, catalog); err != nil {
		return Task{}, err
	}
	return t, nil
}
