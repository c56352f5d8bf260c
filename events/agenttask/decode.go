package agenttask

import (
	"bytes"
	"unicode/utf8"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/internal/jsonscan"
)

// requiredStrings are the non-empty string fields of agent task v1, in schema
// order, with the maxLength the schema gives each (in characters).
var requiredStrings = [...]struct {
	name   string
	max    int
	detail string // the "too long" detail
	// ident: an identifier, which refuses control characters
	// (identControl).
	ident bool
}{
	{"task_id", 256, "must be at most 256 characters", true},
	{"run_id", 256, "must be at most 256 characters", true},
	{"tenant", 256, "must be at most 256 characters", true},
	{"idempotency_key", 256, "must be at most 256 characters", true},
	{"tool", 128, "must be at most 128 characters", true},
	{"tool_version", 64, "must be at most 64 characters", true},
	{"trace_id", 256, "must be at most 256 characters", false},
	{"created_at", 64, "must be at most 64 characters", false},
}

// The details of the rules, shared by both decoders so that they name every
// failure the same way.
const (
	detailNotObject = "the body is not a JSON object"
	detailMissing   = "required field is missing"
	detailString    = "must be a string"
	detailEmpty     = "must not be empty"
	detailInteger   = "must be an integer"
	detailVersion   = "must be 1"
	detailArgs      = "must be an object"
	detailToolUnk   = "not in the catalog"
	detailControl   = "must not contain control characters"
)

// identControl reports whether an identifier holds a character no
// identifier needs and every terminal, page or script that shows it would
// act on: a C0 control (a line break makes one key read as two; ESC starts
// a terminal escape sequence), DEL, a C1 control (U+0080–U+009F), or a
// bidi control that reorders what follows it (U+061C, U+200E, U+200F,
// U+202A–U+202E, U+2066–U+2069). The schema's pattern says the same. It is
// a byte scan of the decoded string: bytes below 0x80 other than these are
// skipped at once, and only the lead bytes of those runes (0xC2, 0xD8,
// 0xE2) look further.
func identControl(s []byte) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x80 {
			if c < 0x20 || c == 0x7f {
				return true
			}
			continue
		}
		if i+1 >= len(s) {
			continue
		}
		switch c {
		case 0xc2: // U+0080–U+009F: C2 80–C2 9F
			if s[i+1] >= 0x80 && s[i+1] <= 0x9f {
				return true
			}
		case 0xd8: // U+061C: D8 9C
			if s[i+1] == 0x9c {
				return true
			}
		case 0xe2: // U+200E, U+200F, U+202A–U+202E: E2 80 …; U+2066–U+2069: E2 81 A6–A9
			if i+2 < len(s) {
				switch d := s[i+2]; s[i+1] {
				case 0x80:
					if d == 0x8e || d == 0x8f || (d >= 0xaa && d <= 0xae) {
						return true
					}
				case 0x81:
					if d >= 0xa6 && d <= 0xa9 {
						return true
					}
				}
			}
		}
	}
	return false
}

func checkCatalog(t Task, catalog Catalog) error {
	_, err := CheckTool(&t, catalog)
	return err
}

// CheckTool returns the catalog's entry for t's tool, or the
// *ValidationError DecodeTask gives when the tool is unknown (tool_unknown)
// or does not support the task's version (tool_version_unsupported). With a
// nil catalog it returns the zero Tool and nil. DecodeTask(body, nil) then
// CheckTool is DecodeTask(body, catalog), for a caller that needs the tool:
// one map lookup instead of two.
func CheckTool(t *Task, catalog Catalog) (Tool, error) {
	if catalog == nil {
		return Tool{}, nil
	}
	tool, ok := catalog[t.Tool]
	if !ok {
		return Tool{}, invalid(deadletter.ReasonToolUnknown, "tool", detailToolUnk)
	}
	if refusal := rangeOf(tool.Versions).check(t.ToolVersion); refusal != nil {
		e := *refusal // the cached refusal is shared; the caller gets its own
		return Tool{}, &e
	}
	return tool, nil
}

