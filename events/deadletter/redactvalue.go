package deadletter

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Redacted is what replaces a value under a secret key.
const Redacted = "[REDACTED]"

// RedactValue redacts a decoded JSON value (maps, slices, strings, numbers,
// booleans, as encoding/json decodes them, json.Number included) in place
// and returns it: every leaf under a key IsSecretKey holds, at any depth
// (the whole of "credentials": {...} or "passwords": [...]), is replaced by
// Redacted, except a hashed value ("sha256:" and hex, as triage's hash
// fields write it); every other string and number goes through Redact (a
// password=... inside an error string, a PEM block, a card number sent as a
// number); object keys that Redact changes are replaced too. The eval
// export, the console's body view and any other view of a task's body
// redact with it.
func RedactValue(v any) any { return redactValue(v, false) }

func redactValue(v any, secret bool) any {
	switch x := v.(type) {
	case map[string]any:
		type pair struct {
			k string
			v any
		}
		var renamed []pair
		for k, e := range x {
			under := secret || IsSecretKey(k)
			if r := Redact(k, 0); r != k {
				renamed = append(renamed, pair{r, redactValue(e, under)})
				delete(x, k)
				continue
			}
			x[k] = redactValue(e, under)
		}
		for _, p := range renamed {
			name := p.k
			for n := 2; ; n++ {
				if _, taken := x[name]; !taken {
					break
				}
				name = p.k + "#" + strconv.Itoa(n)
			}
			x[name] = p.v
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = redactValue(e, secret)
		}
		return x
	case string:
		if secret {
			if isHashed(x) {
				return x
			}
			return Redacted
		}
		return Redact(x, 0)
	case json.Number:
		if secret {
			return Redacted
		}
		if r := Redact(string(x), 0); r != string(x) {
			return r
		}
		return x
	case float64:
		if secret {
			return Redacted
		}
		s := strconv.FormatFloat(x, 'f', -1, 64)
		if r := Redact(s, 0); r != s {
			return r
		}
		return x
	case nil:
		return nil
	default: // bool, and any other leaf
		if secret {
			return Redacted
		}
		return x
	}
}

// isHashed reports whether s is a hashed value: "sha256:" and hex digits.
func isHashed(s string) bool {
	h, ok := strings.CutPrefix(s, "sha256:")
	if !ok || h == "" {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// RedactJSON is RedactValue on a JSON text: the text decoded (numbers kept
// as they are written), redacted and encoded again, compact; a text that is
// not one JSON value goes through Redact whole.
func RedactJSON(text string) string {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return Redact(text, 0)
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(RedactValue(v)); err != nil {
		return Redact(text, 0)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// RedactAttribute is how a message attribute's string value may be shown
// or exported: Redacted when its name IsSecretKey holds (an attribute named
// password, X-Api-Key or sessionToken), else the value through Redact, cut
// to maxRunes (<= 0: no limit).
func RedactAttribute(name, value string, maxRunes int) string {
	if IsSecretKey(name) {
		return Redacted
	}
	return Redact(value, maxRunes)
}
