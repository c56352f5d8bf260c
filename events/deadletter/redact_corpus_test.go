package deadletter_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/events/deadletter/redacttest"
)

// The corpus of issue 28: the key names the docs promise in every spelling,
// and the names whose values are evidence.
func TestIsSecretKeyCorpus(t *testing.T) {
	t.Parallel()
	keys := redacttest.SecretKeys()
	require.GreaterOrEqual(t, len(keys), 40)
	for _, k := range keys {
		assert.True(t, deadletter.IsSecretKey(k), "%q is a secret key", k)
	}
	for _, k := range redacttest.KeptKeys {
		assert.False(t, deadletter.IsSecretKey(k), "%q holds evidence", k)
	}
}

// A secret key name in any mix of case is still one: the words change, the
// letters do not (pAssWord, aPi_kEy).
func TestIsSecretKeyAnyCase(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(28, 3))
	for _, k := range redacttest.SecretKeys() {
		for range 8 {
			b := []byte(k)
			for i := range b {
				if r.IntN(3) == 0 {
					b[i] ^= 0x20 * byte(boolInt('a' <= b[i]|0x20 && b[i]|0x20 <= 'z'))
				}
			}
			assert.True(t, deadletter.IsSecretKey(string(b)), "%q (from %q)", b, k)
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Every secret key spelling, in the pairs free text writes (key=value, key:
// value, "key": "value", escaped JSON, a query string), loses its value; the
// kept names keep theirs.
func TestRedactPairsOfEverySpelling(t *testing.T) {
	t.Parallel()
	forms := []string{`%s=Zq7v`, `%s: Zq7v`, `{"%s": "Zq7v"}`, `{\"%s\":\"Zq7v\"}`, `GET /x?a=1&%s=Zq7v&b=2`, `%s = 'Zq7v w'`, `"%s":["Zq7v"]`}
	for _, k := range redacttest.SecretKeys() {
		for _, f := range forms {
			if strings.Contains(k, " ") && !strings.Contains(f, `"`) {
				continue // a name with spaces is a name only when quoted
			}
			in := "call failed: " + fmt.Sprintf(f, k) + " (retry 2)"
			got := deadletter.Redact(in, 0)
			assert.NotContains(t, got, "Zq7", "%q", in)
			assert.Contains(t, got, "(retry 2)", "the rest of the text is kept: %q", got)
		}
	}
	for _, k := range redacttest.KeptKeys {
		in := k + "=keep1 " + `{"` + k + `":"keep2"}`
		assert.Equal(t, in, deadletter.Redact(in, 0))
	}
}

// Each shape of secret in text, alone, amid an error sentence, and as a
// string in a task's args, is gone.
func TestRedactTextShapes(t *testing.T) {
	t.Parallel()
	require.GreaterOrEqual(t, len(redacttest.TextShapes), 20)
	for _, s := range redacttest.TextShapes {
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			for _, in := range []string{s.Text, "tool said: " + s.Text + " and gave up", `{"error":"` + strings.ReplaceAll(s.Text, "\n", `\n`) + `"}`} {
				for _, limit := range []int{0, deadletter.MaxErrorRunes} {
					got := deadletter.Redact(in, limit)
					for _, sec := range s.Secrets {
						assert.NotContains(t, got, sec, "Redact(%q, %d) = %q", in, limit, got)
					}
					assert.Equal(t, got, deadletter.Redact(got, limit), "idempotent")
				}
			}
			v := deadletter.RedactValue(map[string]any{"error": s.Text, "nested": []any{map[string]any{"detail": s.Text}}})
			b, err := json.Marshal(v)
			require.NoError(t, err)
			for _, sec := range s.Secrets {
				assert.NotContains(t, string(b), sec)
			}
		})
	}
}

func TestRedactValueCorpus(t *testing.T) {
	t.Parallel()
	args := redacttest.Args()
	for i, k := range redacttest.KeptKeys {
		args[k] = fmt.Sprintf("kept-%d", i)
	}
	args["hashed_password"] = "sha256:0123456789abcdef" // a hash field's value, as triage writes it
	args["pin_count"] = json.Number("4")
	v := deadletter.RedactValue(args)
	b, err := json.Marshal(v)
	require.NoError(t, err)
	assert.Empty(t, redacttest.Leaks(string(b)))
	out := v.(map[string]any)
	for i, k := range redacttest.KeptKeys {
		assert.Equal(t, fmt.Sprintf("kept-%d", i), out[k], k)
	}
	assert.Equal(t, "sha256:0123456789abcdef", out["hashed_password"])
	assert.Equal(t, json.Number("4"), out["pin_count"])
	// Under a secret key the structure stays, every leaf goes.
	assert.Equal(t, map[string]any{"user": deadletter.Redacted, "port": deadletter.Redacted, "tls": deadletter.Redacted, "none": nil},
		deadletter.RedactValue(map[string]any{"credentials": map[string]any{"user": "svc", "port": json.Number("5432"), "tls": true, "none": nil}}).(map[string]any)["credentials"])
	// A key that is itself a secret is replaced, its value kept apart.
	got := deadletter.RedactValue(map[string]any{"bob@example.com": "a", "ops@example.com": "b"}).(map[string]any)
	assert.Len(t, got, 2)
	assert.Contains(t, got, "[REDACTED_EMAIL]")
	assert.Contains(t, got, "[REDACTED_EMAIL]#2")
}

func TestRedactJSON(t *testing.T) {
	t.Parallel()
	assert.Equal(t, `{"a":1.50,"password":"[REDACTED]","q":"x < y"}`, deadletter.RedactJSON(`{"password":"hunter2","a":1.50,"q":"x \u003c y"}`))
	assert.Equal(t, "not json password=[REDACTED]", deadletter.RedactJSON("not json password=hunter2"))
}

func TestRedactAttribute(t *testing.T) {
	t.Parallel()
	assert.Equal(t, deadletter.Redacted, deadletter.RedactAttribute("password", "hunter2", 120))
	assert.Equal(t, deadletter.Redacted, deadletter.RedactAttribute("X-Api-Key", "k", 120))
	assert.Equal(t, "trace [REDACTED_EMAIL]", deadletter.RedactAttribute("origin", "trace ops@example.com", 120))
	assert.Equal(t, "seed", deadletter.RedactAttribute("token_count", "seed", 120))
}

// PEM blocks go whole, whatever their lines, with or without their END.
func TestRedactPEM(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"key -----BEGIN RSA PRIVATE KEY-----\nMIIB\nq7\n-----END RSA PRIVATE KEY----- rejected":   "key [REDACTED_PEM] rejected",
		"cert -----BEGIN CERTIFICATE-----\\nMIIC\\n-----END CERTIFICATE-----\\n then":             "cert [REDACTED_PEM]\\n then",
		"cut -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\nAAAA":                  "cut [REDACTED_PEM]",
		"two -----BEGIN A-----\nx\n-----END A----- and -----BEGIN B-----\ny\n-----END B----- end": "two [REDACTED_PEM] and [REDACTED_PEM] end",
		"tail AAAA\nBBBB\n-----END PRIVATE KEY----- done":                                         "tail [REDACTED_PEM] done",
		"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQ\n=abcd\n-----END PGP PRIVATE KEY BLOCK-----": "[REDACTED_PEM]",
	} {
		assert.Equal(t, want, deadletter.Redact(in, 0), "%q", in)
	}
	// Prose with dashes is not a block.
	assert.Equal(t, "front-end begin -- end", deadletter.Redact("front-end begin -- end", 0))
}

