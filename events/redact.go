package events

import (
	"regexp"
	"unicode/utf8"
)

// Redaction rules, applied in order. Each replaces what it matches with a
// fixed marker that names what was removed, so an operator still sees the
// shape of the error without the secret.
var redactions = []struct {
	re   *regexp.Regexp
	repl string
}{
	// Authorization headers and bearer/basic credentials.
	{regexp.MustCompile(`(?i)(authorization|proxy-authorization)\s*[:=]\s*("?)[^\s",;]+(\s+[^\s",;]+)?`), "$1: [REDACTED]"},
	{regexp.MustCompile(`(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}`), "$1 [REDACTED]"},
	// JSON Web Tokens.
	{regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*`), "[REDACTED_JWT]"},
	// AWS access key ids, provider API keys (sk-..., xox..-, ghp_...).
	{regexp.MustCompile(`\b(AKIA|ASIA)[A-Z0-9]{16}\b`), "[REDACTED_AWS_KEY]"},
	{regexp.MustCompile(`\b(sk|pk|rk)-[A-Za-z0-9_-]{16,}`), "[REDACTED_KEY]"},
	{regexp.MustCompile(`\b(xox[abprs]|ghp|gho|ghs|github_pat|glpat)[-_][A-Za-z0-9_-]{10,}`), "[REDACTED_KEY]"},
	// key=value and "key": "value" pairs whose key names a secret.
	{regexp.MustCompile(`(?i)("?[a-z0-9_-]*(password|passwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|credential|session[_-]?id|signature)[a-z0-9_-]*"?\s*[:=]\s*)("[^"]*"|'[^']*'|[^\s,;&}]+)`), "${1}[REDACTED]"},
	// Secrets in URLs: user:password@host and signed query strings.
	{regexp.MustCompile(`(?i)(://)[^/\s:@]+:[^/\s@]+@`), "${1}[REDACTED]@"},
	{regexp.MustCompile(`(?i)([?&](x-amz-signature|x-amz-credential|x-amz-security-token|sig|signature|token|key)=)[^&\s]+`), "${1}[REDACTED]"},
	// Email addresses.
	{regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}`), "[REDACTED_EMAIL]"},
	// Long opaque strings (hex or base64 of 32+ characters) that look like key material.
	{regexp.MustCompile(`\b[A-Za-z0-9+/_-]{40,}={0,2}`), "[REDACTED_BLOB]"},
}

// Redact removes tokens, keys, authorization headers, credentials in URLs and
// email addresses from s, then truncates it to at most maxRunes runes (an
// ellipsis marks a cut). maxRunes <= 0 means no limit. Invalid UTF-8 is
// replaced, so the result is always valid UTF-8.
func Redact(s string, maxRunes int) string {
	if s == "" {
		return s
	}
	if !utf8.ValidString(s) {
		s = string([]rune(s)) // replaces invalid bytes with U+FFFD
	}
	for _, r := range redactions {
		s = r.re.ReplaceAllString(s, r.repl)
	}
	if maxRunes > 0 && utf8.RuneCountInString(s) > maxRunes {
		rs := []rune(s)
		s = string(rs[:maxRunes-1]) + "…"
	}
	return s
}