// The top-level members DecodeTask extracts: the eight strings in the order
// of requiredStrings, then schema_version and args.
const (
	memberSchemaVersion = len(requiredStrings)
	memberArgs          = memberSchemaVersion + 1
	numMembers          = memberArgs + 1
)

// member is where the last occurrence of a member's value stands in the body.
type member struct {
	start, end int   // the value's bytes, quotes included for a string
	kind       byte  // the value's first byte; 0 when the member is absent
	flags      uint8 // jsonscan.StrEscape, jsonscan.StrHigh for a string
}

// memberIndex is the member of agent task v1 named key, or -1. The switch
// on the length first settles most keys with one comparison of strings.
func memberIndex(key string) int {
	switch len(key) {
	case 4:
		switch key {
		case "tool":
			return 4
		case "args":
			return memberArgs
		}
	case 6:
		switch key {
		case "run_id":
			return 1
		case "tenant":
			return 2
		}
	case 7:
		if key == "task_id" {
			return 0
		}
	case 8:
		if key == "trace_id" {
			return 6
		}
	case 10:
		if key == "created_at" {
			return 7
		}
	case 12:
		if key == "tool_version" {
			return 5
		}
	case 14:
		if key == "schema_version" {
			return memberSchemaVersion
		}
	case 15:
		if key == "idempotency_key" {
			return 3
		}
	}
	return -1
}

// scanTask validates body as a JSON object and records its members. It
// returns false when the body is not valid JSON or not an object.
func scanTask(b []byte, ms *[numMembers]member) bool {
	i := jsonscan.SkipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = jsonscan.SkipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return jsonscan.SkipWS(b, i+1) == len(b)
	}
	var keyBuf [32]byte
	for {
		if i >= len(b) || b[i] != '"' {
			return false
		}
		ks := i
		ke, kflags := jsonscan.ScanString(b, i)
		if ke < 0 {
			return false
		}
		i = jsonscan.SkipWS(b, ke)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		vs := jsonscan.SkipWS(b, i+1)
		if vs >= len(b) {
			return false
		}
		var ve int
		var vflags uint8
		switch b[vs] {
		case '"':
			ve, vflags = jsonscan.ScanString(b, vs)
		case '{':
			ve = jsonscan.SkipObject(b, vs, 2)
		case '[':
			ve = jsonscan.SkipArray(b, vs, 2)
		default:
			ve = jsonscan.SkipValue(b, vs, 1)
		}
		if ve < 0 {
			return false
		}
		idx := -1
		switch {
		case kflags == 0:
			idx = memberIndex(string(b[ks+1 : ke-1]))
		case kflags&jsonscan.StrEscape != 0 && ke-ks <= 6*len(keyBuf):
			// Rare: an escaped key. No member name has a byte >= 0x80, so
			// a key with such a byte and no escape matches none.
			idx = memberIndex(string(jsonscan.AppendUnquoted(keyBuf[:0], b[ks+1:ke-1])))
		}
		if idx >= 0 {
			ms[idx] = member{start: vs, end: ve, kind: b[vs], flags: vflags}
		}
		i = jsonscan.SkipWS(b, ve)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = jsonscan.SkipWS(b, i+1)
		case '}':
			return jsonscan.SkipWS(b, i+1) == len(b)
		default:
			return false
		}
	}
}