// Secrets inside the error strings of args, the shapes issue 28 names.
func TestRedactErrorStringsInArgs(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`{"error":"auth failed for password=hunter2"}`:                   `{"error":"auth failed for password=[REDACTED]"}`,
		`{"error":"401 Authorization: Bearer abc.def.ghi12345"}`:         `{"error":"401 Authorization: [REDACTED]"}`,
		`{"error":"dial https://bob:s3cret@api.example.com/v1 refused"}`: `{"error":"dial https://[REDACTED]@api.example.com/v1 refused"}`,
		`{"error":"GET /v1/x?api_key=abc123&page=2 returned 403"}`:       `{"error":"GET /v1/x?api_key=[REDACTED]&page=2 returned 403"}`,
		`{"error":"login: pw=abc user=bob; session=xyz"}`:                `{"error":"login: pw=[REDACTED] user=bob; session=[REDACTED]"}`,
		`{"error":"token_count=812 exceeded; max_tokens=800"}`:           `{"error":"token_count=812 exceeded; max_tokens=800"}`,
		`{"error":"auth failed: invalid credentials for tenant acme"}`:   `{"error":"auth failed: invalid credentials for tenant acme"}`,
		`{"error":"keyword: passage; author=ann"}`:                       `{"error":"keyword: passage; author=ann"}`,
	} {
		assert.Equal(t, want, deadletter.RedactJSON(in), "%s", in)
	}
}

