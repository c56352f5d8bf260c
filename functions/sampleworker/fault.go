package sampleworker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Fault is args.fault: a failure the sample tools inject on request.
type Fault struct {
	Retryable    bool   `json:"retryable"`
	Status       int    `json:"status"`
	Error        string `json:"error"`
	UntilReceive int    `json:"until_receive"`
	Kind         string `json:"kind"`
	// Type is read as Kind when Kind is empty (another producer's spelling).
	Type       string `json:"type"`
	Code       string `json:"code"`
	Dependency string `json:"dependency"`
	// RetryAfterSeconds is the provider's Retry-After of a rate_limited
	// fault (or of a retryable 429): the tool's error carries it
	// (batch.Transient(err).After).
	RetryAfterSeconds int `json:"retry_after_seconds"`
}

// The fault kinds.
const (
	FaultTimeoutAfterEffect = "timeout_after_effect"
	FaultAuth               = "auth"
	FaultDependencyOpen     = "dependency_open"
	FaultPolicyLimit        = "policy_limit"
	FaultSignatureInvalid   = "signature_invalid"
	FaultGuardrailReject    = "guardrail_reject"
	FaultPanic              = "panic"
	FaultError              = "error"
	// FaultRateLimited is a provider's 429 with a Retry-After of
	// retry_after_seconds (default 1): transient, retried after that delay
	// (not counted against the budget where the pipeline's
	// retry_after_requeues allows it); with until_receive N the provider
	// lets the call through from receive N.
	FaultRateLimited = "rate_limited"
)

// FaultLostReply is the kind of a fault where the call took effect and its
// reply was lost: a timeout after the effect, effect_unknown for a mutating
// tool, whose Effects store then holds the effect (timeout_after_effect's
// holds only the call).
const FaultLostReply = "lost_reply"

// faultTail is searched without its opening quote: bytes.Index is fast on a
// rare first byte and slow on '"', the commonest byte of JSON.
var faultTail = []byte(`fault"`)

// escapedLatin starts the escape of every ASCII letter ("\u0061" is "a"): a
// key that spells "fault" with an escape holds it.
var escapedLatin = []byte(`\u00`)

// mentionsFault reports whether args may hold a "fault" key: they contain
// the string "fault" (quoted), or the escape of one of its letters, with
// which a key such as "f\u0061ult" reads as "fault". False means there is
// none.
func mentionsFault(args []byte) bool {
	for s := args; ; {
		i := bytes.Index(s, faultTail)
		if i < 0 {
			break
		}
		if i > 0 && s[i-1] == '"' {
			return true
		}
		s = s[i+len(faultTail):]
	}
	for s := args; ; {
		i := bytes.Index(s, escapedLatin)
		if i < 0 || i+6 > len(s) {
			return false
		}
		switch string(s[i+4 : i+6]) {
		case "66", "61", "75", "6c", "6C", "74": // f a u l t
			return true
		}
		s = s[i+4:]
	}
}

// topLevelFault walks the top-level keys of the JSON object args and
// returns what follows the colon of its last "fault" key (nil when there is
// none). Keys are read as JSON reads them, and as DecodeTask reads the
// task's: escapes resolved, matched exactly (not folded by case), the last
// of duplicates winning. It jumps over strings with bytes.IndexByte and over
// nested values by counting brackets outside strings. It runs only when
// mentionsFault found "fault" or an escape: on the 1 KB tasks of the
// large-batch fixture the walk cost ~3x the substring search (a call per
// string). ok is false when args is not an object it can walk.
func topLevelFault(args []byte) (value []byte, ok bool) {
	if len(args) == 0 || args[0] != '{' {
		return nil, false
	}
	depth, keyNext := 1, true
	for i := 1; i < len(args); i++ {
		switch c := args[i]; c {
		case '"':
			end := stringEnd(args, i)
			if end < 0 {
				return nil, false
			}
			if depth == 1 && keyNext {
				if isFaultKey(args[i : end+1]) {
					rest := bytes.TrimLeft(args[end+1:], " \t\r\n")
					if len(rest) == 0 || rest[0] != ':' {
						return nil, false
					}
					value = rest[1:]
				}
				keyNext = false
			}
			i = end
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				return value, i == len(args)-1
			}
		case ',':
			keyNext = depth == 1
		}
	}
	return nil, false
}

// isFaultKey reports whether the quoted key reads as "fault": as it stands,
// or with escapes (at most six bytes a letter).
func isFaultKey(quoted []byte) bool {
	key := quoted[1 : len(quoted)-1]
	if string(key) == "fault" {
		return true
	}
	if len(key) <= len("fault") || len(key) > 6*len("fault") || bytes.IndexByte(key, '\\') < 0 {
		return false
	}
	var k string
	return json.Unmarshal(quoted, &k) == nil && k == "fault"
}

