package deadletter_test

import (
	"strings"
	"testing"

	"github.com/agentdlq/agentdlq/events/deadletter"
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