// ParseMeta redacts what it reads again: a dlq_meta written before these
// rules, or by a producer, holds what they catch.
func TestParseMetaRedactsAgain(t *testing.T) {
	t.Parallel()
	doc := `{"v":1,"class":"poison","reason":"schema_invalid","next_action":"repair","attempts":1,"dead_lettered_at":"2026-12-01T00:00:00Z",` +
		`"error":"privateKey=Zq7m1 rejected","history":[{"n":1,"at":"2026-12-01T00:00:00Z","class":"poison","error":"-----BEGIN KEY-----\nZq7m2"}]}`
	m, err := deadletter.ParseMeta([]byte(doc))
	require.NoError(t, err)
	assert.Equal(t, "privateKey=[REDACTED] rejected", m.Error)
	assert.Equal(t, "[REDACTED_PEM]", m.History[0].Error)
}

// The errors that quote what a producer wrote quote it redacted.
func TestMetaErrorsRedactWhatTheyQuote(t *testing.T) {
	t.Parallel()
	_, err := deadletter.ParseMeta([]byte(`{"v":1,"reason":"password=Zq7r1","dead_lettered_at":"2026-12-01T00:00:00Z"}`))
	require.ErrorIs(t, err, deadletter.ErrMetaInvalid)
	assert.NotContains(t, err.Error(), "Zq7")
	_, _, err = deadletter.DecodeDeadLetter(map[string]deadletter.Attribute{deadletter.AttrReason: {DataType: "String", StringValue: "token=Zq7r2"}})
	require.ErrorIs(t, err, deadletter.ErrMetaInvalid)
	assert.NotContains(t, err.Error(), "Zq7")
	attrs, err := deadletter.EncodeDeadLetter(deadletter.Meta{Reason: deadletter.ReasonUnclassified}, nil)
	require.NoError(t, err)
	attrs[deadletter.AttrReason] = deadletter.Attribute{DataType: "String", StringValue: "secret: Zq7r3"}
	_, _, err = deadletter.DecodeDeadLetter(attrs)
	require.ErrorIs(t, err, deadletter.ErrMetaMismatch)
	assert.NotContains(t, err.Error(), "Zq7")
}

// Evidence that looks like a pair is kept: a path's last name, flags that
// hold no secret, arrows.
func TestRedactKeepsLookalikes(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"open /etc/passwd: permission denied",
		"run --verbose true --max-tokens 512 --token-count 5",
		"token-> next; pin -> 3",
		"<token_count>12</token_count> <b>bold</b>",
	} {
		assert.Equal(t, in, deadletter.Redact(in, 0))
	}
	assert.Equal(t, "mysql --password [REDACTED] -h db", deadletter.Redact("mysql --password hunter2 -h db", 0))
	assert.Equal(t, "cli --api-key [REDACTED] -v", deadletter.Redact(`cli --api-key "a b" -v`, 0))
	assert.Equal(t, "<password>[REDACTED]</password>", deadletter.Redact("<password>hunter2</password>", 0))
}
