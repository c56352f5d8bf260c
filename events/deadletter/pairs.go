package deadletter

import "strings"

// pairTriggers are the stems of the secret key names (IsSecretKey) that,
// followed by the rest of a key and then ':' or '=', make Redact look at
// the text's key=value pairs.
var pairTriggers = []string{
	"pass", "pw", "secret", "token", "cred", "auth", "bearer", "cookie", "session", "sid",
	"key", "sig", "otp", "mfa", "pin", "cvv", "cvc", "card", "ssn", "jwt", "security", "phrase", "recovery", "hmac", "2fa", "tfa", "mnemonic", "backup",
}

// keyTails are the key words that may take the words before them (at most
// two, a single space between) as their name in free text: "private key:
// ...", "access key id = ...", "pin code: ...", "password hash: ...".
var keyTails = func() map[string]bool {
	m := wordSet("number", "keys")
	for _, s := range termSuffixes {
		m[s] = true
	}
	return m
}()

// redactPairs replaces the value of every key=value, key: value and
// "key": value pair of s whose key IsSecretKey holds. A key is the quoted
// string or the run of letters, digits, '_', '-' and '.' before the
// separator (with up to two words before a key word such as "key" or "id":
// "private key: ..."); a value is a quoted string (also an escaped one,
// \"...\"), an array or object (to its closing bracket), or the run of
// characters up to white space or one of ,;&}"'\. A value that does not end
// (a cut text) is redacted to the end of s. Every pair is read in s as it
// was, the values of other keys included (error=password=x); the pairs
// inside a secret's value go with it.
func redactPairs(s string) string {
	type span struct {
		from, to int
		repl     string
	}
	var spans []span
	for pos := 0; pos < len(s); {
		k := strings.IndexAny(s[pos:], ":=>")
		if k < 0 {
			break
		}
		p := pos + k
		pos = p + 1
		if s[p] == ':' && strings.HasPrefix(s[p+1:], "//") {
			continue // a URL's scheme; its credentials are the URL rule's
		}
		if s[p] == '>' {
			// <password>value</password>: the element's text.
			if !secretElementBefore(s, p) {
				continue
			}
			end := strings.IndexByte(s[p+1:], '<')
			if end < 0 {
				end = len(s) - p - 1
			}
			if end > 0 && !strings.HasPrefix(s[p+1:], "[REDACTED") {
				spans = append(spans, span{p + 1, p + 1 + end, "[REDACTED]"})
				pos = p + 1 + end
			}
			continue
		}
		quote, ok := secretKeyBefore(s, p)
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
		repl := "[REDACTED]"
		switch open {
		case `\"`:
			repl = `\"[REDACTED]\"`
		case `"`, `'`:
			repl = open + "[REDACTED]" + open
		case "[", "{":
			if quote == `\"` || quote == `"` {
				repl = quote + "[REDACTED]" + quote
			}
		}
		spans = append(spans, span{v, end, repl})
		// The pairs inside the value go with it: each byte of s is read
		// once by a value, however deeply pairs nest.
		pos = end
	}
	if spans == nil {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	for _, sp := range spans {
		b.WriteString(s[last:sp.from])
		b.WriteString(sp.repl)
		last = sp.to
	}
	b.WriteString(s[last:])
	return b.String()
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }

func isKeyByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.'
}

// secretKeyBefore reports whether the key that the separator at s[p]
// follows names a secret, and the quote around it ("", `"`, `'` or `\"`).
// A bare key that ends in a key word ("key", "id", "hash", ...) is also read
// with the one and two words before it ("private key", "access key id").
func secretKeyBefore(s string, p int) (quote string, secret bool) {
	k := p - 1
	for k >= 0 && isSpace(s[k]) {
		k--
	}
	if k < 0 {
		return "", false
	}
	if c := s[k]; c == '"' || c == '\'' {
		quote = string(c)
		keyEnd := k
		if c == '"' && k > 0 && s[k-1] == '\\' {
			keyEnd, quote = k-1, `\"`
		}
		from := max(0, keyEnd-maxKeyBytes-1)
		open := strings.LastIndexByte(s[from:keyEnd], c)
		if open < 0 {
			return "", false
		}
		return quote, IsSecretKey(s[from+open+1 : keyEnd])
	}
	start := k + 1
	for start > 0 && k+1-start < maxKeyBytes && isKeyByte(s[start-1]) {
		start--
	}
	if start > k || start > 0 && s[start-1] == '/' {
		return "", false // no key, or a path's last name (open /etc/passwd: ...)
	}
	key := s[start : k+1]
	if IsSecretKey(key) {
		return "", true
	}
	if !keyTails[strings.ToLower(key)] {
		return "", false
	}
	// "private key: ...": the words before a key word name it.
	for range 2 {
		if start-1 <= 0 || s[start-1] != ' ' {
			break
		}
		w := start - 1
		for w > 0 && start-w < maxKeyBytes && isKeyByte(s[w-1]) {
			w--
		}
		if w == start-1 {
			break
		}
		start = w
		if IsSecretKey(s[start : k+1]) {
			return "", true
		}
	}
	return "", false
}

// secretElementBefore reports whether the '>' at s[p] closes an XML or
// HTML start tag without attributes whose name IsSecretKey holds
// (<password>, <api-key>).
func secretElementBefore(s string, p int) bool {
	start := p
	for start > 0 && p-start < maxKeyBytes && isKeyByte(s[start-1]) {
		start--
	}
	return start < p && start > 0 && s[start-1] == '<' && IsSecretKey(s[start:p])
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
			switch s[k] {
			case '\\':
				k++
			case '"':
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
