package worker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
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
)

// faultTail is searched without its opening quote: bytes.Index is fast on a
// rare first byte and slow on '"', the commonest byte of JSON.
var faultTail = []byte(`fault"`)

// faultValue returns the bytes from the value of the top-level "fault" key
// of args to the end of args, and whether such a key was found. It is a
// fast path: a nested "fault" key, or a brace inside a string before it,
// makes it answer false, and the caller then decodes the whole args.
func faultValue(args []byte) ([]byte, bool) {
	for off := 0; ; {
		i := bytes.Index(args[off:], faultTail)
		if i < 0 {
			return nil, false
		}
		i += off
		off = i + len(faultTail)
		if i == 0 || args[i-1] != '"' {
			continue
		}
		if bytes.Count(args[:i], openBrace)-bytes.Count(args[:i], closeBrace) != 1 {
			return nil, false // not obviously top-level: take the slow path
		}
		rest := bytes.TrimLeft(args[off:], " \t\r\n")
		if len(rest) == 0 || rest[0] != ':' {
			continue // "fault" was a value, not a key
		}
		return rest[1:], true
	}
}

var openBrace, closeBrace = []byte("{"), []byte("}")

// mentionsFault reports whether args contain the string "fault" (quoted),
// the only way a "fault" key can appear.
func mentionsFault(args []byte) bool {
	for s := args; ; {
		i := bytes.Index(s, faultTail)
		if i < 0 {
			return false
		}
		if i > 0 && s[i-1] == '"' {
			return true
		}
		s = s[i+len(faultTail):]
	}
}

// topLevelFault walks the top-level keys of the JSON object args. value is
// what follows the colon of its one "fault" key (nil when there is none);
// odd is true when a key could still be "fault" to encoding/json, which
// matches keys without regard to case and with escapes resolved (or when
// "fault" appears twice). It jumps over strings with bytes.IndexByte and
// over nested values by counting brackets outside strings. It runs only
// when mentionsFault found "fault": on the 1 KB tasks of the large-batch
// fixture the walk cost ~3x the substring search (a call per string). ok
// is false when args is not an object it can walk (DecodeTask has
// validated the args the worker passes).
func topLevelFault(args []byte) (value []byte, odd, ok bool) {
	if len(args) == 0 || args[0] != '{' {
		return nil, false, false
	}
	depth, keyNext := 1, true
	for i := 1; i < len(args); i++ {
		switch c := args[i]; c {
		case '"':
			end := stringEnd(args, i)
			if end < 0 {
				return nil, false, false
			}
			if depth == 1 && keyNext {
				key := args[i+1 : end]
				switch {
				case string(key) == "fault" && value == nil:
					rest := bytes.TrimLeft(args[end+1:], " \t\r\n")
					if len(rest) == 0 || rest[0] != ':' {
						return nil, false, false
					}
					value = rest[1:]
				case len(key) == 5 && bytes.EqualFold(key, faultTail[:5]) || bytes.IndexByte(key, '\\') >= 0:
					odd = true
				}
				keyNext = false
			}
			i = end
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				return value, odd, i == len(args)-1
			}
		case ',':
			keyNext = depth == 1
		}
	}
	return nil, false, false
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

// ParseFault returns args.fault, or nil when args has none. The args are
// searched for "fault" first, so the hot path pays one byte search; then a
// walk over the top-level keys finds the one "fault" key, whose value alone
// is decoded. Args that cannot be walked, or with a key that only
// encoding/json would read as "fault", take the older path (faultValue,
// else the whole args decoded).
func ParseFault(args []byte) (*Fault, error) {
	if !mentionsFault(args) {
		return nil, nil
	}
	v, odd, ok := topLevelFault(args)
	switch {
	case ok && !odd && v == nil:
		return nil, nil
	case ok && !odd:
	default:
		v, ok = faultValue(args)
	}
	if ok {
		if end := objectEnd(v); end > 0 {
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
	var holder struct {
		Fault *Fault `json:"fault"`
	}
	if err := json.Unmarshal(args, &holder); err != nil {
		return nil, fmt.Errorf("args.fault: %w", err)
	}
	if holder.Fault != nil {
		holder.Fault.normalize()
	}
	return holder.Fault, nil
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
