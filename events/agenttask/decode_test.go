package agenttask_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/agenttask"
	"github.com/agentdlq/agentdlq/events/deadletter"
)

// validBody is a well-formed task; tests derive their cases from it.
// The refusals of the sample catalog's range.
const (
	outside   = `outside the tool's supported range ">=1.0.0 <4.0.0"`
	notSemver = `not a semver version (the tool supports ">=1.0.0 <4.0.0")`
)

const validBody = `{"task_id":"t-1","run_id":"r-1","tenant":"acme","idempotency_key":"k-1","tool":"web.search","tool_version":"1","trace_id":"tr-1","created_at":"2026-11-29T00:00:00Z","schema_version":1,"args":{"q":"go"}}`

// with returns validBody with member name's value replaced by raw JSON
// (or removed when raw is "").
func with(name, raw string) string {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(validBody), &m); err != nil {
		panic(err)
	}
	order := []string{"task_id", "run_id", "tenant", "idempotency_key", "tool", "tool_version", "trace_id", "created_at", "schema_version", "args"}
	var b strings.Builder
	b.WriteByte('{')
	first := true
	for _, k := range order {
		v := string(m[k])
		if k == name {
			if raw == "" {
				continue
			}
			v = raw
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		fmt.Fprintf(&b, "%q:%s", k, v)
	}
	b.WriteByte('}')
	return b.String()
}

type decoder struct {
	name string
	fn   func([]byte, agenttask.Catalog) (agenttask.Task, error)
}

var decoders = []decoder{
	{"scan", agenttask.DecodeTask},
	{"std", agenttask.DecodeTaskStd},
}

