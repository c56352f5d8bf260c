package deadletter

import "testing"

// benchTexts are error texts of the dead-letter path: the common one with no
// secret, one with a secret of most classes, a task's args with an error
// string inside (what the eval export and the console redact), and a PEM key.
var benchTexts = []struct{ name, text string }{
	{"plain", "web.search: upstream returned 503 Service Unavailable after 2.1s (request 6a7b8c9d)"},
	{"secrets", `POST https://user:hunter2@api.example.com/v1?sig=abc123 failed: Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.sig123456 for bob@example.com, api_key=sk-live-0123456789abcdef0123`},
	{"args", `{"query":"weather in Paris","max_tokens":512,"error":"auth failed for password=hunter2 at https://db.internal:5432/main?sslmode=require","attempt":3}`},
	{"pem", "load key: -----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\nq7Bv2nUwX9\n-----END RSA PRIVATE KEY----- rejected"},
}

// BenchmarkRedact measures Redact as the worker calls it (memo) and the
// rules themselves (nomemo: the first dead letter of a text).
func BenchmarkRedact(b *testing.B) {
	for _, c := range benchTexts {
		b.Run(c.name+"/memo", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Redact(c.text, MaxErrorRunes)
			}
		})
		b.Run(c.name+"/nomemo", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				redact(c.text, MaxErrorRunes)
			}
		})
	}
}
