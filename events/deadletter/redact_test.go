package deadletter_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"

	"github.com/agentdlq/agentdlq/events/deadletter"
)

func TestRedact(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    string   // the whole redacted text, when given
		gone    []string // secrets that must not survive
		kept    []string // context that must survive
		maxRune int
	}{
		{name: "plain error untouched", in: "upstream returned 503 Service Unavailable after 2.1s", want: "upstream returned 503 Service Unavailable after 2.1s"},
		{name: "empty", in: "", want: ""},
		{name: "bearer token", in: "request failed: bearer abcDEF123456789.xyz", want: "request failed: bearer [REDACTED]"},
		{name: "basic credentials", in: "got 401 with Basic dXNlcjpodW50ZXIy", want: "got 401 with Basic [REDACTED]"},
		{name: "authorization header", in: "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc123xyz; retrying", want: "Authorization: [REDACTED]; retrying"},
		{name: "authorization header in JSON", in: `headers {"Authorization": "Basic dXNlcjpwYXNz", "accept": "*/*"}`, want: `headers {"Authorization": "[REDACTED]", "accept": "*/*"}`},
		{name: "proxy authorization", in: "Proxy-Authorization=Digest username=bob", gone: []string{"username=bob"}, kept: []string{"Proxy-Authorization"}},
		{name: "aws sigv4 header", in: "Authorization: AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20261129/us-east-1/sqs/aws4_request, SignedHeaders=host, Signature=fe5f80f77d5fa3beca038a248ff027", gone: []string{"AKIAIOSFODNN7EXAMPLE", "fe5f80f77d5fa3beca038a248ff027"}, kept: []string{"SignedHeaders=host"}},
		{name: "aws access key id", in: "InvalidClientTokenId: AKIAIOSFODNN7EXAMPLE is not valid", want: "InvalidClientTokenId: [REDACTED_AWS_KEY] is not valid"},
		{name: "aws temporary key id", in: "key ASIAY34FZKBOKMUTVV7A expired", want: "key [REDACTED_AWS_KEY] expired"},
		{name: "aws secret key", in: "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", gone: []string{"wJalrXUtnFEMI"}},
		{name: "openai key", in: "401 invalid api key sk-proj-AbCdEf0123456789XyZ", want: "401 invalid api key [REDACTED_KEY]"},
		{name: "anthropic key", in: "x-api-key: sk-ant-api03-AbCdEf0123456789", gone: []string{"AbCdEf0123456789"}},
		{name: "stripe key", in: "using sk_live_4eC39HqLyjWDarjtT1zdp7dc", want: "using [REDACTED_KEY]"},
		{name: "github token", in: "clone failed with ghp_16C7e42F292c6912E7710c838347Ae178B4a", want: "clone failed with [REDACTED_KEY]"},
		{name: "github fine-grained token", in: "token github_pat_11ABCDEFG0123456789_abcdef", gone: []string{"11ABCDEFG0123456789"}},
		{name: "slack token", in: "slack: xoxb-123456789012-abcdefABCDEF", want: "slack: [REDACTED_KEY]"},
		{name: "jwt", in: "claims invalid in eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", want: "claims invalid in [REDACTED_JWT]"},
		{name: "email", in: "mailbox bob.smith+dlq@mail.example.co.uk is full", want: "mailbox [REDACTED_EMAIL] is full"},
		{name: "password pair", in: "connect failed: password=hunter2 host=db", want: "connect failed: password=[REDACTED] host=db"},
		{name: "api_key pair", in: "api_key: 12345abcde, region: eu", want: "api_key: [REDACTED], region: eu"},
		{name: "json token pair", in: `body {"token":"abc.def","user":"x"}`, want: `body {"token":"[REDACTED]","user":"x"}`},
		{name: "client_secret pair", in: "client_secret='s3cr3t' rejected", want: "client_secret='[REDACTED]' rejected"},
		{name: "key and value across a line break", in: "password\n= hunter2", want: "password\n= [REDACTED]"},
		{name: "secret word without a value kept", in: "signature did not verify; token expired", want: "signature did not verify; token expired"},
		{name: "camel-case secret keys", in: `secretKey=abc1 passwordHash: "x2" clientSecret=y3 accessToken=z4 sessionTokenValue=w5`, want: `secretKey=[REDACTED] passwordHash: "[REDACTED]" clientSecret=[REDACTED] accessToken=[REDACTED] sessionTokenValue=[REDACTED]`},
		{name: "not a secret key", in: "max_tokens=4096 exceeded; secretsmanager:GetSecretValue denied", want: "max_tokens=4096 exceeded; secretsmanager:GetSecretValue denied"},
		{name: "url credentials", in: "dial postgres://app:pa55w0rd@db.internal:5432/main failed", want: "dial postgres://[REDACTED]@db.internal:5432/main failed"},
		{name: "url password only", in: "redis://:pa55w0rd@cache:6379", want: "redis://[REDACTED]@cache:6379"},
		{name: "presigned s3 url", in: "GET https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20261129&X-Amz-Signature=abcdef0123456789&X-Amz-Expires=300 403",
			gone: []string{"AKIAIOSFODNN7EXAMPLE", "abcdef0123456789"}, kept: []string{"X-Amz-Algorithm=AWS4-HMAC-SHA256", "X-Amz-Expires=300", " 403"}},
		{name: "sas signature", in: "https://acct.blob.core.windows.net/c/b?sv=2024-01-01&sig=AbC%2Bdef123", want: "https://acct.blob.core.windows.net/c/b?sv=2024-01-01&sig=[REDACTED]"},
		{name: "long opaque blob", in: "key material 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 leaked", want: "key material [REDACTED_BLOB] leaked"},
		{name: "long path kept", in: "open /var/task/functions/sampleworker/internal/handlers/agent/tools: no such file", want: "open /var/task/functions/sampleworker/internal/handlers/agent/tools: no such file"},
		{name: "truncated to the limit", in: strings.Repeat("é", 300), want: strings.Repeat("é", 255) + "…", maxRune: 256},
		{name: "at the limit untouched", in: strings.Repeat("é", 256), want: strings.Repeat("é", 256), maxRune: 256},
		{name: "truncation after redaction", in: "password=" + strings.Repeat("x", 300), want: "password=[REDACTED]", maxRune: 256},
		{name: "invalid utf-8 replaced", in: "bad \xff\xfe bytes", want: "bad \uFFFD\uFFFD bytes"},
		{name: "invalid utf-8 with a secret", in: "\xc3 token=abc", want: "\uFFFD token=[REDACTED]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := deadletter.Redact(tt.in, tt.maxRune)
			assert.True(t, utf8.ValidString(got), "valid UTF-8")
			if tt.maxRune > 0 {
				assert.LessOrEqual(t, utf8.RuneCountInString(got), tt.maxRune)
			}
			if tt.want != "" || tt.in == "" {
				assert.Equal(t, tt.want, got)
			}
			for _, s := range tt.gone {
				assert.NotContains(t, got, s)
			}
			for _, s := range tt.kept {
				assert.Contains(t, got, s)
			}
		})
	}
}