func TestDecodeTaskRules(t *testing.T) {
	t.Parallel()
	long := func(n int) string { return `"` + strings.Repeat("x", n) + `"` }
	tests := []struct {
		name   string
		body   string
		reason deadletter.Reason // want: "" for a valid task
		field  string            // want: the field named by the error
		detail string            // want: the rule's detail
	}{
		{name: "valid", body: validBody},
		{name: "not json", body: `{"task_id":`, reason: deadletter.ReasonJSONInvalid, detail: "the body is not a JSON object"},
		{name: "empty body", body: ``, reason: deadletter.ReasonJSONInvalid, detail: "the body is not a JSON object"},
		{name: "whitespace body", body: " \n\t", reason: deadletter.ReasonJSONInvalid, detail: "the body is not a JSON object"},
		{name: "array body", body: `[1,2]`, reason: deadletter.ReasonJSONInvalid, detail: "the body is not a JSON object"},
		{name: "string body", body: `"task"`, reason: deadletter.ReasonJSONInvalid, detail: "the body is not a JSON object"},
		{name: "null body", body: `null`, reason: deadletter.ReasonJSONInvalid, detail: "the body is not a JSON object"},
		{name: "trailing garbage", body: validBody + `x`, reason: deadletter.ReasonJSONInvalid, detail: "the body is not a JSON object"},
		{name: "two objects", body: validBody + validBody, reason: deadletter.ReasonJSONInvalid, detail: "the body is not a JSON object"},
		{name: "invalid json inside args", body: with("args", `{"q":[1,2,}`), reason: deadletter.ReasonJSONInvalid, detail: "the body is not a JSON object"},
		{name: "bad escape inside args", body: with("args", `{"q":"\x"}`), reason: deadletter.ReasonJSONInvalid, detail: "the body is not a JSON object"},
		{name: "control char in string", body: with("tenant", "\"ac\x01me\""), reason: deadletter.ReasonJSONInvalid, detail: "the body is not a JSON object"},
		{name: "form feed before body", body: "\f" + validBody, reason: deadletter.ReasonJSONInvalid, detail: "the body is not a JSON object"},
		{name: "leading zero number in args", body: with("args", `{"n":01}`), reason: deadletter.ReasonJSONInvalid, detail: "the body is not a JSON object"},
		{name: "single quotes", body: `{'task_id':'t'}`, reason: deadletter.ReasonJSONInvalid, detail: "the body is not a JSON object"},
		{name: "missing task_id", body: with("task_id", ""), reason: deadletter.ReasonSchemaInvalid, field: "task_id", detail: "required field is missing"},
		{name: "run_id a number", body: with("run_id", `7`), reason: deadletter.ReasonSchemaInvalid, field: "run_id", detail: "must be a string"},
		{name: "tenant null", body: with("tenant", `null`), reason: deadletter.ReasonSchemaInvalid, field: "tenant", detail: "must be a string"},
		{name: "idempotency_key empty", body: with("idempotency_key", `""`), reason: deadletter.ReasonSchemaInvalid, field: "idempotency_key", detail: "must not be empty"},
		{name: "tool an object", body: with("tool", `{"name":"web.search"}`), reason: deadletter.ReasonSchemaInvalid, field: "tool", detail: "must be a string"},
		{name: "tool_version missing", body: with("tool_version", ""), reason: deadletter.ReasonSchemaInvalid, field: "tool_version", detail: "required field is missing"},
		{name: "trace_id an array", body: with("trace_id", `["a"]`), reason: deadletter.ReasonSchemaInvalid, field: "trace_id", detail: "must be a string"},
		{name: "created_at false", body: with("created_at", `false`), reason: deadletter.ReasonSchemaInvalid, field: "created_at", detail: "must be a string"},
		{name: "task_id at max length", body: with("task_id", long(256))},
		{name: "task_id too long", body: with("task_id", long(257)), reason: deadletter.ReasonSchemaInvalid, field: "task_id", detail: "must be at most 256 characters"},
		{name: "tool too long", body: with("tool", long(129)), reason: deadletter.ReasonSchemaInvalid, field: "tool", detail: "must be at most 128 characters"},
		{name: "created_at too long", body: with("created_at", long(65)), reason: deadletter.ReasonSchemaInvalid, field: "created_at", detail: "must be at most 64 characters"},
		{name: "length counts characters not bytes", body: with("tool_version", `"`+strings.Repeat("é", 64)+`"`), reason: deadletter.ReasonToolVersionUnsupported, field: "tool_version", detail: notSemver},
		{name: "escaped length counts characters", body: with("tool_version", `"`+strings.Repeat(`\u00e9`, 65)+`"`), reason: deadletter.ReasonSchemaInvalid, field: "tool_version", detail: "must be at most 64 characters"},
		{name: "schema_version missing", body: with("schema_version", ""), reason: deadletter.ReasonSchemaInvalid, field: "schema_version", detail: "required field is missing"},
		{name: "schema_version 2", body: with("schema_version", `2`), reason: deadletter.ReasonSchemaInvalid, field: "schema_version", detail: "must be 1"},
		{name: "schema_version 0", body: with("schema_version", `0`), reason: deadletter.ReasonSchemaInvalid, field: "schema_version", detail: "must be 1"},
		{name: "schema_version -1", body: with("schema_version", `-1`), reason: deadletter.ReasonSchemaInvalid, field: "schema_version", detail: "must be 1"},
		{name: "schema_version a string", body: with("schema_version", `"1"`), reason: deadletter.ReasonSchemaInvalid, field: "schema_version", detail: "must be an integer"},
		{name: "schema_version null", body: with("schema_version", `null`), reason: deadletter.ReasonSchemaInvalid, field: "schema_version", detail: "must be an integer"},
		{name: "schema_version true", body: with("schema_version", `true`), reason: deadletter.ReasonSchemaInvalid, field: "schema_version", detail: "must be an integer"},
		{name: "schema_version 1.5", body: with("schema_version", `1.5`), reason: deadletter.ReasonSchemaInvalid, field: "schema_version", detail: "must be an integer"},
		{name: "schema_version 1.0 is 1", body: with("schema_version", `1.0`)},
		{name: "schema_version 1e0 is 1", body: with("schema_version", `1e0`)},
		{name: "schema_version 10e-1 is 1", body: with("schema_version", `10e-1`)},
		{name: "schema_version 0.1E+1 is 1", body: with("schema_version", `0.1E+1`)},
		{name: "schema_version 1.000 is 1", body: with("schema_version", `1.000`)},
		{name: "schema_version 1e1", body: with("schema_version", `1e1`), reason: deadletter.ReasonSchemaInvalid, field: "schema_version", detail: "must be 1"},
		{name: "schema_version 2.0", body: with("schema_version", `2.0`), reason: deadletter.ReasonSchemaInvalid, field: "schema_version", detail: "must be 1"},
		{name: "schema_version 1e-1", body: with("schema_version", `1e-1`), reason: deadletter.ReasonSchemaInvalid, field: "schema_version", detail: "must be an integer"},
		{name: "schema_version huge", body: with("schema_version", `123456789012345678901234567890`), reason: deadletter.ReasonSchemaInvalid, field: "schema_version", detail: "must be 1"},
		{name: "schema_version -0", body: with("schema_version", `-0`), reason: deadletter.ReasonSchemaInvalid, field: "schema_version", detail: "must be 1"},
		{name: "schema_version 1.0000000000000000000001", body: with("schema_version", `1.0000000000000000000001`), reason: deadletter.ReasonSchemaInvalid, field: "schema_version", detail: "must be an integer"},
		{name: "args missing", body: with("args", ""), reason: deadletter.ReasonSchemaInvalid, field: "args", detail: "required field is missing"},
		{name: "args an array", body: with("args", `[]`), reason: deadletter.ReasonSchemaInvalid, field: "args", detail: "must be an object"},
		{name: "args a string", body: with("args", `"{}"`), reason: deadletter.ReasonSchemaInvalid, field: "args", detail: "must be an object"},
		{name: "args null", body: with("args", `null`), reason: deadletter.ReasonSchemaInvalid, field: "args", detail: "must be an object"},
		{name: "args empty object", body: with("args", `{}`)},
		{name: "first failing field wins", body: with("task_id", `1`)[:0] + `{"run_id":1,"task_id":""}`, reason: deadletter.ReasonSchemaInvalid, field: "task_id", detail: "must not be empty"},
		{name: "tool unknown", body: with("tool", `"web.crawl"`), reason: deadletter.ReasonToolUnknown, field: "tool", detail: "not in the catalog"},
		{name: "tool version 3 is in 1.x-3.x", body: with("tool_version", `"3"`)},
		{name: "tool version patch release", body: with("tool_version", `"1.4.2"`)},
		{name: "tool version last of 3.x", body: with("tool_version", `"3.99.99"`)},
		{name: "tool version above the range", body: with("tool_version", `"4.0.0"`), reason: deadletter.ReasonToolVersionUnsupported, field: "tool_version", detail: outside},
		{name: "tool version below the range", body: with("tool_version", `"0.9.1"`), reason: deadletter.ReasonToolVersionUnsupported, field: "tool_version", detail: outside},
		{name: "tool version prerelease", body: with("tool_version", `"2.0.0-rc.1"`), reason: deadletter.ReasonToolVersionUnsupported, field: "tool_version", detail: outside},
		{name: "tool version not semver", body: with("tool_version", `"latest"`), reason: deadletter.ReasonToolVersionUnsupported, field: "tool_version", detail: notSemver},
		{name: "tool version four parts", body: with("tool_version", `"1.2.3.4"`), reason: deadletter.ReasonToolVersionUnsupported, field: "tool_version", detail: notSemver},
		{name: "schema before catalog", body: with("tool", `"web.crawl"`)[:0] + strings.Replace(with("tool", `"web.crawl"`), `"schema_version":1`, `"schema_version":2`, 1), reason: deadletter.ReasonSchemaInvalid, field: "schema_version", detail: "must be 1"},
		{name: "duplicate key last wins (bad last)", body: strings.Replace(validBody, `"tool":"web.search"`, `"tool":"web.search","tool":7`, 1), reason: deadletter.ReasonSchemaInvalid, field: "tool", detail: "must be a string"},
		{name: "duplicate key last wins (good last)", body: strings.Replace(validBody, `"tool":"web.search"`, `"tool":7,"tool":"web.search"`, 1)},
		{name: "escaped key matches", body: strings.Replace(validBody, `"tool":`, `"t\u006fol":`, 1)},
		{name: "key differing in case does not match", body: strings.Replace(validBody, `"tool":`, `"Tool":`, 1), reason: deadletter.ReasonSchemaInvalid, field: "tool", detail: "required field is missing"},
	}
	for _, tt := range tests {
		for _, d := range decoders {
			t.Run(tt.name+"/"+d.name, func(t *testing.T) {
				t.Parallel()
				task, err := d.fn([]byte(tt.body), sampleCatalog())
				if tt.reason == "" {
					require.NoError(t, err)
					assert.Equal(t, 1, task.SchemaVersion)
					assert.True(t, json.Valid(task.Args), "args is JSON")
					return
				}
				ve, ok := agenttask.AsValidationError(err)
				require.True(t, ok, "error %v is a ValidationError", err)
				assert.Equal(t, tt.reason, ve.Reason)
				assert.Equal(t, tt.field, ve.Field)
				assert.Equal(t, tt.detail, ve.Detail)
				assert.Equal(t, agenttask.Task{}, task)
			})
		}
	}
}

