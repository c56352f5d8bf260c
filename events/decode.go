package events

import (
	"bytes"
	"encoding/json"
)

// requiredStrings are the non-empty string fields of agent task v1, in schema order.
var requiredStrings = [...]string{"task_id", "run_id", "tenant", "idempotency_key", "tool", "tool_version", "trace_id", "created_at"}

// DecodeTaskStd is the reference decoder built on encoding/json: slow, simple
// and obviously right. DecodeTask must agree with it on every input; tests
// and fuzzing hold them together.
func DecodeTaskStd(body []byte, catalog Catalog) (Task, error) {
	var t Task
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed) {
		return t, invalid(ReasonJSONInvalid, "", "the body is not a JSON object")
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &raw); err != nil {
		return t, invalid(ReasonJSONInvalid, "", "the body is not a JSON object")
	}
	str := func(name string, dst *string) error {
		v, ok := raw[name]
		if !ok {
			return invalid(ReasonSchemaInvalid, name, "required field is missing")
		}
		if err := json.Unmarshal(v, dst); err != nil || len(v) == 0 || v[0] != '"' {
			return invalid(ReasonSchemaInvalid, name, "must be a string")
		}
		if *dst == "" {
			return invalid(ReasonSchemaInvalid, name, "must not be empty")
		}
		return nil
	}
	dsts := [...]*string{&t.TaskID, &t.RunID, &t.Tenant, &t.IdempotencyKey, &t.Tool, &t.ToolVersion, &t.TraceID, &t.CreatedAt}
	for i, name := range requiredStrings {
		if err := str(name, dsts[i]); err != nil {
			return Task{}, err
		}
	}
	sv, ok := raw["schema_version"]
	if !ok {
		return Task{}, invalid(ReasonSchemaInvalid, "schema_version", "required field is missing")
	}
	if err := json.Unmarshal(sv, &t.SchemaVersion); err != nil {
		return Task{}, invalid(ReasonSchemaInvalid, "schema_version", "must be an integer")
	}
	if t.SchemaVersion != SchemaVersion {
		return Task{}, invalid(ReasonSchemaInvalid, "schema_version", "must be 1")
	}
	args, ok := raw["args"]
	if !ok {
		return Task{}, invalid(ReasonSchemaInvalid, "args", "required field is missing")
	}
	if len(args) == 0 || args[0] != '{' {
		return Task{}, invalid(ReasonSchemaInvalid, "args", "must be an object")
	}
	t.Args = args
	if catalog != nil {
		tool, ok := catalog[t.Tool]
		if !ok {
			return Task{}, invalid(ReasonToolUnknown, "tool", "not in the catalog")
		}
		if !tool.SupportsVersion(t.ToolVersion) {
			return Task{}, invalid(ReasonToolVersionUnsupported, "tool_version", "not supported by the tool")
		}
	}
	return t, nil
}

// DecodeTask decodes and validates an agent task v1 body. A failure is a
// *ValidationError naming the poison reason and the field. With a nil
// catalog, tools are not checked.
//
// TODO(worker): replace with the single-pass decoder; keep DecodeTaskStd as the reference.
func DecodeTask(body []byte, catalog Catalog) (Task, error) {
	return DecodeTaskStd(body, catalog)
}
