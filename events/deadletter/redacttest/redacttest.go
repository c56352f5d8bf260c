// Package redacttest is the redaction corpus of agentdlq: secret key names
// in every spelling a producer uses, the names whose values are evidence and
// must be kept, and secrets in the shapes they take inside text (an error
// string, a header, a URL, a PEM block). The tests of events/deadletter hold
// Redact, RedactValue and IsSecretKey to it, and the end-to-end tests send it
// through the worker to the DLQ and read it back through triage's eval export
// and the console.
//
// Every planted secret holds the marker "Zq7", which nothing else in a test
// body does: no "Zq7" may be found in what redaction let through.
package redacttest

import (
	"fmt"
	"strings"
)

// Marker is in every planted secret value.
const Marker = "Zq7"

// secretNames are names of secret values, as the words they are made of.
// Spellings writes each in every style.
var secretNames = [][]string{
	{"password"}, {"passwords"}, {"passwd"}, {"pwd"}, {"pw"}, {"pass"}, {"passphrase"}, {"passcode"},
	{"secret"}, {"secrets"}, {"token"}, {"tokens"}, {"api", "key"}, {"apikey"}, {"api", "keys"},
	{"private", "key"}, {"access", "key"}, {"access", "key", "id"}, {"secret", "access", "key"},
	{"ssh", "key"}, {"ssh", "private", "key"}, {"encryption", "key"}, {"signing", "key"}, {"master", "key"},
	{"client", "secret"}, {"signing", "secret"}, {"webhook", "secret"}, {"credential"}, {"credentials"},
	{"creds"}, {"auth"}, {"auth", "token"}, {"authorization"}, {"bearer"}, {"bearer", "token"}, {"cookie"},
	{"cookies"}, {"set", "cookie"}, {"session"}, {"session", "id"}, {"session", "token"}, {"session", "key"},
	{"sid"}, {"refresh", "token"}, {"access", "token"}, {"id", "token"}, {"csrf", "token"}, {"signature"},
	{"otp"}, {"otp", "code"}, {"totp", "secret"}, {"pin"}, {"pin", "code"}, {"pins"}, {"db", "password"},
	{"db", "pass"}, {"mysql", "pwd"}, {"admin", "pw"}, {"new", "password"}, {"password", "confirmation"},
	{"password", "hash"}, {"x", "api", "key"}, {"aws", "secret", "access", "key"}, {"aws", "session", "token"},
	{"card", "number"}, {"cvv"}, {"cvc"}, {"jwt"}, {"private", "keys"}, {"encryption", "keys"},
	{"proxy", "authorization"}, {"storage", "account", "key"}, {"subscription", "key"}, {"secret", "string"},
	{"token", "value"}, {"ssn"},
}

// Styles are the ways a name's words are written: snake_case, kebab-case,
// camelCase, PascalCase, SCREAMING_SNAKE, dot.case, space case, Train-Case
// and alllower.
var Styles = []func(words []string) string{
	func(w []string) string { return strings.Join(w, "_") },
	func(w []string) string { return strings.Join(w, "-") },
	func(w []string) string { return camel(w, false) },
	func(w []string) string { return camel(w, true) },
	func(w []string) string { return strings.ToUpper(strings.Join(w, "_")) },
	func(w []string) string { return strings.Join(w, ".") },
	func(w []string) string { return strings.Join(w, " ") },
	func(w []string) string {
		t := make([]string, len(w))
		for i, s := range w {
			t[i] = strings.ToUpper(s[:1]) + s[1:]
		}
		return strings.Join(t, "-")
	},
	func(w []string) string { return strings.Join(w, "") },
}

func camel(w []string, upperFirst bool) string {
	var b strings.Builder
	for i, s := range w {
		if i > 0 || upperFirst {
			s = strings.ToUpper(s[:1]) + s[1:]
		}
		b.WriteString(s)
	}
	return b.String()
}

// irregular are secret names no style above writes.
var irregular = []string{
	"APIKey", "XApiKey", "PGPASSWORD", "DBPASSWORD", "dbpassword", "userPassword2", "pwHash",
	"OAuthToken", "IDToken", "SecretAccessKey", "AccessKeyId", "Ocp-Apim-Subscription-Key",
	"x-amz-security-token", "X-Auth-Token", "privateKeyPem", "client_secret_b64", "CVV2",
	"__Secure-session", "PASSPHRASE", "sessionTokenValue", "JSESSIONID", "PHPSESSID", "connect.sid",
	"ASP.NET_SessionId", "XSRF-TOKEN", "secret_key_base", "priv_key", "hmac", "2fa_code", "backup_codes",
	"recovery_codes", "gpg_key", "social_security_number", "keystorePassword", "truststorePass",
}

