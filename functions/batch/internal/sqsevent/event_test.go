package sqsevent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/internal/textutil"
	"github.com/agentdlq/agentdlq/testkit/localtest"
)

// decodeCopy is Decode on a copy of payload (batch.DecodeEvent's way), so
// that the caller's payload is left as it was.
func decodeCopy(payload []byte) (*Event, error) { return Decode(bytes.Clone(payload)) }

// attributeMap is what a dead letter carries of a record's attributes, as a map.
func attributeMap(attrs []deadletter.NamedAttribute) map[string]deadletter.Attribute {
	if len(attrs) == 0 {
		return nil
	}
	out := make(map[string]deadletter.Attribute, len(attrs))
	for _, a := range attrs {
		out[a.Name] = a.Attribute
	}
	return out
}

// diffDecode decodes payload with Decode (on a copy: it decodes in
// place) and with json.Unmarshal into events.SQSEvent, as aws-lambda-go
// does, and fails t when they disagree: both succeed with the same records
// (every string byte for byte, nil and empty maps and slices alike), or
// both fail, or Decode refuses a duplicate key that encoding/json
// would have merged. It returns the lean event (nil on error).
func diffDecode(t *testing.T, payload []byte) *Event {
	t.Helper()
	var want events.SQSEvent
	jerr := json.Unmarshal(payload, &want)
	lean, lerr := decodeCopy(bytes.Clone(payload))
	switch {
	case lerr != nil && jerr != nil:
		if !errors.Is(lerr, ErrNotSQSEvent) {
			t.Fatalf("Decode error %v does not wrap ErrNotSQSEvent", lerr)
		}
		samePosition(t, payload, lerr, "Decode")
		_, ierr := Decode(bytes.Clone(payload)) // Invoke's way: in place
		samePosition(t, payload, ierr, "in place")
		return nil
	case lerr != nil:
		if !errors.Is(lerr, ErrRepeatedJSONKey) {
			t.Fatalf("Decode refused what encoding/json accepts: %v\npayload: %q", lerr, textutil.Truncate(string(payload), 2000))
		}
		return nil
	case jerr != nil:
		t.Fatalf("Decode accepted what encoding/json refuses (%v)\npayload: %q", jerr, textutil.Truncate(string(payload), 2000))
	}
	got := lean.SQSEvent()
	if !reflect.DeepEqual(got, want) {
		for i := range min(len(got.Records), len(want.Records)) {
			if !reflect.DeepEqual(got.Records[i], want.Records[i]) {
				t.Fatalf("record %d differs:\n lean %#v\n json %#v", i, got.Records[i], want.Records[i])
			}
		}
		t.Fatalf("events differ: lean %d records, json %d (nil: %v, %v)", len(got.Records), len(want.Records), got.Records == nil, want.Records == nil)
	}
	sameMessages(t, "Decode", lean.Records, want)
	// Handle's way to the same messages, from the decoded event.
	fromSQS, err := FromSQSEvent(want)
	if err != nil {
		t.Fatalf("FromSQSEvent of a decoded event: %v", err)
	}
	if got := (&Event{Records: fromSQS}).SQSEvent(); !reflect.DeepEqual(got.Records, want.Records) && len(want.Records) > 0 {
		t.Fatalf("FromSQSEvent:\n got %#v\nwant %#v", got.Records, want.Records)
	}
	sameMessages(t, "FromSQSEvent", fromSQS, want)
	if cerr, werr := lean.Check(), CheckSQSEvent(want); (cerr == nil) != (werr == nil) {
		t.Fatalf("check: lean %v, CheckSQSEvent %v", cerr, werr)
	}
	return lean
}

