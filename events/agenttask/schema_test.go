package agenttask_test

import (
	"bytes"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/agenttask"
)

func compileTaskSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(agenttask.TaskSchema))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	require.NoError(t, c.AddResource("agent-task-v1.schema.json", doc))
	sch, err := c.Compile("agent-task-v1.schema.json")
	require.NoError(t, err)
	return sch
}

// TestSchemaAgreesWithDecodeTask: a body is valid under the JSON Schema
// exactly when DecodeTask, without catalog checks, accepts it — on every
// fixture body and on the hand-written edge cases.
func TestSchemaAgreesWithDecodeTask(t *testing.T) {
	t.Parallel()
	sch := compileTaskSchema(t)
	bodies := append(edgeBodies(), fixtureBodies(t)...)
	for _, name := range []string{"task_id", "tool", "tool_version", "created_at"} {
		for _, n := range []int{64, 65, 128, 129, 256, 257} {
			bodies = append(bodies, with(name, `"`+string(bytes.Repeat([]byte("é"), n))+`"`))
		}
	}
	for i, body := range bodies {
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(body)))
		schemaOK := err == nil && sch.Validate(inst) == nil
		_, decErr := agenttask.DecodeTask([]byte(body), nil)
		if schemaOK != (decErr == nil) {
			verr := error(nil)
			if err == nil {
				verr = sch.Validate(inst)
			}
			t.Errorf("body %d %.100q: schema valid %v (parse %v, validate %v), DecodeTask %v", i, body, schemaOK, err, verr, decErr)
		}
	}
}

func TestTaskSchemaIsTheFile(t *testing.T) {
	t.Parallel()
	sch := compileTaskSchema(t)
	assert.NotNil(t, sch)
	assert.Contains(t, string(agenttask.TaskSchema), `"$id": "https://agentdlq.dev/schema/agent-task-v1.schema.json"`)
}

// FuzzTaskSchema holds the JSON Schema and DecodeTask together beyond the
// hand-written cases (go test -fuzz FuzzTaskSchema ./events).
func FuzzTaskSchema(f *testing.F) {
	for _, b := range edgeBodies() {
		f.Add([]byte(b))
	}
	for _, b := range fixtureBodies(f) {
		f.Add([]byte(b))
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(agenttask.TaskSchema))
	require.NoError(f, err)
	c := jsonschema.NewCompiler()
	require.NoError(f, c.AddResource("agent-task-v1.schema.json", doc))
	sch, err := c.Compile("agent-task-v1.schema.json")
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, body []byte) {
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
		schemaOK := err == nil && sch.Validate(inst) == nil
		_, decErr := agenttask.DecodeTask(body, nil)
		if schemaOK != (decErr == nil) {
			t.Errorf("%q: schema valid %v (parse error %v), DecodeTask %v", body, schemaOK, err, decErr)
		}
	})
}
