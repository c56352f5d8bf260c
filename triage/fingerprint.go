package triage

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strconv"
	"strings"

	"github.com/agentdlq/agentdlq/events/deadletter"
)

// fingerprintVersion is mixed into every fingerprint: changing how
// fingerprints are made changes the version, so old and new never collide.
const fingerprintVersion = "fp1"

// FingerprintLen is the length of a fingerprint: 16 hexadecimal characters.
// An operator may name a group by any unique prefix of at least 8
// (redrive refuses a shorter one).
const FingerprintLen = 16

// fingerprintOf is the stable hash (16 hex digits of SHA-256) of what makes
// dead letters "the same problem": the reason, the tool, its version, the
// task schema version and the normalised error signature (see signatureOf).
// Message ids, tenants, timestamps and bodies are not part of it.
func fingerprintOf(reason deadletter.Reason, tool, toolVersion string, schemaVersion int, signature string) string {
	h := sha256.New()
	for _, s := range []string{fingerprintVersion, string(reason), tool, toolVersion, strconv.Itoa(schemaVersion), signature} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:FingerprintLen]
}

// Normalisation rules, in order: what varies between occurrences of the same
// error is replaced by a placeholder.
var normalisers = []struct {
	re   *regexp.Regexp
	repl string
}{
	// Quoted values: "…", '…', `…`.
	{regexp.MustCompile(`"[^"]*"|'[^']*'|` + "`[^`]*`"), "<q>"},
	// UUIDs.
	{regexp.MustCompile(`(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`), "<uuid>"},
	// Timestamps (RFC 3339 and the like).
	{regexp.MustCompile(`\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?`), "<time>"},
	// Hex: 0x… and runs of 8+ hex digits (those without a digit are words).
	{regexp.MustCompile(`(?i)\b0x[0-9a-f]+\b`), "<hex>"},
	{regexp.MustCompile(`(?i)\b[0-9a-f]*[0-9][0-9a-f]*\b`), hexOrKeep},
	// Identifiers: words that start with a letter and hold a digit (msg_7f3a, task-42, run42).
	{regexp.MustCompile(`\b[A-Za-z_][\w.-]*\d[\w.-]*`), "<id>"},
	// Numbers.
	{regexp.MustCompile(`\d+(\.\d+)?`), "<n>"},
}

// hexOrKeep marks the rule whose matches become <hex> only when 8+ long.
const hexOrKeep = "\x00hex"

var spaces = regexp.MustCompile(`\s+`)

// signatureOf is the normalised error signature of a dead letter: the error
// code as it is, then the (already redacted) error text with quoted values,
// UUIDs, timestamps, hex, numbers and identifiers replaced by placeholders and
// whitespace collapsed, so that "fetch 7f3a… failed after 3 tries" and
// "fetch 9b1c… failed after 5 tries" make one signature.
func signatureOf(code, text string) string {
	s := normaliseError(text)
	switch {
	case code == "":
		return s
	case s == "":
		return code
	default:
		return code + ": " + s
	}
}

// normaliseError strips the varying parts of an error text; see signatureOf.
func normaliseError(text string) string {
	if text == "" {
		return ""
	}
	s := text
	for _, n := range normalisers {
		if n.repl == hexOrKeep {
			s = n.re.ReplaceAllStringFunc(s, func(m string) string {
				if len(m) >= 8 {
					return "<hex>"
				}
				return m
			})
			continue
		}
		s = n.re.ReplaceAllString(s, n.repl)
	}
	return strings.TrimSpace(spaces.ReplaceAllString(s, " "))
}