// TestRedactClasses holds one table per class of secret the review of
// issue 12 found passing through: each row fails on the rules before it.
func TestRedactClasses(t *testing.T) {
	t.Parallel()
	type row struct {
		name string
		in   string
		want string // the whole redacted text
	}
	classes := map[string][]row{
		"payment card": {
			{"visa plain", "charge 4111111111111111 declined", "charge [REDACTED_CARD] declined"},
			{"visa spaced", "card 4242 4242 4242 4242 expired", "card [REDACTED_CARD] expired"},
			{"mastercard dashed", "pan=5555-5555-5555-4444;", "pan=[REDACTED_CARD];"},
			{"amex 4-6-5", "amex 3782 822463 10005 refused", "amex [REDACTED_CARD] refused"},
			{"in json", `{"card":"6011111111111117","cvc":"123"}`, `{"card":"[REDACTED_CARD]","cvc":"[REDACTED]"}`},
			{"19 digits", "4000000000000000006 ok", "[REDACTED_CARD] ok"},
			{"after a number", "status 402 4111 1111 1111 1111", "status 402 [REDACTED_CARD]"},
			{"two cards", "4111111111111111 5555555555554444", "[REDACTED_CARD] [REDACTED_CARD]"},
			// Kept: what fails Luhn, or does not start like a card.
			{"order id failing luhn", "order 4111111111111112 not found", "order 4111111111111112 not found"},
			{"spaced order id failing luhn", "order 4111 1111 1111 1112", "order 4111 1111 1111 1112"},
			{"epoch milliseconds", "at 1764547200000 retry", "at 1764547200000 retry"},
			{"epoch nanoseconds", "ts=1764547200000000000", "ts=1764547200000000000"},
			{"too short", "id 411111111111", "id 411111111111"},
			{"too long", "id 41111111111111111111", "id 41111111111111111111"},
			{"date and time", "2026-11-29 12:00:00 4111", "2026-11-29 12:00:00 4111"},
			{"mixed separators", "4111 1111-1111 1111", "4111 1111-1111 1111"},
		},
		"url password with a slash": {
			{"slash", "dial amqp://user:pa/ss@mq.internal:5672 failed", "dial amqp://[REDACTED]@mq.internal:5672 failed"},
			{"several slashes", "postgres://app:a/b/c@db/main", "postgres://[REDACTED]@db/main"},
			{"quoted url", `"redis://:p/w@cache:6379"`, `"redis://[REDACTED]@cache:6379"`},
			{"path with an at kept apart", `{"u":"https://h:443/x","e":"bob@example.com"}`, `{"u":"https://h:443/x","e":"[REDACTED_EMAIL]"}`},
		},
		"escaped json": {
			{"%q body", `body "{\"user\":\"bob\",\"password\":\"hunter2\"}"`, `body "{\"user\":\"bob\",\"password\":\"[REDACTED]\"}"`},
			{"escaped quote inside", `"{\"token\":\"a\\\"b\",\"n\":1}"`, `"{\"token\":\"[REDACTED]\",\"n\":1}"`},
			{"escaped number", `{\"pwd\":12345}`, `{\"pwd\":[REDACTED]}`},
			{"escaped authorization", `{\"Authorization\":\"Bearer abc.def\"}`, `{\"Authorization\":\"[REDACTED]\"}`},
		},
		"short provider keys": {
			{"google api key", "key AIzaSyA-1234567890abcdefghijklmnopqrstu rejected", "key [REDACTED_KEY] rejected"},
			{"hugging face", "hf: hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345 401", "hf: [REDACTED_KEY] 401"},
			{"slack app token", "xapp-1-A0123456789-1234567890123-abcdef0123 revoked", "[REDACTED_KEY] revoked"},
			{"npm token", "npm ERR! npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "npm ERR! [REDACTED_KEY]"},
			{"aws key id then underscore", "AKIAIOSFODNN7EXAMPLE_backup invalid", "[REDACTED_AWS_KEY]_backup invalid"},
			{"aws key id after underscore", "creds_ASIAY34FZKBOKMUTVV7A", "creds_[REDACTED_AWS_KEY]"},
			{"words kept", "npm_config_cache and hf_hub_download failed", "npm_config_cache and hf_hub_download failed"},
		},
		"secret keys": {
			{"pwd", "pwd=hunter2 user=bob", "pwd=[REDACTED] user=bob"},
			{"passphrase", `passphrase: "correct horse"`, `passphrase: "[REDACTED]"`},
			{"card_number", "card_number=4111-x", "card_number=[REDACTED]"},
			{"camel case", "passwordConfirm=hunter2", "passwordConfirm=[REDACTED]"},
			{"other words kept", "max_tokens=4096 secretsmanager:GetSecretValue", "max_tokens=4096 secretsmanager:GetSecretValue"},
		},
	}
	for class, rows := range classes {
		for _, tt := range rows {
			t.Run(class+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				assert.Equal(t, tt.want, deadletter.Redact(tt.in, deadletter.MaxErrorRunes))
			})
		}
	}
}

func TestIsSecretKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		key  string
		want bool
	}{
		{"password", true}, {"pwd", true}, {"passphrase", true}, {"card_number", true}, {"cardNumber", true},
		{"client_secret", true}, {"password_hash", true}, {"passwordHash", true}, {"sessionTokenValue", true},
		{"API_KEY", true}, {"x-api-key", true}, {"cvv", true}, {"Authorization", true},
		// "tokens" is the plural of token (issue 28: plurals are secrets);
		// a count of tokens says so (max_tokens, token_count).
		{"tokens", true},
		{"max_tokens", false}, {"secretsmanager", false}, {"query", false}, {"idempotency_key", false}, {"", false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, deadletter.IsSecretKey(tt.key), tt.key)
	}
}

func TestRedactTruncationKeepsRunes(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 2, 3, 10, 256} {
		got := deadletter.Redact(strings.Repeat("日本語", 200), n)
		assert.Equal(t, n, utf8.RuneCountInString(got), "limit %d", n)
		assert.True(t, strings.HasSuffix(got, "…"))
		assert.True(t, utf8.ValidString(got))
	}
	assert.Equal(t, strings.Repeat("a", 1000), deadletter.Redact(strings.Repeat("a", 1000), 0), "no limit")
}

func TestRedactLongText(t *testing.T) {
	t.Parallel()
	// A megabyte of error text (an HTTP body pasted into an error): the
	// secret at the start is redacted, the result is bounded and marked cut.
	long := "upstream said: password=hunter2 " + strings.Repeat("lorem ipsum ", 100_000)
	got := deadletter.Redact(long, deadletter.MaxErrorRunes)
	assert.True(t, strings.HasPrefix(got, "upstream said: password=[REDACTED] lorem"))
	assert.Equal(t, deadletter.MaxErrorRunes, utf8.RuneCountInString(got))
	assert.True(t, strings.HasSuffix(got, "…"))

	// Secrets that collapse to short markers: what is left of the window is
	// kept, still marked as cut, and no secret is cut in two.
	jwt := "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlc2lnbmF0dXJl"
	many := strings.Repeat(jwt+" ", 2000)
	got = deadletter.Redact(many, 300)
	assert.NotContains(t, got, "eyJ")
	assert.True(t, strings.HasSuffix(got, "…"))
	assert.LessOrEqual(t, utf8.RuneCountInString(got), 300)

	// One secret longer than the window: redacted, the rest dropped.
	blob := strings.Repeat("A1b2C3d4", 3000)
	assert.Equal(t, "key [REDACTED_BLOB]…", deadletter.Redact("key "+blob, deadletter.MaxErrorRunes))

	// Without a limit, the whole text is read.
	got = deadletter.Redact(strings.Repeat("x ", 20_000)+"password=hunter2", 0)
	assert.True(t, strings.HasSuffix(got, "password=[REDACTED]"))
}

func TestRedactIsIdempotent(t *testing.T) {
	t.Parallel()
	in := "Authorization: Bearer abcdefgh12345678 bob@example.com password=x sk-abcdefghijklmnop1234 https://u:p@h/x?sig=1"
	once := deadletter.Redact(in, deadletter.MaxErrorRunes)
	assert.Equal(t, once, deadletter.Redact(once, deadletter.MaxErrorRunes))
}

func ExampleRedact() {
	msg := "POST https://api.example.com/v1/send failed: 401 (Authorization: Bearer sk-live-0123456789abcdefXYZ) for ops@example.com; password=hunter2"
	fmt.Println(deadletter.Redact(msg, deadletter.MaxErrorRunes))
	fmt.Println(deadletter.Redact("a very long error text", 10))
	// Output:
	// POST https://api.example.com/v1/send failed: 401 (Authorization: [REDACTED]) for [REDACTED_EMAIL]; password=[REDACTED]
	// a very lo…
}