// SecretKeys returns every secret key name of the corpus: the names in
// every style, then the irregular ones; no duplicates.
func SecretKeys() []string {
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, w := range secretNames {
		for _, style := range Styles {
			add(style(w))
		}
	}
	for _, s := range irregular {
		add(s)
	}
	return out
}

// KeptKeys are names whose values are evidence, not secrets: counts and
// limits of tokens, times and types of sessions and passwords, and words
// that hold a secret's letters (passage, keyword, author, bypass).
var KeptKeys = []string{
	"token_count", "tokenCount", "max_tokens", "maxTokens", "prompt_tokens", "completion_tokens",
	"total_tokens", "input_tokens", "output_tokens", "num_tokens", "tokens_used", "token_limit",
	"cache_read_input_tokens", "token_type", "tokenizer", "passage", "passages", "passenger",
	"keyword", "keywords", "key", "keys", "idempotency_key", "partition_key", "cache_key", "public_key",
	"publicKey", "sort_key", "author", "authority", "authored_by", "bypass", "compass", "sidebar",
	"possession", "secretsmanager", "secretary", "session_timeout", "sessionTimeout", "session_count",
	"password_min_length", "passwordPolicy", "passwordless", "signature_version", "SignatureVersion",
	"pinned", "spinner", "opinion", "credit", "tokenExpiresIn", "has_password", "query", "task_id",
	"run_id", "trace_id", "tenant", "tool", "message", "error", "max_results", "authenticated",
	"token_ids", "usage_tokens", "tokensPerSecond", "auth_method", "token_url", "private_key_path",
	"password_file", "secret_name", "cookie_domain", "signature_algorithm", "pass_rate", "passport",
	"passive", "keyboard", "monkey", "authorized", "authentication_method", "pinpoint", "client_id",
}

// A Shape is a secret in one shape inside text: Text holds it, Secrets are
// what must not be found after redaction (each holds Marker, except card
// numbers, AWS key ids and emails, which the rules know by their shape).
type Shape struct {
	Name    string
	Text    string
	Secrets []string
}

