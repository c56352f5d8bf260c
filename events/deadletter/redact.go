package deadletter

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// A redaction rule replaces what its pattern matches with a fixed marker that
// names what was removed, so an operator still sees the shape of the error
// without the secret. The pattern runs only when one of its triggers (ASCII,
// matched without regard to case) occurs in the text, so an ordinary error
// text costs one pass over its bytes, not a dozen regular expressions.
//
// These rules are the one rule set of the module: the dead-letter metadata,
// the worker's logs and triage's eval export (with IsSecretKey for object
// keys) all redact through them.
type redaction struct {
	triggers []string
	// also, when set, must occur too.
	also string
	// longRun triggers the rule on 40 consecutive base64 or hex characters.
	longRun bool
	// digitRun triggers the rule on 13 digits in a row, single spaces or
	// dashes between them allowed (a payment card number).
	digitRun bool
	// assigned counts a trigger only when a key suffix, a quote, spaces and
	// then ':' or '=' follow it (key=value pairs).
	assigned bool
	re       *regexp.Regexp
	repl     string
	// fn, when set, replaces each match instead of repl.
	fn func(s string, loc []int) string
	// apply, when set, is the whole rule (no pattern).
	apply func(s string) string
}

var redactions = []redaction{
	// PEM blocks (private keys, certificates, PGP blocks), whole: from the
	// BEGIN line to the END line whatever the length of the lines between,
	// and to the end of the text when the END line is missing (a cut text).
	{
		triggers: []string{"-begin", "- begin"},
		re:       regexp.MustCompile(`(?is)-{3,}[ \t]*BEGIN[ A-Z0-9]*-*.*?(?:-{3,}[ \t]*END[ A-Z0-9]*-*|$)`),
		repl:     "[REDACTED_PEM]",
	},
	// The tail of a PEM block whose BEGIN line was cut off: the lines of
	// base64 before an END line (real or escaped line breaks).
	{
		triggers: []string{"-end"},
		re:       regexp.MustCompile(`(?i)(?:[A-Za-z0-9+/=]+(?:\\r|\\n|[ \t]*[\r\n])+)+-{3,}[ \t]*END[ A-Z0-9]*-*`),
		repl:     "[REDACTED_PEM]",
	},
	// Authorization headers: the scheme and the credential after it.
	{
		triggers: []string{"authorization"},
		re:       regexp.MustCompile(`(?i)\b((?:proxy-)?authorization)((?:\\?")?\s*[:=]\s*(?:\\?")?)(?:(?:bearer|basic|digest|negotiate|token|aws4-hmac-sha256)\s+)?[^\s",;)\\\[{][^\s",;)\\]*`),
		repl:     "${1}${2}[REDACTED]",
	},
	// Bearer and basic credentials anywhere else.
	{
		triggers: []string{"bearer", "basic"},
		re:       regexp.MustCompile(`(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}`),
		repl:     "$1 [REDACTED]",
	},
	// JSON Web Tokens.
	{
		triggers: []string{"eyj"},
		re:       regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*`),
		repl:     "[REDACTED_JWT]",
	},
	// AWS access key ids, also inside an identifier (_AKIA..., AKIA..._x):
	// no word boundary, which '_' would defeat.
	{
		triggers: []string{"akia", "asia"},
		re:       regexp.MustCompile(`(?:AKIA|ASIA)[A-Z0-9]{16}`),
		repl:     "[REDACTED_AWS_KEY]",
	},
	// Provider API keys: sk-..., pk-..., rk-... (OpenAI, Anthropic, Stripe).
	{
		triggers: []string{"sk-", "pk-", "rk-", "sk_", "pk_", "rk_"},
		re:       regexp.MustCompile(`\b(sk|pk|rk)[-_][A-Za-z0-9_-]{16,}`),
		repl:     "[REDACTED_KEY]",
	},
	// Provider tokens with a known prefix, shorter than the long-run rule:
	// Slack (xox?-, xapp-), GitHub, GitLab, Hugging Face (hf_), npm (npm_)
	// and Google API keys (AIza + 35).
	{
		triggers: []string{"xox", "xapp-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "hf_", "npm_", "aiza"},
		re:       regexp.MustCompile(`\b(?:(?:xox[abprse]|xapp|ghp|gho|ghu|ghs|ghr|github_pat|glpat)[-_][A-Za-z0-9_-]{10,}|(?:hf|npm)_[A-Za-z0-9]{20,}|AIza[0-9A-Za-z_-]{35})`),
		repl:     "[REDACTED_KEY]",
	},
	// Credentials in URLs: scheme://user:password@host. The password may
	// hold '/' (many clients split at the last '@', not at the first '/'),
	// so it runs to the '@', never across white space or a quote.
	{
		triggers: []string{"://"}, also: "@",
		re:   regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.-]*://)[^/\s:@"'<>\\]*:[^\s@"'<>\\]+@`),
		repl: "${1}[REDACTED]@",
	},
	// Signed URLs: the signature, credential and token query parameters.
	{
		triggers: []string{"?", "&"}, also: "=",
		re:   regexp.MustCompile(`(?i)([?&](?:x-amz-signature|x-amz-credential|x-amz-security-token|x-goog-signature|x-goog-credential|sig|signature|token|access_token|key|api_key|code)=)[^&\s#"'\\]+`),
		repl: "${1}[REDACTED]",
	},
	// key=value, key: value and "key": "value" pairs whose key names a
	// secret (IsSecretKey), also inside escaped JSON (a %q-formatted body:
	// \"password\":\"...\"), query strings (?api_key=...) and headers
	// (X-Api-Key: ...): the value whole, a quoted string, an array or an
	// object included.
	{
		triggers: pairTriggers, assigned: true,
		apply: redactPairs,
	},
	// Command-line flags: --password hunter2, --api-key sk-... (with '='
	// they are pairs).
	{
		triggers: []string{"--"},
		re:       regexp.MustCompile(`(--[A-Za-z][A-Za-z0-9_.-]*)([ \t]+)([^\s"'\\-][^\s"'\\]*|"[^"]*"|'[^']*')`),
		fn: func(s string, loc []int) string {
			if !IsSecretKey(s[loc[2]:loc[3]]) || strings.HasPrefix(s[loc[6]:loc[7]], "[REDACTED") {
				return s[loc[0]:loc[1]]
			}
			return s[loc[2]:loc[5]] + "[REDACTED]"
		},
	},
	// Email addresses.
	{
		triggers: []string{"@"},
		re:       regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}`),
		repl:     "[REDACTED_EMAIL]",
	},
	// Payment card numbers, plain, spaced or dashed, that pass the Luhn
	// check and start like a card (2-6): order ids and epoch times survive.
	{
		digitRun: true,
		apply:    redactCards,
	},
	// Long opaque strings (40+ characters of base64 or hex with both letters
	// and digits) that look like key material. Paths and words are kept.
	{
		longRun: true,
		re:      regexp.MustCompile(`[A-Za-z0-9+/_-]{40,}={0,2}`),
		fn: func(s string, loc []int) string {
			m := s[loc[0]:loc[1]]
			if strings.ContainsAny(m, "0123456789") && strings.IndexFunc(m, func(r rune) bool { return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' }) >= 0 {
				return "[REDACTED_BLOB]"
			}
			return m
		},
	},
}

// trigger is one trigger of the rule with bit rule.
type trigger struct {
	s        string
	rule     uint32
	assigned bool
}

// triggersByFirst lists the triggers by their first byte; secondBytes[c]
// is the set of the second bytes of the triggers that start with c (a
// one-byte trigger puts all of them in), so that most bytes of a text cost
// two table reads.
var triggersByFirst, secondBytes = func() (t [256][]trigger, second [256][4]uint64) {
	for i, r := range redactions {
		for _, s := range r.triggers {
			t[s[0]] = append(t[s[0]], trigger{s, 1 << i, r.assigned})
			if len(s) == 1 {
				second[s[0]] = [4]uint64{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}
			} else {
				second[s[0]][s[1]>>6] |= 1 << (s[1] & 63)
			}
		}
	}
	return t, second
}()

// longRunRules has the bits of the rules triggered by long runs.
var longRunRules = func() (m uint32) {
	for i, r := range redactions {
		if r.longRun {
			m |= 1 << i
		}
	}
	return m
}()

func lowerASCII(c byte) byte { return lowerTable[c] }

// lowerTable folds ASCII upper case to lower case: a table read was ~10%
// faster than the comparisons in the byte loop of triggered.
var lowerTable = func() (t [256]byte) {
	for i := range t {
		t[i] = byte(i)
		if 'A' <= i && i <= 'Z' {
			t[i] += 'a' - 'A'
		}
	}
	return t
}()

// hasPrefixFold reports whether s starts with the lower-case ASCII prefix.
func hasPrefixFold(s, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		if lowerASCII(s[i]) != prefix[i] {
			return false
		}
	}
	return true
}

func containsFold(s, sub string) bool { return indexFold(s, sub) >= 0 }

// indexFold is the index of the first lower-case ASCII sub in s, matched
// without regard to case, or -1.
func indexFold(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if hasPrefixFold(s[i:], sub) {
			return i
		}
	}
	return -1
}

// assignedAt reports whether s[i:] is a key's rest and then ':', '=' or
// '>' (an XML element):
// letters, digits, '_', '-', '.' and single spaces between them (a quoted
// "access key id"), at most 64 bytes, an optional quote (or escaped quote),
// white space.
func assignedAt(s string, i int) bool {
	for n := 0; i < len(s) && n < 64; n++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.' ||
			c == ' ' && i+1 < len(s) && isKeyByte(s[i+1]) && i > 0 && isKeyByte(s[i-1]) {
			i++
			continue
		}
		break
	}
	if i+1 < len(s) && s[i] == '\\' && s[i+1] == '"' {
		i += 2 // escaped JSON: \"key\":
	} else if i < len(s) && (s[i] == '"' || s[i] == '\'') {
		i++
	}
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r' || s[i] == '\f') {
		i++
	}
	return i < len(s) && (s[i] == ':' || s[i] == '=' || s[i] == '>')
}

// triggered returns the bits of the rules whose triggers occur in s, in
// one pass that also counts the runs of base64 and hex characters and of
// digits (a second pass for them cost ~20% of Redact on a plain error text).
func triggered(s string) uint32 {
	var fired uint32
	run, digits := 0, 0
	prevDigit := false
	for i := 0; i < len(s); i++ {
		c := lowerASCII(s[i])
		class := byteClass[c]
		if class&classRun != 0 {
			if run++; run >= longRunBytes {
				fired |= longRunRules
			}
		} else {
			run = 0
		}
		if class&classDigit != 0 {
			if digits++; digits >= minCardDigits {
				fired |= digitRunRules
			}
			prevDigit = true
		} else {
			if class&classSep == 0 || !prevDigit {
				digits = 0 // one space or dash between digits keeps the run
			}
			prevDigit = false
		}
		if triggersByFirst[c] == nil {
			continue
		}
		if i+1 < len(s) {
			if c2 := lowerASCII(s[i+1]); secondBytes[c][c2>>6]&(1<<(c2&63)) == 0 {
				continue
			}
		} else if secondBytes[c] != [4]uint64{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)} {
			continue
		}
		for _, t := range triggersByFirst[c] {
			if hasPrefixFold(s[i:], t.s) && (!t.assigned || assignedAt(s, i+len(t.s))) {
				fired |= t.rule
			}
		}
	}
	return fired
}

// digitRunRules has the bits of the rules triggered by runs of digits.
var digitRunRules = func() (m uint32) {
	for i, r := range redactions {
		if r.digitRun {
			m |= 1 << i
		}
	}
	return m
}()

// longRunBytes is the length of a run of base64 and hex characters that
// triggers the long-run rules.
const longRunBytes = 40

// Byte classes of triggered, by the byte folded to lower case: the base64
// and hex alphabet (long runs), digits and the separators of card groups.
const (
	classRun = 1 << iota
	classDigit
	classSep
)

var byteClass = func() (t [256]uint8) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = classRun
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = classRun | classDigit
	}
	for _, c := range "+/_-" {
		t[c] = classRun
	}
	t[' '] |= classSep
	t['-'] |= classSep
	return t
}()

// redactWindow bounds the bytes of error text the patterns read when the
// result is limited (the limit must be far below it).
const redactWindow = 16 * 1024

// redact is Redact without the memo (redactmemo.go).
func redact(s string, maxRunes int) string {
	if s == "" {
		return s
	}
	if !utf8.ValidString(s) {
		s = string([]rune(s)) // replaces each invalid byte with U+FFFD
	}
	// With a limit, the patterns need not read a megabyte of error text to
	// keep 256 characters of it: they run on a window, cut at whitespace
	// (a secret has none) so that no secret is cut in two.
	cut := false
	if maxRunes > 0 && len(s) > redactWindow && maxRunes*utf8.UTFMax*8 <= redactWindow {
		end := redactWindow
		if k := strings.LastIndexAny(s[end-redactWindow/8:end], " \t\r\n"); k >= 0 {
			end = end - redactWindow/8 + k
		}
		for end > 0 && !utf8.RuneStart(s[end]) {
			end--
		}
		s, cut = s[:end], true
	}
	fired := triggered(s)
	for i, r := range redactions {
		if fired&(1<<i) == 0 || r.also != "" && !containsFold(s, r.also) {
			continue
		}
		var out string
		switch {
		case r.apply != nil:
			out = r.apply(s)
		case r.fn != nil:
			out = replaceFunc(r.re, s, r.fn)
		default:
			out = r.re.ReplaceAllString(s, r.repl)
		}
		if out != s {
			s = out
			fired = triggered(s)
		}
	}
	// A text of at most maxRunes bytes has at most maxRunes runes: the
	// common short error text is not counted.
	if maxRunes > 0 && (cut || len(s) > maxRunes) {
		if n := utf8.RuneCountInString(s); n > maxRunes || cut {
			rs := []rune(s)
			s = string(rs[:min(n, maxRunes-1)]) + "…"
		}
	}
	return s
}

// replaceFunc replaces every match of re in s with fn(s, submatch indexes).
func replaceFunc(re *regexp.Regexp, s string, fn func(string, []int) string) string {
	locs := re.FindAllStringSubmatchIndex(s, -1)
	if locs == nil {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	for _, loc := range locs {
		b.WriteString(s[last:loc[0]])
		b.WriteString(fn(s, loc))
		last = loc[1]
	}
	b.WriteString(s[last:])
	return b.String()
}