// DecodeTask decodes and validates an agent task v1 body in a single pass. A
// failure is a *ValidationError naming the poison reason and the field, the
// same as the encoding/json reference decoder's in the tests on every input.
//
// The rules, checked in this order (the first that fails is reported):
// the body is a JSON object (json_invalid); then each of task_id, run_id,
// tenant, idempotency_key, tool, tool_version, trace_id, created_at is
// present, a string, not empty and within its maxLength; schema_version is
// present, a number whose value is an integer (1, 1.0 and 1e0 alike, as in
// JSON Schema), and 1; args is present and an object (schema_invalid with
// the field); then, with a catalog, the tool is known (tool_unknown) and
// supports the version (tool_version_unsupported). Duplicate keys: the last
// one wins, as in encoding/json. With a nil
// catalog, tools are not checked. Args is a sub-slice of body: do not modify
// body while the task is in use.
//
// It allocates once on success (the eight strings share one backing string)
// and validates the whole body, args included, as encoding/json would.
func DecodeTask(body []byte, catalog Catalog) (Task, error) {
	var ms [numMembers]member
	if !scanTask(body, &ms) {
		return Task{}, invalid(deadletter.ReasonJSONInvalid, "", detailNotObject)
	}
	s, ends, err := decodeStrings(body, &ms)
	if err != nil {
		return Task{}, err
	}
	sv := ms[memberSchemaVersion]
	switch sv.kind {
	case 0:
		return Task{}, invalid(deadletter.ReasonSchemaInvalid, "schema_version", detailMissing)
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		if integer, one := numberIsOne(body[sv.start:sv.end]); !integer {
			return Task{}, invalid(deadletter.ReasonSchemaInvalid, "schema_version", detailInteger)
		} else if !one {
			return Task{}, invalid(deadletter.ReasonSchemaInvalid, "schema_version", detailVersion)
		}
	default:
		return Task{}, invalid(deadletter.ReasonSchemaInvalid, "schema_version", detailInteger)
	}
	args := ms[memberArgs]
	switch args.kind {
	case 0:
		return Task{}, invalid(deadletter.ReasonSchemaInvalid, "args", detailMissing)
	case '{':
	default:
		return Task{}, invalid(deadletter.ReasonSchemaInvalid, "args", detailArgs)
	}
	t := Task{
		TaskID:         s[:ends[0]],
		RunID:          s[ends[0]:ends[1]],
		Tenant:         s[ends[1]:ends[2]],
		IdempotencyKey: s[ends[2]:ends[3]],
		Tool:           s[ends[3]:ends[4]],
		ToolVersion:    s[ends[4]:ends[5]],
		TraceID:        s[ends[5]:ends[6]],
		CreatedAt:      s[ends[6]:ends[7]],
	}
	t.SchemaVersion = SchemaVersion
	t.Args = body[args.start:args.end:args.end]
	if err := checkCatalog(t, catalog); err != nil {
		return Task{}, err
	}
	return t, nil
}

// identHasControl is identControl for a string the scanner flagged: one
// without escapes or high bytes can only hold DEL (JSON refuses a raw
// control in a string), which one IndexByte finds.
func identHasControl(s []byte, flags uint8) bool {
	if flags == 0 {
		return bytes.IndexByte(s, 0x7f) >= 0
	}
	return identControl(s)
}

// decodeStrings applies the string rules to the eight members of ms and
// decodes them into one string: ends[k] is where string k stops in it.
func decodeStrings(body []byte, ms *[numMembers]member) (string, [len(requiredStrings)]int, error) {
	var ends [len(requiredStrings)]int
	var arr [512]byte
	buf := arr[:0]
	for k, f := range requiredStrings {
		m := ms[k]
		switch {
		case m.kind == 0:
			return "", ends, invalid(deadletter.ReasonSchemaInvalid, f.name, detailMissing)
		case m.kind != '"':
			return "", ends, invalid(deadletter.ReasonSchemaInvalid, f.name, detailString)
		}
		start := len(buf)
		if m.flags == 0 {
			buf = append(buf, body[m.start+1:m.end-1]...)
		} else {
			buf = jsonscan.AppendUnquoted(buf, body[m.start+1:m.end-1])
		}
		// n is the length in bytes, which bounds the length in characters:
		// the characters are counted only when the bytes exceed the
		// maxLength (a 121-character "üü…" tenant is 242 bytes, within
		// 256), and a string is empty in both or in neither.
		n := len(buf) - start
		if m.flags != 0 && n > f.max {
			n = utf8.RuneCount(buf[start:])
		}
		switch {
		case n == 0:
			return "", ends, invalid(deadletter.ReasonSchemaInvalid, f.name, detailEmpty)
		case n > f.max:
			return "", ends, invalid(deadletter.ReasonSchemaInvalid, f.name, f.detail)
		case f.ident && identHasControl(buf[start:], m.flags):
			return "", ends, invalid(deadletter.ReasonSchemaInvalid, f.name, detailControl)
		}
		ends[k] = len(buf)
	}
	return string(buf), ends, nil
}
