package sampleworker

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/agenttask"
)

// faultObjects are fault objects the flat reader takes, and ones it must
// leave to encoding/json.
var faultObjects = []string{
	`{}`, ` {} `, `{"kind":"panic"}`, `{ "retryable" : true , "status" : 503 , "error" : "x" , "until_receive" : 2 }`,
	`{"kind":"auth","code":"ExpiredToken","dependency":"search-api","type":"t"}`,
	`{"status":-1}`, `{"status":0}`, `{"status":-0}`, `{"retryable":false,"retryable":true}`, `{"status":1,"status":2}`,
	`{"status":null,"kind":null,"retryable":null}`, `{"other":"x","n":12,"b":true,"z":null}`, `{"error":"ünïcode ✓"}`,
	// encoding/json's business: it errs, or reads them its own way.
	`{"status":"503"}`, `{"retryable":"yes"}`, `{"kind":1}`, `{"status":1.5}`, `{"status":1e3}`, `{"status":01}`,
	`{"status":-}`, `{"status":99999999999999999999}`, `{"Status":503}`, `{"KIND":"panic"}`, `{"ſtatus":503}`,
	`{"kind":"a\"b"}`, `{"ki\u006ed":"panic"}`, "{\"error\":\"\xff\"}", "{\"error\":\"a\tb\"}", `{"kind":{"x":1}}`,
	`{"kind":["panic"]}`, `{"other":{"nested":true},"kind":"panic"}`, `{"kind":"panic",}`, `{"kind":"panic"`, `{"kind" "panic"}`,
	`{"retryable":truex}`, `{"retryable":tru}`, `{,}`, `{"a":1 "b":2}`, `[]`, `null`, ``,
}

// The flat reader agrees with encoding/json wherever it answers.
func TestParseFlatFaultMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	took := 0
	for _, obj := range faultObjects {
		checkFlatFault(t, []byte(obj))
		if _, ok := parseFlatFault([]byte(obj)); ok {
			took++
		}
	}
	assert.Equal(t, 13, took, "the plain objects are read without encoding/json")
}

func checkFlatFault(t *testing.T, obj []byte) {
	t.Helper()
	got, ok := parseFlatFault(obj)
	if !ok {
		return
	}
	var want *Fault
	require.NoError(t, json.Unmarshal(obj, &want), "the flat reader took %q, which encoding/json rejects", obj)
	require.NotNil(t, want, "%q", obj)
	assert.Equal(t, *want, *got, "%q", obj)
}

func FuzzParseFlatFault(f *testing.F) {
	for _, obj := range faultObjects {
		f.Add([]byte(obj))
	}
	f.Fuzz(func(t *testing.T, obj []byte) { checkFlatFault(t, obj) })
}

// faultArgs are args whose fault ParseFault must read as faultStd, the
// encoding/json reference, does: every spelling of the key, duplicates,
// values of every type, args that cannot be walked.
var faultArgs = []string{
	`{}`, `{"q":"fault"}`, `{"fault":{"kind":"panic"}}`, `{"fault":null}`, `{"fault":false}`, `{"fault":"boom"}`, `{"fault":[]}`,
	`{"fault":{}}`, `{"fault":{"status":"503"}}`, `{"f\u0061ult":{"kind":"auth"}}`, `{"faul\u0074":{"retryable":true}}`,
	`{"Fault":{"kind":"panic"}}`, `{"Fault":{"kind":"panic"},"x":"fault"}`, `{"fault":{"kind":"panic"},"fault":null}`,
	`{"fault":null,"fault":{"kind":"panic"}}`, `{"fault":{"kind":"panic","code":"x"},"fault":{"kind":"auth"}}`,
	`{"a":{"fault":{"kind":"panic"}},"b":"\u00e9"}`, `{"a":"}","fault":{"kind":"panic"}}`, `{"a":"\"fault\":1"}`,
	`{"fault" : { "kind" : "panic" } }`, "{\"fault\"\n:\t{\"kind\":\"guardrail\"}}", `{"fault":{"kind":"panic"}`, `{"fault":`,
	`[]`, `{"\u0066ault":1,"x":2}`, `{"f\u0061ult":{"kind":"panic"},"f\u0061ult":null}`,
	// Values the flat reader takes whole: spaced, nested, escaped, numbers
	// encoding/json reads or rejects.
	"{\"fault\" :\n {\n\t\"kind\" : \"panic\" ,\n\t\"status\":503\n }\n}", `{"fault":{"kind":"p\u0061nic"}}`,
	`{"fault":{"status":5e2}}`, `{"fault":{"status":-0}}`, `{"fault":{"retryable":true,"x":{"y":[1,{"z":null}]}}}`,
	`{"fault":{"kind":"auth","Kind":"panic"}}`, `{"a":[{"fault":{"kind":"panic"}}],"fault":{"kind":"auth"}}`,
	`{"fault":"\u0000"}`, `{"fault":12}`, `{"fault":true,"fault":{"kind":"panic"}}`, "{} \n", " {\"fault\":null}\t",
}

// ParseFault reads args.fault as encoding/json reads the member named
// exactly "fault": the same fault, or an error on the same args.
func TestParseFaultMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, args := range faultArgs {
		checkParseFault(t, []byte(args))
	}
}

func checkParseFault(t *testing.T, args []byte) {
	t.Helper()
	if !json.Valid(args) || args[0] != '{' {
		return // DecodeTask passes the worker a valid object
	}
	got, err := ParseFault(args)
	want, werr := faultStd(args)
	require.Equal(t, werr != nil, err != nil, "%q: ParseFault error %v, encoding/json %v", args, err, werr)
	assert.Equal(t, want, got, "%q", args)
	// The worker's path: the args of a task that DecodeTask decoded.
	body := []byte(`{"task_id":"t","run_id":"r","tenant":"x","idempotency_key":"k","tool":"web.search",` +
		`"tool_version":"1","trace_id":"tr","created_at":"c","schema_version":1,"args":` + string(args) + `}`)
	task, derr := agenttask.DecodeTask(body, nil)
	require.NoError(t, derr, "%q", body)
	require.Equal(t, string(bytes.Trim(args, " \t\r\n")), string(task.Args))
	got, err = ParseFault(task.Args)
	require.Equal(t, werr != nil, err != nil, "%q: ParseFault(task.Args) error %v, encoding/json %v", args, err, werr)
	assert.Equal(t, want, got, "%q: ParseFault(task.Args)", args)
}

func FuzzParseFault(f *testing.F) {
	for _, args := range faultArgs {
		f.Add([]byte(args))
	}
	f.Fuzz(func(t *testing.T, args []byte) { checkParseFault(t, args) })
}

// mentionsFault is a prefilter: false only where no key can read as
// "fault"; escaped non-ASCII text alone (a producer's \u00e9) is not
// walked.
func TestMentionsFault(t *testing.T) {
	t.Parallel()
	for args, want := range map[string]bool{
		`{"q":"caf\u00e9 \u00fc"}`:   false,
		`{"q":"x"}`:                  false,
		`{"fault":1}`:                true,
		`{"f\u0061ult":1}`:           true,
		`{"FAUL\u0054":1}`:           false, // "FAULT" is not "fault"
		`{"faul\u0074":1}`:           true,
		`{"\u0066ault":1}`:           true,
		`{"fau\u006Ct":1}`:           true,
		`{"q":"\u00e9","x":"fault"}`: true,
		`{"q":"\u00"}`:               false,
	} {
		assert.Equal(t, want, mentionsFault([]byte(args)), "%s", args)
	}
}