// objectEnd returns the length of the JSON object at the start of v (after
// white space) up to its closing brace, or 0 when v does not start with an
// object that closes.
func objectEnd(v []byte) int {
	i := len(v) - len(bytes.TrimLeft(v, " \t\r\n"))
	if i == len(v) || v[i] != '{' {
		return 0
	}
	depth := 0
	for ; i < len(v); i++ {
		switch v[i] {
		case '"':
			if i = stringEnd(v, i); i < 0 {
				return 0
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				return i + 1
			}
		}
	}
	return 0
}

// stringEnd returns the index of the quote that closes the string opened
// at s[i] (one not escaped by an odd run of backslashes), or -1.
func stringEnd(s []byte, i int) int {
	for j := i + 1; ; {
		k := bytes.IndexByte(s[j:], '"')
		if k < 0 {
			return -1
		}
		k += j
		n := 0
		for n < k-i-1 && s[k-1-n] == '\\' {
			n++
		}
		if n%2 == 0 {
			return k
		}
		j = k + 1
	}
}

// ParseFault returns args.fault, or nil when args has none (or it is
// null). The args are searched for "fault" first, so the hot path pays one
// byte search; then a walk over the top-level keys finds the last key that
// reads as "fault" (escapes resolved, matched exactly, as DecodeTask reads
// the task's keys and as any JSON reader would: "Fault" is not args.fault),
// whose value alone is decoded. Args that cannot be walked are decoded
// whole by encoding/json, with the same reading of keys. The worker reads
// the fault of each task so, from its Args.
func ParseFault(args []byte) (*Fault, error) {
	if !mentionsFault(args) {
		return nil, nil
	}
	v, ok := topLevelFault(args)
	if !ok {
		return faultStd(args)
	}
	if v == nil {
		return nil, nil
	}
	if end := objectEnd(v); end > 0 {
		// A flat object of plain keys and values, as producers write a
		// fault, is read directly (~0.3 µs); anything else goes to
		// encoding/json, which the flat reader agrees with (tested).
		if f, ok := parseFlatFault(v[:end]); ok {
			f.normalize()
			return f, nil
		}
		// The object alone, with json.Unmarshal: with a json.Decoder
		// (its struct, its buffer, the copy of the rest of args) a
		// ParseFault of a fault cost ~5.0 µs and 1.1 KB, with this ~3.9
		// µs and 360 B. On an error the Decoder below says what it said.
		var f *Fault
		if json.Unmarshal(v[:end], &f) == nil {
			if f != nil {
				f.normalize()
			}
			return f, nil
		}
	}
	var f *Fault
	if err := json.NewDecoder(bytes.NewReader(v)).Decode(&f); err != nil {
		return nil, fmt.Errorf("args.fault: %w", err)
	}
	if f != nil {
		f.normalize()
	}
	return f, nil
}

// faultStd is ParseFault by encoding/json alone: the member of args named
// exactly "fault" (the last one of duplicates, as a map keeps it), decoded.
// It is ParseFault's reference in the tests.
func faultStd(args []byte) (*Fault, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(args, &members); err != nil {
		return nil, fmt.Errorf("args.fault: %w", err)
	}
	raw, ok := members["fault"]
	if !ok {
		return nil, nil
	}
	var f *Fault
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("args.fault: %w", err)
	}
	if f != nil {
		f.normalize()
	}
	return f, nil
}

// statusError is an upstream HTTP failure.
type statusError struct {
	status int
	msg    string
}

func (e *statusError) Error() string {
	if e.msg != "" {
		return e.msg
	}
	return "upstream returned " + strconv.Itoa(e.status)
}

var errNoFaultKind = errors.New("fault has neither retryable:true nor a known kind")

// kindAliases maps the spellings other producers use for a fault onto the
// kinds above, so that events generated elsewhere drive the same paths.
var kindAliases = map[string]string{
	"timeout": FaultTimeoutAfterEffect, "timeout_after_call": FaultTimeoutAfterEffect,
	"effect_unknown": FaultTimeoutAfterEffect, "timeout_after_side_effect": FaultTimeoutAfterEffect,
	"authorization": FaultAuth, "auth_config": FaultAuth, "access_denied": FaultAuth,
	"unauthorized": FaultAuth, "forbidden": FaultAuth, "expired_token": FaultAuth,
	"circuit_open": FaultDependencyOpen, "dependency": FaultDependencyOpen,
	"policy": FaultPolicyLimit, "limit": FaultPolicyLimit,
	"signature": FaultSignatureInvalid, "bad_signature": FaultSignatureInvalid,
	"guardrail": FaultGuardrailReject, "unclassified": FaultError,
	"rate_limit": FaultRateLimited, "throttled": FaultRateLimited, "too_many_requests": FaultRateLimited,
}

