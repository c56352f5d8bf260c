package sampleworker

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