// samePosition fails t when err says the payload is invalid JSON at
// another byte than the one encoding/json finds (json.Valid's scan, which
// json.Unmarshal runs first). A decoder that stopped earlier for a valid
// value of the wrong type says so, not "invalid JSON".
func samePosition(t *testing.T, payload []byte, err error, entry string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), "invalid JSON") || strings.Contains(err.Error(), "nested deeper") {
		return // nesting: the position is the too-deep value's start
	}
	want := len(payload)
	var se *json.SyntaxError
	if jerr := json.Unmarshal(payload, new(json.RawMessage)); errors.As(jerr, &se) {
		// At the end of the input json.Unmarshal's scan says "unexpected
		// end of JSON input", or, inside a literal, reads a space that is
		// not there ("invalid character ' ' in literal null"): Offset is
		// then len(payload), and so is the position. Otherwise the byte
		// is the Offset-th.
		eof := se.Error() == "unexpected end of JSON input" ||
			int(se.Offset) == len(payload) && strings.HasPrefix(se.Error(), "invalid character ' '") && payload[len(payload)-1] != ' '
		if !eof {
			want = int(se.Offset) - 1
		}
	} else if jerr == nil {
		t.Fatalf("%s: %v, but encoding/json finds the payload valid JSON", entry, err)
	}
	if at := fmt.Sprintf(" at byte %d", want); !strings.HasSuffix(err.Error(), at) {
		t.Fatalf("%s: %v, want the error%s (encoding/json's)\npayload: %q", entry, err, at, textutil.Truncate(string(payload), 2000))
	}
}

// sameMessages fails t when what the processor reads of msgs without
// materializing a record differs from the decoded event want.
func sameMessages(t *testing.T, path string, msgs []Message, want events.SQSEvent) {
	t.Helper()
	for i := range msgs {
		r, w := &msgs[i], &want.Records[i]
		n, ok := r.ReceiveCount()
		wn, wok := ParseReceiveCount(w.Attributes[attrReceiveCount])
		if n != wn || ok != wok {
			t.Fatalf("record %d: receive count %d %v, want %d %v", i, n, ok, wn, wok)
		}
		if r.Group() != w.Attributes[attrGroupID] {
			t.Fatalf("record %d: group %q, want %q", i, r.Group(), w.Attributes[attrGroupID])
		}
		for _, name := range []string{attrSentAt, attrFirstReceive, attrTraceHeader, attrReceiveCount} {
			v, ok := r.Attribute(name)
			wv, wok := w.Attributes[name]
			if v != wv || ok != wok {
				t.Fatalf("record %d: attribute %s = %q %v, want %q %v", i, name, v, ok, wv, wok)
			}
		}
		for k, name := range sysNames {
			if v, ok := r.sysAttr(k); ok && string(v) != w.Attributes[name] {
				t.Fatalf("record %d: %s noted as %q, want %q", i, name, v, w.Attributes[name])
			}
		}
		// What a dead letter carries of them (the trusted walk): each name
		// once, data type and value as encoding/json decodes them.
		dla := r.AppendDeadLetterAttrs(nil)
		dl := attributeMap(dla)
		if len(dla) != len(dl) {
			t.Fatalf("record %d: %d dead-letter attributes for %d names", i, len(dla), len(dl))
		}
		var wdl map[string]deadletter.Attribute
		for name, a := range w.MessageAttributes {
			if wdl == nil {
				wdl = map[string]deadletter.Attribute{}
			}
			v := deadletter.Attribute{DataType: a.DataType, BinaryValue: a.BinaryValue}
			if a.StringValue != nil {
				v.StringValue = *a.StringValue
			}
			wdl[name] = v
		}
		if !reflect.DeepEqual(dl, wdl) {
			t.Fatalf("%s: record %d: dead-letter attributes\n lean %#v\n json %#v", path, i, dl, wdl)
		}
	}
}

func TestDecodeTestdata(t *testing.T) {
	files, err := filepath.Glob("../../../../events/testdata/*.json")
	if err != nil || len(files) < 20 {
		t.Fatalf("testdata: %v (%d files)", err, len(files))
	}
	decoded := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			if ev := diffDecode(t, data); ev != nil {
				decoded += len(ev.Records)
			}
		})
	}
	if decoded < 100 {
		t.Fatalf("only %d records decoded over the testdata", decoded)
	}
}