// normalize settles a fault's kind: "type" stands for "kind"; the aliases
// above map onto the kinds; a fault with no kind that is not retryable and
// carries HTTP status 401 or 403 is an authorization failure.
func (f *Fault) normalize() {
	if f.Kind == "" {
		f.Kind = f.Type
	}
	k := strings.ToLower(strings.TrimSpace(f.Kind))
	if alias, ok := kindAliases[k]; ok {
		k = alias
	}
	f.Kind = k
	if f.Kind == "" && !f.Retryable && (f.Status == 401 || f.Status == 403) {
		f.Kind = FaultAuth
		if f.Code == "" && f.Status == 403 {
			f.Code = "AccessDenied"
		}
		if f.Code == "" {
			f.Code = "UnrecognizedClientException"
		}
	}
}

// parseFlatFault reads a fault object whose keys are exactly Fault's JSON
// names (or other plain keys, ignored) and whose values are strings without
// escapes, integers, true, false or null. ok is false on anything else (an
// escape, a nested value, a key encoding/json would fold onto a field by
// case, a number that is not an int, a value of the wrong type), and the
// caller then uses encoding/json, whose reading this one matches.
func parseFlatFault(obj []byte) (*Fault, bool) {
	obj = bytes.TrimSpace(obj)
	if len(obj) == 0 || obj[0] != '{' {
		return nil, false
	}
	f := &Fault{}
	i := skipSpace(obj, 1)
	if i < len(obj) && obj[i] == '}' {
		return f, i == len(obj)-1
	}
	for i < len(obj) {
		key, next, ok := plainString(obj, i)
		if !ok {
			return nil, false
		}
		i = skipSpace(obj, next)
		if i >= len(obj) || obj[i] != ':' {
			return nil, false
		}
		i = skipSpace(obj, i+1)
		if i >= len(obj) {
			return nil, false
		}
		var (
			str      []byte
			num      int
			kind     byte // 's' string, 'n' integer, 'b' bool, '0' null
			bool_, k = false, i
		)
		switch c := obj[i]; {
		case c == '"':
			if str, i, ok = plainString(obj, i); !ok {
				return nil, false
			}
			kind = 's'
		case c == '-' || '0' <= c && c <= '9':
			for i++; i < len(obj) && '0' <= obj[i] && obj[i] <= '9'; i++ {
			}
			n, err := strconv.Atoi(string(obj[k:i]))
			if err != nil || (obj[k] == '0' && i-k > 1) || (obj[k] == '-' && (i-k == 1 || obj[k+1] == '0' && i-k > 2)) {
				return nil, false
			}
			num, kind = n, 'n'
		case bytes.HasPrefix(obj[i:], []byte("true")):
			bool_, kind, i = true, 'b', i+4
		case bytes.HasPrefix(obj[i:], []byte("false")):
			kind, i = 'b', i+5
		case bytes.HasPrefix(obj[i:], []byte("null")):
			kind, i = '0', i+4
		default:
			return nil, false
		}
		if !f.set(key, kind, str, num, bool_) {
			return nil, false
		}
		i = skipSpace(obj, i)
		if i >= len(obj) {
			return nil, false
		}
		switch obj[i] {
		case ',':
			i = skipSpace(obj, i+1)
		case '}':
			return f, i == len(obj)-1
		default:
			return nil, false
		}
	}
	return nil, false
}

// set stores one member of a flat fault object; false when encoding/json
// would read it otherwise (a type it rejects, a key it folds by case).
func (f *Fault) set(key []byte, kind byte, str []byte, num int, b bool) bool {
	if kind == '0' {
		return true // null leaves a field as it is, as encoding/json does
	}
	var (
		s *string
		n *int
	)
	switch string(key) {
	case "retryable":
		if kind != 'b' {
			return false
		}
		f.Retryable = b
		return true
	case "status":
		n = &f.Status
	case "until_receive":
		n = &f.UntilReceive
	case "error":
		s = &f.Error
	case "kind":
		s = &f.Kind
	case "type":
		s = &f.Type
	case "code":
		s = &f.Code
	case "dependency":
		s = &f.Dependency
	case "retry_after_seconds":
		n = &f.RetryAfterSeconds
	default:
		for _, name := range faultFields {
			if bytes.EqualFold(key, []byte(name)) {
				return false
			}
		}
		return true // a member Fault does not have
	}
	switch {
	case s != nil && kind == 's':
		*s = string(str)
	case n != nil && kind == 'n':
		*n = num
	default:
		return false
	}
	return true
}

var faultFields = []string{"retryable", "status", "error", "until_receive", "kind", "type", "code", "dependency", "retry_after_seconds"}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// plainString returns the contents of the string at b[i] when it holds no
// escape, no control character and only ASCII or valid UTF-8, and the index
// after its closing quote.
func plainString(b []byte, i int) ([]byte, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			s := b[i+1 : j]
			return s, j + 1, utf8.Valid(s)
		case c == '\\' || c < 0x20:
			return nil, 0, false
		}
	}
	return nil, 0, false
}