// TextShapes are secrets as error texts and logs carry them.
var TextShapes = []Shape{
	{"key=value", "password=Zq7t01", []string{"Zq7t01"}},
	{"inside an error sentence", "auth failed for password=Zq7t02 on db", []string{"Zq7t02"}},
	{"authorization bearer", "Authorization: Bearer Zq7t03abcdefgh", []string{"Zq7t03"}},
	{"url credentials", "postgres://app:Zq7t04@db.internal:5432/main", []string{"Zq7t04"}},
	{"query string", "https://api.example.com/v1/search?api_key=Zq7t05&q=x", []string{"Zq7t05"}},
	{"pem short lines", "-----BEGIN RSA PRIVATE KEY-----\nZq7t06\nAbCd\n-----END RSA PRIVATE KEY-----", []string{"Zq7t06", "AbCd"}},
	{"pem without end", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl\nZq7t07", []string{"Zq7t07", "b3Bl"}},
	{"pem escaped newlines", `-----BEGIN PRIVATE KEY-----\nZq7t08\n-----END PRIVATE KEY-----`, []string{"Zq7t08"}},
	{"pem tail without begin", "Zq7t09aa\nQUJD\n-----END EC PRIVATE KEY-----", []string{"Zq7t09"}},
	{"json member camel case", `{"apiKey":"Zq7t10"}`, []string{"Zq7t10"}},
	{"escaped json", `{\"privateKey\":\"Zq7t11\"}`, []string{"Zq7t11"}},
	{"header", "X-Api-Key: Zq7t12", []string{"Zq7t12"}},
	{"cookie header", "Cookie: theme=dark; session=Zq7t13", []string{"Zq7t13"}},
	{"json array under a plural", `"passwords":["Zq7t14a","Zq7t14b"]`, []string{"Zq7t14"}},
	{"json object under credentials", `"credentials":{"user":"svc","value":"Zq7t15"}`, []string{"Zq7t15"}},
	{"single quotes with a space", `accessKey = 'Zq7t16 horse'`, []string{"Zq7t16"}},
	{"short form", "pw: Zq7t17", []string{"Zq7t17"}},
	{"dotted key", "encryption.key=Zq7t18", []string{"Zq7t18"}},
	{"two words in prose", "private key: Zq7t19", []string{"Zq7t19"}},
	{"basic credentials", "Basic Zq7t20AbCdEfGh", []string{"Zq7t20"}},
	{"jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.Zq7t21signature", []string{"Zq7t21"}},
	{"aws access key id", "AKIAZQ7T22ABCDEFGHIJ", []string{"AKIAZQ7T22"}},
	{"provider key", "sk-proj-Zq7t23AbCdEfGhIjKl", []string{"Zq7t23"}},
	{"github token", "ghp_Zq7t24AbCdEfGhIjKlMnOp", []string{"Zq7t24"}},
	{"email", "zq7t25@example.com", []string{"zq7t25@example.com"}},
	{"card number", "4111 1111 1111 1111", []string{"4111 1111 1111 1111"}},
	{"pin number", "pin=739182", []string{"739182"}},
	{"url with a srv scheme", "mongodb+srv://u:Zq7t28@cluster0.example.net/db", []string{"Zq7t28"}},
	{"form body", "client_secret=Zq7t29&grant_type=client_credentials", []string{"Zq7t29"}},
	{"spaced json", `"session_token" : "Zq7t30"`, []string{"Zq7t30"}},
	{"yaml", "db:\n  password: Zq7t31\n", []string{"Zq7t31"}},
	{"env line", "SSH_KEY=Zq7t32", []string{"Zq7t32"}},
	{"plural env", "SECRETS=Zq7t33,other", []string{"Zq7t33"}},
	{"escaped json array", `{\"tokens\":[\"Zq7t34\"]}`, []string{"Zq7t34"}},
	{"command-line flag", "exec: mysql --password Zq7t35 -h db failed", []string{"Zq7t35"}},
	{"xml element", "<user>bob</user><password>Zq7t36</password>", []string{"Zq7t36"}},
	{"connection string", "Server=db;Database=app;User Id=sa;Password=Zq7t37;Encrypt=true", []string{"Zq7t37"}},
	{"storage connection string", "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=Zq7t38+x==;EndpointSuffix=core.windows.net", []string{"Zq7t38"}},
	{"toml", "[db]\npassword = \"Zq7t39\"", []string{"Zq7t39"}},
	{"set-cookie", "Set-Cookie: sid=Zq7t40; Path=/; HttpOnly", []string{"Zq7t40"}},
}

// Args returns a task's args with every secret key of the corpus, each
// holding a value with Marker (string, number, array or object in turn),
// and every text shape under "notes". The values are the secrets; the keys
// stay.
func Args() map[string]any {
	args := map[string]any{"query": "weather in Paris", "max_tokens": 512, "token_count": 77}
	for i, k := range SecretKeys() {
		v := fmt.Sprintf("%sk%03d", Marker, i)
		switch i % 4 {
		case 0:
			args[k] = v
		case 1:
			args[k] = []any{v, v + "b"}
		case 2:
			args[k] = map[string]any{"value": v, "note": "rotated"}
		default:
			args[k] = v + "-" + v
		}
	}
	notes := make([]any, len(TextShapes))
	for i, s := range TextShapes {
		notes[i] = s.Text
	}
	args["notes"] = notes
	return args
}

// Secrets returns every secret of TextShapes that holds no Marker (a card
// number, an AWS key id, a PIN) and is long enough to be found only where
// it was planted, for a check that also looks for Marker.
func Secrets() []string {
	var out []string
	for _, s := range TextShapes {
		for _, sec := range s.Secrets {
			if !strings.Contains(sec, Marker) && len(sec) >= 6 {
				out = append(out, sec)
			}
		}
	}
	return out
}

// Leaks returns what of the planted secrets text holds: Marker (folded for
// case, as an email is) and every secret of Secrets.
func Leaks(text string) []string {
	var out []string
	if strings.Contains(strings.ToLower(text), strings.ToLower(Marker)) {
		i := strings.Index(strings.ToLower(text), strings.ToLower(Marker))
		out = append(out, text[max(0, i-40):min(len(text), i+20)])
	}
	for _, s := range Secrets() {
		if strings.Contains(text, s) {
			out = append(out, s)
		}
	}
	return out
}