// TestDecodeGenMix decodes the generator's mixes (every tool and shape,
// 0-10 message attributes, bodies with escapes) as make bench-sizes does.
func TestDecodeGenMix(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs events/gen")
	}
	for _, mix := range [][2]string{{"1000", "90"}, {"300", "10"}} {
		data := localtest.GenMix(t, atoiOr(mix[0]), atoiOr(mix[1]))
		ev := diffDecode(t, data)
		if ev == nil || len(ev.Records) != atoiOr(mix[0]) {
			t.Fatalf("mix %v: decoded %d records", mix, len(ev.Records))
		}
		withAttrs := 0
		for i := range ev.Records {
			if ev.Records[i].HasMessageAttributes() {
				withAttrs++
			}
		}
		if withAttrs == 0 {
			t.Fatalf("mix %v: no record with message attributes", mix)
		}
	}
}

func atoiOr(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

// Edge cases of escaping, key matching and types, each against encoding/json.
var eventEdgeCases = []string{
	`null`, ` {} `, `{"Records":null}`, `{"Records":[]}`, `{"Records":[null]}`, `{"records":[{"messageId":"a"}]}`,
	`{"RECORDS":[{"MESSAGEID":"a","Body":"b"}]}`,
	`{"Records":[{"messageId":"a","body":"\u00e9\u4e2d\ud83d\ude00 \"q\" \\ \/ \b\f\n\r\t"}]}`,
	`{"Records":[{"messageId":"a","body":"lone \ud800 high \udc00 low \ud800\u0041 pair-ish \ud83d\ude00\ud83d"}]}`,
	"{\"Records\":[{\"messageId\":\"a\",\"body\":\"bad \xff utf8 \xed\xa0\x80 \xc3\"}]}",
	"{\"Records\":[{\"messageId\":\"a\",\"body\":\"bad \xff with escape \\n \xe2\x82\"}]}",
	// Bodies that are JSON, quoted as Lambda delivers them (an escape every
	// few bytes, so decoding in place writes whole words once it is 8 bytes
	// behind), with invalid UTF-8 beside escapes and a long plain run.
	`{"Records":[{"messageId":"a","body":"{\"tool\":\"x\",\"args\":{\"a\":[1,\"b\"],\"c\":\"d\\\"e\\n\",\"é\":\"\u00e9\ud83d\ude00\"},\"pad\":\"` + strings.Repeat("p", 70) + `\",\"z\":\"\/\"}"}]}`,
	"{\"Records\":[{\"messageId\":\"a\",\"body\":\"{\\\"k\\\":\\\"\xc3\\\",\\\"l\\\":\\\"\xe2\x82\\\",\\\"m\\\":\\\"\xff\\u00e9\xf0\x9f\\\",\\\"n\\\":\\\"\xed\xa0\x80\\n\\\"}\"},{\"body\":\"\\\"\\\"\\\"\\\"\\\"\\\"\\\"\\\"\\\"\xc3\"}]}",
	`{"Records":[{"messageId":"a","body":"é中😀 raw"}]}`,
	`{"Records":[{"messageId":"a","body":""}]}`,
	`{"Records":[{"messageId":"a","body":null,"attributes":null,"messageAttributes":null}]}`,
	`{"Records":[{"messageId":"a","attributes":{},"messageAttributes":{}}]}`, `{"Records":[{"messageId":"a","messageAttributes":{ }}]}`,
	`{"Records":[{"messageId":"a","attributes":{"ApproximateReceiveCount":"\u0033","MessageGroupId":"g\u00e9","x":null}}]}`,
	`{"Records":[{"messageId":"a","attributes":{"ApproximateReceiveCount":"1","ApproximateReceiveCount":"2"}}]}`,
	`{"Records":[{"messageId":"a","attributes":{"ApproximateReceiveCount":null}}]}`,
	`{"Records":[{"messageId":"a","attributes":{"ApproximateReceiveCount":3}}]}`,
	`{"Records":[{"messageId":"a","attributes":[]}]}`,
	`{"Records":[{"messageId":"a","messageAttributes":{"k":null,"b":{"binaryValue":"aGk=","dataType":"Binary"}}}]}`,
	`{"Records":[{"messageId":"a","messageAttributes":{"b":{"binaryValue":"aGk","dataType":"Binary"}}}]}`,
	`{"Records":[{"messageId":"a","messageAttributes":{"b":{"binaryValue":"aG\nk=","dataType":"Binary"}}}]}`,
	`{"Records":[{"messageId":"a","messageAttributes":{"b":{"binaryValue":"aG\\nk=","dataType":"Binary"}}}]}`,
	`{"Records":[{"messageId":"a","messageAttributes":{"b":{"binaryValue":"","binaryListValues":["aGk=",null,""],"stringListValues":["x",null],"dataType":"Binary"}}}]}`,
	`{"Records":[{"messageId":"a","messageAttributes":{"s":{"StringValue":"v","DATATYPE":"String","other":[1,{"x":true}]}}}]}`,
	`{"Records":[{"messageId":"a","messageAttributes":{"s":{"stringValue":5}}}]}`,
	`{"Records":[{"messageId":"a","messageAttributes":{"s":{"stringListValues":[1]}}}]}`,
	`{"Records":[{"messageId":"a","messageAttributes":{"s":"x"}}]}`,
	`{"Records":[{"messageId":"a","messageAttributes":{"s":{"stringValue":null,"stringListValues":null,"binaryListValues":[]}}}]}`,
	`{"Records":[{"messageId":5}]}`, `{"Records":{}}`, `{"Records":[1]}`, `[]`, `"x"`, `{"Records":[]} x`, `{"Records":[],}`,
	`{"Records":[{"messageId":"a"}],"other":{"deep":[[[{}]]]},"n":-1.5e3}`, `{"Records":[{"messageId":"a","unknown":01}]}`,
	`{"Records":[{"messageId":"a","eventSource":"aws:sns"}]}`, `{"Records":[{"messageId":"a","eventSource":"aws:\u0073qs"}]}`,
	`{"Records":[{"messageId":"a","body":"x"}],"Records":[{"messageId":"b"}]}`,
	`{"Records":[{"messageId":"a","messageId":"b"}]}`, `{"Records":[{"messageId":"a","MessageId":"b"}]}`,
	`{"Records":[{"messageId":"a","messageAttributes":{"k":{},"k":{}}}]}`,
	// What the dead letter's trusted walk (scalarMessageAttributesInto) reads: whitespace everywhere,
	// escaped and case-folded names and members, escaped and invalid UTF-8 values, unknown members.
	"{\"Records\":[{\"messageId\":\"a\",\"messageAttributes\" : { \"n\u0061me\" : { \"data\\u0054ype\" : \"Str\\u0069ng\" , \"string\\u0056alue\" : \"v\\n\\u00e9\" } ,\n\t\"b\xffd\" :{\"STRINGVALUE\":\"x\xffy\",\"dataType\":\"String.custom\"} , \"z\" : null , \"e\":{ } ,\"u\":{\"x\":{\"y\":[1,\"}\",{}]},\"\u017ftringValue\":\"long s\",\"binaryValue\":null,\"dataType\":null} } }]}",
	`{"Records":[{"messageId":"a","messageAttributes":{"a":{"stringValue":""},"b":{"stringValue":"2","dataType":"Number"},"c":{"binaryValue":"","dataType":"Binary"},"d":{"dataType":"String"},"e":{},"f":{"stringValue":"f"},"g":{"stringValue":"g"},"h":{"stringValue":"h"},"i":{"stringValue":"i"},"dlq_x":{"stringValue":"x"}}}]}`,
	`{"Records":[{"message\u0049d":"a","meſſageId":"b"}]}`, `{"Records":[{"messageId":"a\u0000b"}]}`,
	"{\"Records\":[{\"messageId\":\"a\tb\"}]}", `{"Records":[{"messageId":"a\x"}]}`, `{"Records":[{"messageId":"a\u12"}]}`,
	`{"Records":[{"messageId":"a","body":"\ud83d\ude00\ud83d\ude00\u00e9\\u0041"}]}`,
	`{"Records":[{"eventSourceARN":"arn:q","messageId":"1"},{"eventSourceARN":"arn:q","messageId":"2"},{"messageId":"3"}]}`,
	``, ` `, `{`, `{"Records":[`, `{"Records":[{"messageId":"a"`, `nul`,
	// The attribute loops: members as SQS spells them (matched without a
	// scan), near misses of those names, members folded or escaped into a
	// duplicate, base64 values that need decoding first (escapes) or that
	// are not base64, scratch reuse from a long value to a short bad one,
	// whitespace inside lists, and attributes whose values need decoding.
	`{"Records":[{"messageId":"a","messageAttributes":{"a":{"stringValueX":"x","stringValu":"y","stringListValue":[1],"binaryListValuesX":{},"dataTyp":2,"dataType\u0000":3,"datatype":"D"}}}]}`,
	`{"Records":[{"messageId":"a","messageAttributes":{"a":{"stringValue":"a","StringValue":"b"}}}]}`,
	`{"Records":[{"messageId":"a","messageAttributes":{"a":{"stringValue":"a","string\u0056alue":"b"}}}]}`,
	`{"Records":[{"messageId":"a","messageAttributes":{"a":{"binaryListValues":[],"binaryListValues":[]}}}]}`,
	`{"Records":[{"messageId":"a","messageAttributes":{"a":{"dataType":"Binary","dataType":null}}}]}`,
	`{"Records":[{"messageId":"a","messageAttributes":{"a":{"binaryValue":"\u0061Gk=","binaryListValues":[ "aG\u006b=" , null , "\/w==" ]}}}]}`,
	`{"Records":[{"messageId":"a","messageAttributes":{"a":{"binaryValue":"aGk\u00e9"}}}]}`,
	"{\"Records\":[{\"messageId\":\"a\",\"messageAttributes\":{\"a\":{\"binaryValue\":\"aGk\xc3\xa9\"}}}]}",
	`{"Records":[{"messageId":"a","messageAttributes":{"a":{"binaryListValues":["aGk=","aGk"]}}}]}`,
	`{"Records":[{"messageId":"a","messageAttributes":{"a":{"binaryValue":"` + strings.Repeat("QUJD", 40) + `"},"b":{"binaryValue":"QU"}}}]}`,
	`{"Records":[{"messageId":"a","messageAttributes":{"a":{"binaryValue":"` + strings.Repeat("QUJD", 40) + `"}}},{"messageId":"b","messageAttributes":{"a":{"binaryValue":"QUJD"},"b":{"binaryListValues":["QQ==","QUJD=="]}}}]}`,
	`{"Records":[{"messageId":"a","messageAttributes":{"a":{"stringListValues":[ ],"binaryListValues":[ null ]} , "b" : { } }}]}`,
	`{"Records":[{"messageId":"a","messageAttributes":{"a":{"stringListValues":["x",]}}}]}`,
	`{"Records":[{"messageId":"a","messageAttributes":{"a":{"stringListValues":["x" "y"]}}}]}`,
	`{"Records":[{"messageId":"a","messageAttributes":{"a":{"stringValue":"x",}}}]}`,
	`{"Records":[{"messageId":"a","messageAttributes":{"a":{"stringValue":"x"},}}]}`,
	`{"Records":[{"messageId":"a","messageAttributes":{"a":{"stringValue" "x"}}}]}`,
	`{"Records":[{"messageId":"a","messageAttributes":{"a":{"stringValue":"x"} "b":{}}}]}`,
	`{"Records":[{"messageId":"a","messageAttributes":{"a":{"stringValue":tru}}}]}`,
	`{"Records":[{"messageId":"a","messageAttributes":{"a":{"stringValue":"x"}},"messageAttributes":{}}]}`,
	"{\"Records\":[{\"messageId\":\"a\",\"attributes\" : { \"ApproximateReceiveCount\" : \"2\" , \"SentTimestamp\":\"1\u0032\",\"AWSTraceHeader\":\"Root=\xc3\xa9\",\"ApproximateFirstReceiveTimestamp\":\"\xff\",\"MessageGroupId\":\"g\xc3\xa9\" } }]}",
	`{"Records":[{"messageId":"a","attributes":{"SentTimestamp":"1","SentTimestamp":null,"MessageGroupId":"g\"h","AWSTraceHeader":"t"},"messageAttributes":{"z":null}}]}`,
	`{"Records":[{"messageId":"a","attributes":{"a":"x",}}]}`, `{"Records":[{"messageId":"a","attributes":{"a" "x"}}]}`,
	// Duplicate names among the first 16 (compared in place or decoded)
	// and past them (a map), escaped spellings of plain ones.
	`{"Records":[{"messageId":"a","messageAttributes":{"ab":{},"a\u0062":{}}}]}`,
	`{"Records":[{"messageId":"a","messageAttributes":{"a\u0062":{},"ab":{}}}]}`,
	`{"Records":[{"messageId":"a","messageAttributes":{"ab":{},"ba":{},"é":null,"\u00e9":null}}]}`,
	`{"Records":[{"messageId":"a","messageAttributes":{` + manyNames(20, 0) + `,"n3":{}}}]}`,
	`{"Records":[{"messageId":"a","messageAttributes":{` + manyNames(20, 0) + `,"n\u0031\u0039":{}}}]}`,
	`{"Records":[{"messageId":"a","messageAttributes":{` + manyNames(16, 0) + `,"n\u0031\u0035":{}}}]}`,
	`{"Records":[{"messageId":"a","messageAttributes":{` + manyNames(20, 0) + `}},{"messageId":"b","messageAttributes":{` + manyNames(3, 0) + `,"n1":null}}]}`,
	`{"Records":[{"messageId":"a","messageAttributes":{` + manyNames(20, 0) + `}},{"messageId":"b","messageAttributes":{` + manyNames(20, 5) + `}}]}`,
}

// manyNames is n message attributes "n<from>", "n<from+1>", ... as JSON
// members, the odd ones with an escaped name.
func manyNames(n, from int) string {
	var b strings.Builder
	for k := from; k < from+n; k++ {
		if k > from {
			b.WriteByte(',')
		}
		if k%2 == 1 {
			fmt.Fprintf(&b, `"\u006e%d":{"stringValue":"v"}`, k)
		} else {
			fmt.Fprintf(&b, `"n%d":{"dataType":"String"}`, k)
		}
	}
	return b.String()
}

func TestDecodeEdgeCases(t *testing.T) {
	for _, c := range eventEdgeCases {
		diffDecode(t, []byte(c))
	}
	// Nesting as deep as encoding/json allows, and one deeper.
	for _, depth := range []int{9998, 10001} {
		doc := `{"Records":[],"x":` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}`
		diffDecode(t, []byte(doc))
	}
}

// TestDecodeDamagedAttributes damages a record with every kind of
// attribute and message attribute member at every byte (and cuts it there)
// and holds Decode to encoding/json on each: the attribute loops'
// grammar, member matching and base64 checks, byte by byte.
func TestDecodeDamagedAttributes(t *testing.T) {
	rec := `{"Records":[{"messageId":"m","attributes":{"ApproximateReceiveCount":"2","SentTimestamp":"1","MessageGroupId":"g"},` +
		`"messageAttributes":{"s":{"stringValue":"v","stringListValues":["a",null],"binaryListValues":[],"dataType":"String"},` +
		`"b":{"binaryValue":"aGk=","binaryListValues":["aGk=",null],"dataType":"Binary"},"n":null,"e":{"x":1}}}]}`
	for _, doc := range []string{rec, strings.ReplaceAll(strings.ReplaceAll(rec, ":", " : "), ",", " ,\n ")} {
		diffDecode(t, []byte(doc))
		for k := range len(doc) {
			diffDecode(t, []byte(doc[:k]))
			for _, c := range []byte{'"', '\\', ',', '}', ']', ' ', 'x', 'S', 'n', 0x00, 0xff} {
				b := []byte(doc)
				b[k] = c
				diffDecode(t, b)
			}
		}
	}
}

// TestDecodeDuplicateKey: a duplicate key is refused with a clear
// error, where encoding/json would merge the two.
func TestDecodeDuplicateKey(t *testing.T) {
	_, err := decodeCopy([]byte(`{"Records":[{"messageId":"a","body":"x","messageId":"b"}]}`))
	if !errors.Is(err, ErrRepeatedJSONKey) || !errors.Is(err, ErrNotSQSEvent) || !strings.Contains(err.Error(), `"messageId" twice`) {
		t.Fatalf("err = %v", err)
	}
}

// TestDecodeDuplicateAttributeName: a message attribute name or
// member twice, as written or once decoded, is refused, among the first
// 16 names (compared in place) and past them (a map); names that only look
// alike are not. diffDecode cannot tell: encoding/json takes either.
func TestDecodeDuplicateAttributeName(t *testing.T) {
	doc := func(attrs string) []byte {
		return []byte(`{"Records":[{"messageId":"m","messageAttributes":{` + attrs + `}}]}`)
	}
	for _, c := range []struct {
		attrs string
		dup   bool
	}{
		{`"ab":{},"a\u0062":{}`, true},
		{`"a\u0062":{},"ab":null`, true},
		{`"\u00e9":{},"é":{}`, true},
		{`"ab":{},"aB":{},"ba":{},"a":{},"abc":{}`, false},
		{manyNames(16, 0), false},
		{manyNames(16, 0) + `,"n\u0031\u0035":{}`, true},
		{manyNames(16, 0) + `,"n16":{}`, false},
		{manyNames(20, 0), false},
		{manyNames(20, 0) + `,"n3":{}`, true},
		{manyNames(20, 0) + `,"n\u0031\u0039":{}`, true},
		{manyNames(20, 0) + `,"n20":{}`, false},
		{`"a":{"stringValue":"x","StringValue":"y"}`, true},
		{`"a":{"dataType":"x","data\u0054ype":null}`, true},
		{`"a":{"dataType":"x"},"b":{"dataType":"y"}`, false},
	} {
		_, err := decodeCopy(doc(c.attrs))
		if got := errors.Is(err, ErrRepeatedJSONKey); got != c.dup || (err != nil && !c.dup) {
			t.Errorf("%s: err = %v, want a duplicate: %v", textutil.Truncate(c.attrs, 80), err, c.dup)
		}
	}
	// The names of one record do not carry over to the next.
	if _, err := decodeCopy([]byte(`{"Records":[{"messageAttributes":{"a\u0062":{},` + manyNames(20, 0) +
		`}},{"messageAttributes":{"ab":{},"n3":{}}}]}`)); err != nil {
		t.Errorf("names of two records: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob("../../../../events/testdata/*.json")
	for _, file := range files {
		if data, err := os.ReadFile(file); err == nil && len(data) < 64<<10 {
			f.Add(data)
		}
	}
	for _, c := range eventEdgeCases {
		f.Add([]byte(c))
	}
	// Invalid ones, whose error position diffDecode holds to encoding/json's.
	for _, c := range []string{`{"x": [1,}`, `{"Records": [{"messageId": "m`, `{"Records": [{"body": "a\q"}]}`,
		"{\"Records\": [{\"body\": \"{\\\"a\\\":1}\"}, {\"body\": \"a\nb\"}]}", `{"Records": [{"attributes": {"x": tru}}]}`} {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		diffDecode(t, payload)
	})
}

// TestDecodeErrorPosition holds Decode's error to the byte that
// makes the payload invalid JSON: the index encoding/json finds (the
// offending byte, or the payload's length when it ends first), on both
// entries (Decode on a copy, and Invoke's decoding in place, where
// bodies before the error were already overwritten).
func TestDecodeErrorPosition(t *testing.T) {
	rec := func(s string) string { return `{"Records": [{"messageId": "m1", "body": "{\"a\":1}"}, ` + s + `]}` }
	tests := []struct {
		name, payload string
		at            int // -1: len(payload)
		why           string
	}{
		{"array missing a value", `{"x": [1,}`, 9, "invalid character '}' looking for beginning of value"},
		{"unterminated payload", `{"Records": [{"messageId": "m`, -1, "unexpected end of JSON input"},
		{"bad literal at the top", `nul`, -1, "unexpected end of JSON input"},
		{"bad literal in a record", rec(`{"messageId": nulx}`), strings.Index(rec(`{"messageId": nulx}`), "x}"), "invalid character 'x' in literal null"},
		{"bad escape in a body", rec(`{"body": "a\q"}`), strings.Index(rec(`{"body": "a\q"}`), `q"}`), "invalid character 'q' in string escape code"},
		{"bad \\u in a body", rec(`{"body": "{\"a\u00x1"}`), strings.Index(rec(`{"body": "{\"a\u00x1"}`), `x1"}`), "invalid character 'x' in \\u hexadecimal character escape"},
		{"control character in a body", rec("{\"body\": \"a\nb\"}"), strings.Index(rec("{\"body\": \"a\nb\"}"), "\nb"), `invalid character '\n' in string literal`},
		{"body ends the payload", `{"Records": [{"body": "{\"a\":`, -1, "unexpected end of JSON input"},
		{"bad escape in an id", rec(`{"messageId": "a\x"}`), strings.Index(rec(`{"messageId": "a\x"}`), `x"}`), "invalid character 'x' in string escape code"},
		{"bad \\u in a key", rec(`{"mess\u00zgeId": "a"}`), strings.Index(rec(`{"mess\u00zgeId": "a"}`), `zg`), "invalid character 'z' in \\u hexadecimal character escape"},
		{"bad value in an unknown member", `{"Records": [], "other": [1, 2 3]}`, strings.Index(`{"Records": [], "other": [1, 2 3]}`, "3]"), "invalid character '3' after array element"},
		{"bad attribute value", rec(`{"attributes": {"SentTimestamp": "1", "x": tru}}`), strings.Index(rec(`{"attributes": {"SentTimestamp": "1", "x": tru}}`), "}}]"), "invalid character '}' in literal true"},
		{"bad message attribute", rec(`{"messageAttributes": {"a": {"dataType": "String", "stringValue": "x", "y": [}}}`), strings.Index(rec(`{"messageAttributes": {"a": {"dataType": "String", "stringValue": "x", "y": [}}}`), "}}}]"), "invalid character '}' looking for beginning of value"},
		{"missing comma between records", `{"Records": [{} {}]}`, 16, "want ',' or ']'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.at
			if want < 0 {
				want = len(tt.payload)
			}
			// encoding/json agrees that the payload is invalid.
			if json.Valid([]byte(tt.payload)) {
				t.Fatalf("payload %q is valid JSON", tt.payload)
			}
			for _, entry := range []struct {
				name   string
				decode func([]byte) (*Event, error)
			}{{"on a copy", decodeCopy}, {"in place", Decode}} {
				_, err := entry.decode([]byte(tt.payload))
				if !errors.Is(err, ErrNotSQSEvent) {
					t.Fatalf("%s: err = %v, want ErrNotSQSEvent", entry.name, err)
				}
				if at := fmt.Sprintf(" at byte %d", want); !strings.Contains(err.Error(), at) || !strings.Contains(err.Error(), tt.why) {
					t.Errorf("%s: err = %q, want %q and %q (byte %d is %q)", entry.name, err, at, tt.why, want, tt.payload[min(want, len(tt.payload)-1):])
				}
			}
		})
	}
}