func TestDecodeTaskFields(t *testing.T) {
	t.Parallel()
	body := `  {"args" : { "nested": {"deep": [1, 2.5e-3, true, null, "x"]}, "text": "a \"quoted\" \\ line\n" } ,
	"task_id":"t\u00e9sk-\ud83d\ude00","run_id":"run\/1","tenant":"acmé","idempotency_key":"k\u00201",
	"tool":"email.send","tool_version":"1","trace_id":"\ud800","created_at":"2026-11-29T00:00:00Z","schema_version":1.0}  `
	want := agenttask.Task{
		TaskID: "tésk-😀", RunID: "run/1", Tenant: "acmé", IdempotencyKey: "k 1",
		Tool: "email.send", ToolVersion: "1", TraceID: "\uFFFD", CreatedAt: "2026-11-29T00:00:00Z",
		SchemaVersion: 1,
		Args:          json.RawMessage(`{ "nested": {"deep": [1, 2.5e-3, true, null, "x"]}, "text": "a \"quoted\" \\ line\n" }`),
	}
	for _, d := range decoders {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			got, err := d.fn([]byte(body), sampleCatalog())
			require.NoError(t, err)
			assert.Equal(t, want, got)
		})
	}
}

func TestDecodeTaskArgsIsSubslice(t *testing.T) {
	t.Parallel()
	body := []byte(validBody)
	task, err := agenttask.DecodeTask(body, nil)
	require.NoError(t, err)
	i := strings.Index(validBody, `{"q":"go"}`)
	require.GreaterOrEqual(t, i, 0)
	assert.Same(t, &body[i], &task.Args[0], "args points into the body")
	assert.Equal(t, len(task.Args), cap(task.Args), "appending to args cannot overwrite the body")
}

