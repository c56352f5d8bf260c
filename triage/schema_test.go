package triage

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
)

func compileReportSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(reportSchema))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	require.NoError(t, c.AddResource("report.schema.json", doc))
	sch, err := c.Compile("report.schema.json")
	require.NoError(t, err)
	return sch
}

func validate(t *testing.T, sch *jsonschema.Schema, data []byte) error {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	require.NoError(t, err)
	return sch.Validate(v)
}

func TestReportSchema(t *testing.T) {
	t.Parallel()
	sch := compileReportSchema(t)

	golden, err := os.ReadFile("testdata/report.json.golden")
	require.NoError(t, err)
	assert.NoError(t, validate(t, sch, golden), "the golden report")

	// An empty report (triage/eval's TestExportFolder checks one with an export).
	p := testPipeline(t, false)
	data, err := json.Marshal(Build(nil, p, t0))
	require.NoError(t, err)
	assert.NoError(t, validate(t, sch, data), "empty")

	// The schema's reason enum is the taxonomy.
	var doc struct {
		Properties struct {
			Groups struct {
				Items struct {
					Properties struct {
						Reason struct {
							Enum []string `json:"enum"`
						} `json:"reason"`
					} `json:"properties"`
				} `json:"items"`
			} `json:"groups"`
		} `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(reportSchema, &doc))
	var want []string
	for _, r := range deadletter.AllReasons() {
		want = append(want, string(r))
	}
	assert.Equal(t, want, doc.Properties.Groups.Items.Properties.Reason.Enum)

	// Its next_action enum is the policy's next actions.
	var next struct {
		Properties struct {
			Groups struct {
				Items struct {
					Properties struct {
						NextAction struct {
							Enum []string `json:"enum"`
						} `json:"next_action"`
					} `json:"properties"`
				} `json:"items"`
			} `json:"groups"`
		} `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(reportSchema, &next))
	var wantNext []string
	for _, a := range deadletter.AllNextActions() {
		wantNext = append(wantNext, string(a))
	}
	assert.ElementsMatch(t, wantNext, next.Properties.Groups.Items.Properties.NextAction.Enum)

	// What the schema refuses.
	var m map[string]any
	require.NoError(t, json.Unmarshal(golden, &m))
	m["report_version"] = 2
	bad, _ := json.Marshal(m)
	assert.Error(t, validate(t, sch, bad), "another version")

	// The effect_unknown group's keys (added within version 1): listed in
	// the golden report, distinct, non-empty strings.
	require.NoError(t, json.Unmarshal(golden, &m))
	var keyed map[string]any
	for _, g := range m["groups"].([]any) {
		if g := g.(map[string]any); g["reason"] == string(deadletter.ReasonEffectUnknown) {
			keyed = g
		}
	}
	require.NotNil(t, keyed, "the golden report has an effect_unknown group")
	assert.Equal(t, []any{"key-mail"}, keyed["idempotency_keys"])
	for name, v := range map[string]any{"a repeated key": []any{"k", "k"}, "an empty key": []any{""}, "a key that is not a string": []any{1}} {
		keyed["idempotency_keys"] = v
		bad, _ := json.Marshal(m)
		assert.Error(t, validate(t, sch, bad), name)
	}
	keyed["idempotency_keys"] = []any{"k"}
	keyed["idempotency_keys_omitted"] = 0
	bad, _ = json.Marshal(m)
	assert.Error(t, validate(t, sch, bad), "idempotency_keys_omitted is absent, not 0")
}
