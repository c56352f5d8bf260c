package deadletter_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/events/deadletter/redacttest"
)

// plantedSecrets are one secret of each class Redact knows, and the part of
// each that must not be found again (the value, not the key name).
var plantedSecrets = []struct{ text, value string }{
	{"password=Zq7hunter2Xp", "Zq7hunter2Xp"},
	{`{\"user\":\"bob\",\"passphrase\":\"Zq7horse9Xp\"}`, "Zq7horse9Xp"},
	{`{"pwd": "Zq7pwd42Xp"}`, "Zq7pwd42Xp"},
	{"Authorization: Bearer Zq7bearer42Xp", "Zq7bearer42Xp"},
	{"amqp://user:Zq7/pa/ss@mq.internal:5672", "Zq7/pa/ss"},
	{"4111 1111 1111 1111", "4111 1111 1111 1111"},
	{"5555-5555-5555-4444", "5555-5555-5555-4444"},
	{"378282246310005", "378282246310005"},
	{"AKIAIOSFODNN7EXAMPLE_x", "AKIAIOSFODNN7EXAMPLE"},
	{"AIzaSyA-1234567890abcdefghijklmnopqrstu", "SyA-1234567890abcdefghijklmnopqrstu"},
	{"hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345", "AbCdEfGhIjKlMnOpQrStUvWxYz012345"},
	{"xapp-1-A0123456789-1234567890123-abcdef0123", "A0123456789-1234567890123-abcdef0123"},
	{"npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"},
	{"sk-proj-AbCdEf0123456789XyZ", "AbCdEf0123456789XyZ"},
	{"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.Zq7signatureXp", "Zq7signatureXp"},
	{"ops.zq7@example.com", "ops.zq7@example.com"},
}

// The shapes of the corpus (issue 28): PEM blocks, pairs under every kind
// of key name, secrets inside error sentences, headers and URLs.
func init() {
	for _, s := range redacttest.TextShapes {
		for _, v := range s.Secrets {
			plantedSecrets = append(plantedSecrets, struct{ text, value string }{s.Text, v})
		}
	}
}

// FuzzRedactSecrets plants a secret of every class between two fuzzed texts
// (white space on both sides, as in any error text) and asserts that it
// survives neither Redact nor the metadata encoder: not in dlq_meta's error
// text, not in its attempt history.
func FuzzRedactSecrets(f *testing.F) {
	f.Add("upstream said:", "and gave up", uint8(0))
	f.Add(`"{\"a\":1,`, `}"`, uint8(1))
	f.Add("status 402 4000", "1234", uint8(5))
	f.Add("password=\"", "\"", uint8(8))
	f.Add(strings.Repeat("é", 200), "", uint8(9))
	f.Fuzz(func(t *testing.T, prefix, suffix string, pick uint8) {
		p := plantedSecrets[int(pick)%len(plantedSecrets)]
		text := prefix + " " + p.text + " " + suffix
		// Occurrences the fuzzed texts bring along are theirs, not a leak.
		already := strings.Count(prefix, p.value) + strings.Count(suffix, p.value)
		for _, limit := range []int{0, deadletter.MaxErrorRunes} {
			if got := deadletter.Redact(text, limit); strings.Count(got, p.value) > already {
				t.Fatalf("Redact(%q, %d) = %q keeps %q", text, limit, got, p.value)
			}
		}
		m := deadletter.Meta{Reason: deadletter.ReasonUnclassified, Error: text, History: []deadletter.Attempt{{Error: text}}}
		attrs, err := deadletter.EncodeDeadLetter(m, nil)
		if err != nil {
			t.Fatalf("EncodeDeadLetter: %v", err)
		}
		raw := attrs[deadletter.AttrMeta].StringValue
		back, err := deadletter.ParseMeta([]byte(raw))
		if err != nil {
			t.Fatalf("ParseMeta: %v", err)
		}
		for _, s := range []string{back.Error, back.History[0].Error} {
			if strings.Count(s, p.value) > already {
				t.Fatalf("dlq_meta %s keeps %q", raw, p.value)
			}
		}
	})
}

// FuzzRedactKeySpellings plants a value under a secret key name of the
// corpus, its letters' case fuzzed, in each pair form, between fuzzed texts:
// neither Redact nor RedactValue lets the value through.
func FuzzRedactKeySpellings(f *testing.F) {
	f.Add("request failed:", "(retry 1)", uint16(0), uint64(0), uint8(0))
	f.Add(`{"a":"`, `"}`, uint16(7), uint64(0xf0f0), uint8(3))
	f.Add("max", "count", uint16(40), uint64(1), uint8(5))
	keys := redacttest.SecretKeys()
	forms := []string{"%s=%s", "%s: %s", `"%s": "%s"`, `\"%s\":\"%s\"`, "?a=1&%s=%s&b=2", `"%s":["%s"]`}
	f.Fuzz(func(t *testing.T, prefix, suffix string, pick uint16, caseMask uint64, form uint8) {
		key := []byte(keys[int(pick)%len(keys)])
		for i := range key {
			if c := key[i] | 0x20; caseMask&(1<<(i%64)) != 0 && 'a' <= c && c <= 'z' {
				key[i] ^= 0x20
			}
		}
		fm := forms[int(form)%len(forms)]
		if strings.Contains(string(key), " ") && !strings.HasPrefix(fm, `"`) {
			fm = `"%s": "%s"` // a name with spaces is a name when quoted
		}
		const secret = "Zq7fz9"
		text := prefix + " " + fmt.Sprintf(fm, key, secret) + " " + suffix
		already := strings.Count(prefix, secret) + strings.Count(suffix, secret)
		for _, limit := range []int{0, deadletter.MaxErrorRunes} {
			if got := deadletter.Redact(text, limit); strings.Count(got, secret) > already {
				t.Fatalf("Redact(%q, %d) = %q keeps the value", text, limit, got)
			}
		}
		v := deadletter.RedactValue(map[string]any{string(key): secret, "error": text})
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Count(string(b), secret) > already {
			t.Fatalf("RedactValue kept the value: %s", b)
		}
	})
}
