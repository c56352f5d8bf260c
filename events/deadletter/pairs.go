package deadletter

import "strings"

// pairTriggers are the stems of the secret key names (IsSecretKey) that,
// followed by the rest of a key and then ':' or '=', make Redact look at
// the text's key=value pairs.
var pairTriggers = []string{
	"pass", "pw", "secret", "token", "cred", "auth", "bearer", "cookie", "session", "sid",
	"key", "sig", "otp", "pin", "cvv", "cvc", "card", "ssn", "jwt", "security",
}

// twoWordTails are the key words that may take the word before them, a
// space between, as their name in free text: "private key: ...",
// "api key = ...", "pin code: ...".
var twoWordTails = wordSet("key", "keys", "id", "number", "code")

// redactPairs replaces the value of every key=value, key: value and
// "key": value pair of s whose key IsSecretKey holds. A key is the quoted
// string or the run of letters, digits, '_', '-' and '.' before the
// separator; a value is a quoted string (also an escaped one, \"...\"), an
// array or object (to its closing bracket), or the run of characters up to
// white space or one of ,;&}"'\. A value that does not end (a cut text) is
// redacted to the end of s. The values of other keys are read too, so a
// pair inside them (error=password=x) is found.
func redactPairs(s string) string {
	var b strings.Builder
	last := 0
	for pos := 0; pos < len(s); {
		k := strings.IndexAny(s[pos:], ":=")
		if k < 0 {
			break
		}
		p := pos + k
		pos = p + 1
		if s[p] == ':' && strings.HasPrefix(s[p+1:], "//") {
			continue // a URL's scheme; its credentials are the URL rule's
		}
		key, quote, ok := keyBefore(s, p, last)
		if !ok {
			continue
		}
		v := p + 1
		for v < len(s) && isSpace(s[v]) {
			v++
		}
		end, open := valueEnd(s, v)
		if end <= v || strings.HasPrefix(s[v:], "[REDACTED") || strings.HasPrefix(s[v+len(open):], "[REDACTED") {
			continue
		}
		if !IsSecretKey(key) {
			continue
		}
		if b.Len() == 0 {
			b.Grow(len(s))
		}
		b.WriteString(s[last:v])
		switch open {
		case `\"`:
			b.WriteString(`\"[REDACTED]\"`)
		case `"`, `'`:
			b.WriteString(open + "[REDACTED]" + open)
		case "[", "{":
			switch quote {
			case `\"`, `"`:
				b.WriteString(quote + "[REDACTED]" + quote)
			default:
				b.WriteString("[REDACTED]")
			}
		default:
			b.WriteString("[REDACTED]")
		}
		last, pos = end, end
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }

func isKeyByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.'
}

// keyBefore returns the key that the separator at s[p] follows, not before
// index min, and the quote around it ("", `"`, `'` or `\"`).
func keyBefore(s string, p, min int) (key, quote string, ok bool) {
	k := p - 1
	for k >= min && isSpace(s[k]) {
		k--
	}
	if k < min {
		return "", "", false
	}
	if c := s[k]; c == '"' || c == '\'' {
		quote = string(c)
		keyEnd := k
		if c == '"' && k > min && s[k-1] == '\\' {
			keyEnd, quote = k-1, `\"`
		}
		from := max(min, keyEnd-maxKeyBytes-1)
		open := strings.LastIndexByte(s[from:keyEnd], c)
		if open < 0 {
			return "", "", false
		}
		return s[from+open+1 : keyEnd], quote, true
	}
	start := k + 1
	for start > min && k+1-start < maxKeyBytes && isKeyByte(s[start-1]) {
		start--
	}
	if start > k {
		return "", "", false
	}
	key = s[start : k+1]
	// "private key: ...": the word before a key word names it.
	if twoWordTails[strings.ToLower(key)] && start-1 > min && s[start-1] == ' ' {
		w := start - 1
		for w > min && start-w < maxKeyBytes && isKeyByte(s[w-1]) {
			w--
		}
		if w < start-1 {
			key = s[w : k+1]
		}
	}
	return key, "", true
}

// valueEnd returns the end of the value that starts at s[v] and how it
// opens (`\"`, `"`, `'`, "[", "{" or "" for a bare value); end is v when
// there is none.
func valueEnd(s string, v int) (end int, open string) {
	if v >= len(s) {
		return v, ""
	}
	switch c := s[v]; {
	case c == '\\' && v+1 < len(s) && s[v+1] == '"':
		// Escaped JSON: \"...\", an escaped quote inside is \\\".
		for k := v + 2; k < len(s); {
			switch {
			case s[k] == '\\' && k+1 < len(s) && s[k+1] == '"':
				return k + 2, `\"`
			case s[k] == '\\' && strings.HasPrefix(s[k:], `\\\`) && k+3 < len(s):
				k += 4
			case s[k] == '\\':
				k += 2
			case s[k] == '"':
				return k + 1, `\"`
			default:
				k++
			}
		}
		return len(s), `\"`
	case c == '"':
		for k := v + 1; k < len(s); k++ {
			if s[k] == '\\' {
				k++
			} else if s[k] == '"' {
				return k + 1, `"`
			}
		}
		return len(s), `"`
	case c == '\'':
		if k := strings.IndexByte(s[v+1:], '\''); k >= 0 {
			return v + 1 + k + 1, `'`
		}
		return len(s), `'`
	case c == '[' || c == '{':
		return bracketEnd(s, v), string(c)
	}
	k := v
	for k < len(s) && !isSpace(s[k]) && !strings.ContainsRune(`,;&}"'\`, rune(s[k])) {
		k++
	}
	return k, ""
}

// bracketEnd returns the index after the bracket that closes the one at
// s[v], skipping quoted strings (plain or escaped JSON: a string closes on
// a quote after as many backslashes as opened it), or len(s).
func bracketEnd(s string, v int) int {
	depth, inStr, strBS := 0, false, 0
	for k := v; k < len(s); k++ {
		c := s[k]
		if c == '"' {
			bs := 0
			for j := k - 1; j >= v && s[j] == '\\'; j-- {
				bs++
			}
			if !inStr {
				inStr, strBS = true, bs
			} else if bs == strBS {
				inStr = false
			}
			continue
		}
		if inStr {
			continue
		}
		switch c {
		case '[', '{':
			depth++
		case ']', '}':
			if depth--; depth == 0 {
				return k + 1
			}
		}
	}
	return len(s)
}