func TestDecodeTaskNilCatalogSkipsTools(t *testing.T) {
	t.Parallel()
	for _, d := range decoders {
		task, err := d.fn([]byte(with("tool", `"web.crawl"`)), nil)
		require.NoError(t, err, d.name)
		assert.Equal(t, "web.crawl", task.Tool, d.name)
	}
}

// edgeBodies are hand-written inputs on which the two decoders must agree.
func edgeBodies() []string {
	deep := func(n int) string {
		return with("args", `{"a":`+strings.Repeat("[", n-2)+strings.Repeat("]", n-2)+`}`)
	}
	return append([]string{
		validBody,
		"\t\r\n " + validBody + "\n",
		"\ufeff" + validBody,
		"\v" + validBody,
		validBody + "\x00",
		`{}`, `{ }`, `{"":1}`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{,}`, `{"a":1 "b":2}`,
		`{"a":tru}`, `{"a":nul}`, `{"a":falsey}`, `{"a":-}`, `{"a":1.}`, `{"a":.5}`, `{"a":1e}`, `{"a":1e+}`, `{"a":+1}`, `{"a":0x1}`, `{"a":Infinity}`, `{"a":NaN}`,
		`{"a":"\u12"}`, `{"a":"\u12G4"}`, `{"a":"\'"}`, `{"a":"tab	in string"}`,
		"{\"a\":\"\xff\xfe\"}",
		with("tenant", "\"\xff\xfeacme\""),
		with("tenant", "\"acme\xc3\""),
		with("tenant", `"\ud83d"`),
		with("tenant", `"\ud83d\u0041"`),
		with("tenant", `"\ude00\ud83d"`),
		with("tenant", `"\uDBFF\uDFFF"`),
		with("tenant", `"\u0000"`),
		with("tenant", `"`+strings.Repeat(`\ud83d\ude00`, 257)+`"`),
		with("tenant", `"`+strings.Repeat("\xff", 257)+`"`),
		with("tenant", `"`+strings.Repeat("\xff", 256)+`"`),
		// Around maxLength, in bytes and in characters: decodeStrings counts
		// characters only when the bytes exceed it.
		with("tenant", `"`+strings.Repeat("ü", 128)+`"`), with("tenant", `"`+strings.Repeat("ü", 129)+`"`),
		with("tenant", `"`+strings.Repeat("ü", 256)+`"`), with("tenant", `"`+strings.Repeat("ü", 257)+`"`),
		with("tenant", `"`+strings.Repeat("x", 255)+`ü"`), with("tenant", `"`+strings.Repeat("x", 256)+`ü"`),
		with("tenant", `"`+strings.Repeat(`\u0061`, 256)+`"`), with("tenant", `"`+strings.Repeat(`\u0061`, 257)+`"`),
		with("tenant", `"`+strings.Repeat(`\u00fc`, 256)+`"`), with("tenant", `"`+strings.Repeat(`\u00fc`, 257)+`"`),
		with("tenant", `"`+strings.Repeat("\xff", 85)+`"`), with("tenant", `"`+strings.Repeat("\xff", 86)+`"`),
		with("tool", `"`+strings.Repeat("é", 128)+`"`), with("tool", `"`+strings.Repeat("é", 129)+`"`),
		with("tool_version", `"`+strings.Repeat("é", 65)+`"`), with("tool_version", `"\u00e9"`),
		with("schema_version", `1E0`), with("schema_version", `100e-2`), with("schema_version", `0.00001e5`),
		with("schema_version", `-1.0`),
		with("schema_version", `9223372036854775808`), with("schema_version", `00`),
		with("args", `{"fault":{"retryable":true,"status":503}}`),
		// args members: duplicates, escaped and invalid keys, values of
		// every kind, args repeated or not an object, a key that reads as
		// a name only in another member.
		with("args", `{"fault":1,"fault":{"kind":"panic"} , "q" : [1,{"fault":2}]}`),
		with("args", `{"f\u0061ult":null,"q":"\"fault\":3","a":{"fault":4}}`),
		with("args", `{"fault":"x","f\u0061ul\u0074":true}`), with("args", `{"\u0066\u0061\u0075\u006C\u0074":-1.5e3}`),
		with("args", `{"Fault":1,"faultx":2,"fault\u0000":3,"\u00e9":4,"é":5,"\ud800":6}`),
		with("args", "{\"\xffq\":1,\"q\xff\":2,\"\xe9\":3}"), with("args", "{\n\t\"fault\"\r\n:\t[ ]\n}"),
		`{"args":{"fault":1},"args":{"q":2}}`, `{"args":{"fault":1},"args":[]}`, `{"args":[],"args":{"fault":1}}`,
		`{"args":{"fault":1},"args":{"fault":2}}`, `{"args":{"fault":1},"args":{"fault":2,}}`,
		with("args", `{"`+strings.Repeat(`\u0061`, 30)+`":1,"a":{"q":{"fault":[]}}}`),
		with("args", `{"a":[{"b":[{"c":{}}]}]}`),
		with("args", `{"a":[1 2]}`), with("args", `{"a":[1,]}`), with("args", `{"a":{"b"}}`),
		with("args", `{"a":"`+strings.Repeat("x", 5000)+`"}`),
		deep(10000), deep(10001),
		`{"args":{}}`, `{"args":{},"args":[]}`, `{"args":[],"args":{}}`,
		strings.Replace(validBody, `"tool":`, `"tool\u0000":`, 1),
		strings.Replace(validBody, `"tool":"web.search"`, `"tool":"web.search","to\u006fl":5`, 1),
		strings.Replace(validBody, `"tool":"web.search"`, `"t\u006fol":5,"tool":"web.search"`, 1),
		strings.Replace(validBody, `"tool":`, `"`+strings.Repeat(`\u0000`, 40)+`":1,"tool":`, 1),
		strings.Replace(validBody, `"tool":"web.search"`, `"tool":"web.search","tool":"web.crawl"`, 1),
		strings.Replace(validBody, `"tool":`, `"to\u006Fl" :`, 1),
		strings.Replace(validBody, `"tool":`, "\"tool\xff\":", 1),
		strings.ReplaceAll(validBody, ",", " ,\n\t"),
		strings.ReplaceAll(validBody, ":", " : "),
	}, controlBodies()...)
}

// identControls are, as JSON string contents, the characters an identifier
// refuses (C0 escaped as JSON must, and \u-escaped, DEL, C1, bidi controls), and
// their neighbours it keeps (a space, ~, U+00A0, U+200D, U+202F, U+2065,
// U+206A, an invalid byte that reads as U+FFFD, a C2 lead byte before
// ASCII).
var identControls = []struct {
	raw    string
	refuse bool
}{
	{`\n`, true}, {`\u001b[2J`, true}, {`\t`, true}, {`\u0000`, true}, {`\r`, true}, {`\u001f`, true},
	{"\x7f", true}, {`\u007f`, true}, {"\u0080", true}, {"\u009b", true}, {`\u0085`, true}, {"\u009f", true},
	{"\u061c", true}, {"\u200e", true}, {"\u200f", true}, {"\u202a", true}, {"\u202e", true}, {`\u202E`, true},
	{"\u2066", true}, {"\u2069", true},
	{" ", false}, {"~", false}, {"\u00a0", false}, {"\u200d", false}, {"\u202f", false}, {"\u2065", false},
	{"\u206a", false}, {"\u061b", false}, {"\u2029", false}, {"\xc2A", false}, {"\xe2\x80", false}, {"\xff", false},
}

// controlBodies are bodies whose identifiers (and, kept, trace_id and
// created_at) carry each of identControls, in the middle and at the end.
func controlBodies() []string {
	var out []string
	for _, f := range []string{"task_id", "run_id", "tenant", "idempotency_key", "tool", "tool_version", "trace_id", "created_at"} {
		for _, c := range identControls {
			out = append(out, with(f, `"a`+c.raw+`b"`), with(f, `"a`+c.raw+`"`))
		}
	}
	return out
}

// fixtureBodies returns the body of every record of every SQS fixture.
func fixtureBodies(t testing.TB) []string { return fixtureBodiesOf(t, "sqs-*.json") }

// fixtureBodiesOf returns the record bodies of the fixtures matching pattern.
func fixtureBodiesOf(t testing.TB, pattern string) []string {
	files, err := filepath.Glob(filepath.Join("..", "testdata", pattern))
	require.NoError(t, err)
	var bodies []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		var ev events.SQSEvent
		if json.Unmarshal(data, &ev) != nil {
			continue
		}
		for _, r := range ev.Records {
			bodies = append(bodies, r.Body)
		}
	}
	return bodies
}

// sameDecode reports how DecodeTask and DecodeTaskStd differ on body, or "".
func sameDecode(body []byte, catalog agenttask.Catalog) string {
	got, gotErr := agenttask.DecodeTask(body, catalog)
	// DecodeTask without a catalog, then CheckTool, is DecodeTask.
	split, splitErr := agenttask.DecodeTask(body, nil)
	if splitErr == nil {
		if _, splitErr = agenttask.CheckTool(&split, catalog); splitErr != nil {
			split = agenttask.Task{}
		}
	}
	if fmt.Sprint(gotErr) != fmt.Sprint(splitErr) || cmp.Diff(got, split) != "" {
		return fmt.Sprintf("DecodeTask %v, DecodeTask(nil)+CheckTool %v", gotErr, splitErr)
	}
	want, wantErr := agenttask.DecodeTaskStd(body, catalog)
	if (gotErr == nil) != (wantErr == nil) {
		return fmt.Sprintf("scan error %v, std error %v", gotErr, wantErr)
	}
	if gotErr != nil {
		g, _ := agenttask.AsValidationError(gotErr)
		w, _ := agenttask.AsValidationError(wantErr)
		if g == nil || w == nil || g.Reason != w.Reason || g.Field != w.Field {
			return fmt.Sprintf("scan error %v, std error %v", gotErr, wantErr)
		}
		return ""
	}
	return cmp.Diff(want, got)
}

func TestDecodeTaskAgreesWithStd(t *testing.T) {
	t.Parallel()
	bodies := append(edgeBodies(), fixtureBodies(t)...)
	// Exponents beyond what math/big parses: the reference calls them "not
	// an integer", the scanner reads the digits; reason and field agree.
	bodies = append(bodies, with("schema_version", `1e99999999999999999999`), with("schema_version", `0e99999999`), with("schema_version", `1e-99999999`))
	for i, body := range bodies {
		for _, catalog := range []agenttask.Catalog{nil, sampleCatalog()} {
			if diff := sameDecode([]byte(body), catalog); diff != "" {
				t.Errorf("body %d %.80q (catalog %v): %s", i, body, catalog != nil, diff)
			}
		}
	}
}

// TestDecodeTaskDetailsAgree holds the details, not only reason and field,
// together on the hand-written cases.
func TestDecodeTaskDetailsAgree(t *testing.T) {
	t.Parallel()
	for i, body := range edgeBodies() {
		_, gotErr := agenttask.DecodeTask([]byte(body), sampleCatalog())
		_, wantErr := agenttask.DecodeTaskStd([]byte(body), sampleCatalog())
		if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
			t.Errorf("body %d %.80q: scan %v, std %v", i, body, gotErr, wantErr)
		}
	}
}

func TestValidationErrorUnwraps(t *testing.T) {
	t.Parallel()
	_, err := agenttask.DecodeTask([]byte(`nope`), nil)
	wrapped := fmt.Errorf("record m-1: %w", err)
	ve, ok := agenttask.AsValidationError(wrapped)
	require.True(t, ok)
	assert.Equal(t, deadletter.ReasonJSONInvalid, ve.Reason)
	var target *agenttask.ValidationError
	assert.True(t, errors.As(wrapped, &target))
	assert.Equal(t, "json_invalid: the body is not a JSON object", err.Error())
	_, err = agenttask.DecodeTask([]byte(with("args", "[]")), nil)
	assert.Equal(t, "schema_invalid: args: must be an object", err.Error())
}

func FuzzDecodeTask(f *testing.F) {
	for _, b := range edgeBodies() {
		f.Add([]byte(b))
	}
	for _, b := range fixtureBodies(f) {
		f.Add([]byte(b))
	}
	catalog := sampleCatalog()
	f.Fuzz(func(t *testing.T, body []byte) {
		if diff := sameDecode(body, catalog); diff != "" {
			t.Errorf("%q: %s", body, diff)
		}
		if task, err := agenttask.DecodeTask(body, catalog); err == nil && !json.Valid(task.Args) {
			t.Errorf("%q: args %q is not JSON", body, task.Args)
		}
	})
}

// TestIdentifierControls: a control, DEL, C1 or bidi character in any of
// the six identifiers is schema_invalid naming the field, in both
// decoders; trace_id and created_at, and the characters beside them, pass.
func TestIdentifierControls(t *testing.T) {
	t.Parallel()
	idents := map[string]bool{"task_id": true, "run_id": true, "tenant": true, "idempotency_key": true, "tool": true, "tool_version": true}
	for _, f := range []string{"task_id", "run_id", "tenant", "idempotency_key", "tool", "tool_version", "trace_id", "created_at"} {
		for _, c := range identControls {
			body := with(f, `"a`+c.raw+`b"`)
			for name, decode := range map[string]func([]byte, agenttask.Catalog) (agenttask.Task, error){"DecodeTask": agenttask.DecodeTask, "DecodeTaskStd": agenttask.DecodeTaskStd} {
				_, err := decode([]byte(body), nil)
				if !(idents[f] && c.refuse) {
					assert.NoError(t, err, "%s: %s %q", name, f, c.raw)
					continue
				}
				var ve *agenttask.ValidationError
				if assert.ErrorAs(t, err, &ve, "%s: %s %q", name, f, c.raw) {
					assert.Equal(t, deadletter.ReasonSchemaInvalid, ve.Reason, "%s: %s %q", name, f, c.raw)
					assert.Equal(t, f, ve.Field, "%s: %s %q", name, f, c.raw)
					assert.Contains(t, ve.Error(), "control characters")
				}
			}
		}
	}
}
