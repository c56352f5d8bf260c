package deadletter

import (
	"bytes"
	"strings"
)

// Secret key names. IsSecretKey splits a name into lower-case words (at
// separators, camel case and acronyms: "X-Api-Key", "privateKey",
// "APIKey", "ssh key" and "ssh.key" are all "x api key", "private key",
// "api key", "ssh key"), then looks for a term in the words joined:
//
//   - a long term (password, secret, token, credential, apikey, privatekey,
//     sshkey, encryptionkey, ...) may start inside a word (dbpassword,
//     clientsecret, refreshtoken) or span words (api_key, ssh-key);
//   - a short term (pw, pwd, pass, auth, sid, otp, pin, session, creds, ...)
//     must start a word: "bypass", "passage", "author", "sidebar" and
//     "possession" are other words;
//
// and after either the word must end, possibly after a plural s (passwords,
// credentials, secrets, pins) or one of termSuffixes (passwordhash,
// tokenvalue, pwhash). "secretsmanager", "tokenizer", "passwordless",
// "keyword" and "signatureversion" continue into another word and are kept.
//
// A term followed by a word that describes it rather than holds it
// (token_count, password_min_length, session_timeout, token_type,
// secret_version: describeWords) is kept, and so is a token counted by an
// LLM (max_tokens, prompt_tokens, num_tokens: tokenCountWords before it):
// those values are evidence, never secrets. session, session_id and sid are
// secrets: in most web stacks a session id is a bearer credential, and a
// letter keeps its run and trace ids to correlate by.
var (
	longTerms = []string{
		"password", "passwd", "passphrase", "passcode", "secret", "token", "credential",
		"apikey", "privatekey", "privkey", "accesskey", "accountkey", "sshkey", "encryptionkey",
		"enckey", "decryptionkey", "signingkey", "masterkey", "sessionkey", "sharedkey",
		"hmackey", "cryptokey", "clientkey", "subscriptionkey", "authkey", "authorization",
		"cookie", "signature", "cardnumber", "creditcard", "securitycode", "sessionid", "sessid",
		"seedphrase", "recoveryphrase", "recoverycode", "backupcode", "pgpkey", "gpgkey", "rsakey",
		"socialsecurity",
	}
	shortTerms = []string{
		"pw", "pwd", "pass", "auth", "authn", "authz", "bearer", "sid", "sig", "otp", "totp",
		"hotp", "mfa", "2fa", "tfa", "hmac", "mnemonic", "pin", "cred", "session", "jwt", "ssn", "cvv", "cvc",
	}
	// termSuffixes may follow a term inside its word: secretkey, tokenvalue,
	// passwordhash, pwhash, pincode, sessionid.
	termSuffixes = []string{"key", "id", "confirm", "confirmation", "repeat", "value", "val", "hash", "code", "string", "str", "text", "data", "b64", "base64", "hex", "pem", "enc", "plain", "raw"}
	// describeWords, after a term, make the name describe the secret rather
	// than hold it.
	describeWords = wordSet("count", "counts", "length", "len", "size", "min", "max", "limit", "limits",
		"ttl", "timeout", "expiry", "expires", "expired", "expiration", "exp", "lifetime", "duration", "age",
		"type", "kind", "policy", "algorithm", "alg", "format", "enabled", "required", "rotation",
		"strength", "usage", "used", "remaining", "budget", "total", "estimate", "version", "changed",
		"updated", "created", "issued", "per", "rate", "index",
		// where or how a secret is found, not the secret: auth_method,
		// token_url, private_key_path, secret_name, secret_arn.
		"method", "mode", "scheme", "provider", "status", "url", "uri", "endpoint", "domain", "issuer",
		"audience", "scope", "scopes", "strategy", "mechanism", "path", "file", "filename", "location",
		"name", "arn")
	// tokenCountWords, before "token", make it a count of LLM tokens.
	tokenCountWords = wordSet("max", "min", "num", "n", "total", "input", "output", "prompt", "completion",
		"cached", "reasoning", "used", "remaining", "context", "estimated", "count", "generated", "usage")
	// tokenListWords, after "token", make it an LLM's tokens (token_ids).
	tokenListWords = wordSet("ids", "logprobs", "probs", "offsets", "usage")
	// flagWords before a term make the name a flag (has_password, is_auth).
	flagWords = wordSet("has", "is", "needs", "requires", "use", "uses")
)

func wordSet(ws ...string) map[string]bool {
	m := make(map[string]bool, len(ws))
	for _, w := range ws {
		m[w] = true
	}
	return m
}

// maxKeyBytes bounds the names IsSecretKey reads; a longer name is not a
// key (a text that happens to precede a ':').
const maxKeyBytes = 128

// IsSecretKey reports whether the values under an object key, a key=value
// name or a message attribute name are secrets whatever they hold: the name,
// normalized for case, camel case, separators ('-', '_', '.', space) and
// plurals, holds a secret term (password, pwd, pw, pass, secret, token,
// apikey, private key, access key, ssh key, encryption key, client secret,
// credential, auth, authorization, bearer, cookie, session, sid, signature,
// otp, pin, card number, cvv, ...) that nothing describes as a count, a
// length, a type or a time (token_count, max_tokens, session_timeout are
// kept). The eval export, the console, dlq_meta's texts and the key=value
// rule of Redact decide with it alike.
func IsSecretKey(name string) bool {
	if name == "" || len(name) > maxKeyBytes {
		return false
	}
	var buf [maxKeyBytes]byte
	// starts[i]: a word starts at joined[i]; hard[i]: after a separator
	// (not a change of case).
	var starts, hard [maxKeyBytes + 1]bool
	joined, words := splitKey(name, buf[:0], &starts, &hard)
	if len(joined) == 0 {
		return false
	}
	for _, t := range longTerms {
		if termAt(joined, &starts, &hard, words, t, false) {
			return true
		}
	}
	for _, t := range shortTerms {
		if termAt(joined, &starts, &hard, words, t, true) {
			return true
		}
	}
	return false
}

// splitKey appends name's letters and digits, lower-cased, to buf, marks
// where each word starts, and returns the words' bounds (at most 16).
func splitKey(name string, buf []byte, starts, hard *[maxKeyBytes + 1]bool) ([]byte, [][2]int) {
	var words [][2]int
	wordStart := -1
	for i := 0; i < len(name); i++ {
		c := name[i]
		isUpper, isLower, isDigit := 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9'
		if !isUpper && !isLower && !isDigit {
			wordStart = -1 // a separator: '-', '_', '.', space, quote, non-ASCII
			continue
		}
		newWord := wordStart < 0
		if newWord {
			hard[len(buf)] = true
		}
		if !newWord && isUpper && i > 0 {
			p := name[i-1]
			// camelCase: lower or digit then upper; APIKey: the last upper
			// of a run that a lower follows starts a word.
			if 'a' <= p && p <= 'z' || '0' <= p && p <= '9' ||
				'A' <= p && p <= 'Z' && i+1 < len(name) && 'a' <= name[i+1] && name[i+1] <= 'z' {
				newWord = true
			}
		}
		if newWord {
			if len(words) > 0 {
				words[len(words)-1][1] = len(buf)
			}
			starts[len(buf)] = true
			words = append(words, [2]int{len(buf), -1})
			wordStart = len(buf)
		}
		buf = append(buf, lowerASCII(c))
	}
	if len(words) > 0 {
		words[len(words)-1][1] = len(buf)
	}
	starts[len(buf)], hard[len(buf)] = true, true
	return buf, words
}

// termAt reports whether term occurs in joined as a secret: where it may
// start, what may follow it in its word, and no describing word after it.
// A term that starts a word may span words (api_key); one that starts inside
// a word may span only changes of case (a long term: dbpassword,
// secretACCESSkey), or must end its word (a short term: dbpass, adminpw,
// but not one of the English words of shortTermWords: bypass, spin).
func termAt(joined []byte, starts, hard *[maxKeyBytes + 1]bool, words [][2]int, term string, short bool) bool {
	for from := 0; from+len(term) <= len(joined); {
		i := bytes.Index(joined[from:], []byte(term))
		if i < 0 {
			return false
		}
		i += from
		from = i + 1
		j := i + len(term)
		if !starts[i] {
			crosses := false
			for k := i + 1; k < j; k++ {
				if hard[k] {
					crosses = true
					break
				}
			}
			if crosses {
				continue // compass_word is not a password
			}
		}
		// The rest of the word the term ends in: to the next change of
		// case (passwordHash) or, for a name in mixed case, to the next
		// separator (oTpcODe).
		end := j
		for end < len(joined) && !starts[end] {
			end++
		}
		if !restAllowed(string(joined[j:end])) {
			for end = j; end < len(joined) && !hard[end]; end++ {
			}
			if !restAllowed(string(joined[j:end])) {
				continue
			}
		}
		if short && !starts[i] && !shortTermEnds(joined, starts, i, j, end, term) {
			continue
		}
		if describedAfter(joined, words, end, describeWords) || flaggedBefore(joined, words, i) ||
			term == "token" && (countedBefore(joined, words, i) || describedAfter(joined, words, end, tokenListWords)) {
			continue
		}
		return true
	}
	return false
}

// shortTermWords are the English words that end in a short term, by the
// letters before it in the word: they are not secrets (bypass, compass,
// spin, hairpin, possession, sacred).
var shortTermWords = map[string][]string{
	"pass":    {"by", "com", "sur", "tres", "over", "under", "im", "encom"},
	"pin":     {"s", "hair", "linch", "lynch", "king", "tie", "bobby", "safety", "push", "drawing"},
	"session": {"ob", "pos"},
	"cred":    {"sa"},
	"sig":     {},
	"auth":    {},
}

// shortTermEnds reports whether the short term at joined[i:j], inside a
// word, ends that word (end is the word's end) after letters that do not
// make it an English word. Terms that end no English word (pw, pwd, otp,
// sid, jwt) need no list; the others are allowed inside a word only when
// shortTermWords lists their English words.
func shortTermEnds(joined []byte, starts *[maxKeyBytes + 1]bool, i, j, end int, term string) bool {
	if j != end && !isDigits(string(joined[j:end])) && string(joined[j:end]) != "s" {
		return false // pwhash is a word of its own; dbpwhash is not read
	}
	ws := i
	for ws > 0 && !starts[ws] {
		ws--
	}
	before := string(joined[ws:i])
	englishEnds, listed := shortTermWords[term]
	switch term {
	case "pw", "pwd", "otp", "totp", "hotp", "sid", "jwt", "ssn", "cvv", "cvc", "mfa", "creds", "authn", "authz":
		return true
	}
	if !listed {
		return false // bearer, session's kin: only as words of their own
	}
	for _, e := range englishEnds {
		if strings.HasSuffix(before, e) {
			return false
		}
	}
	return true
}

// restAllowed reports whether rest may follow a term in its word: nothing,
// digits (password2), a plural s, or a suffix of termSuffixes (itself
// possibly plural or followed by digits).
func restAllowed(rest string) bool {
	if rest == "" || rest == "s" || isDigits(rest) {
		return true
	}
	for _, suf := range termSuffixes {
		if strings.HasPrefix(rest, suf) {
			r := rest[len(suf):]
			if r == "" || r == "s" || isDigits(r) {
				return true
			}
		}
	}
	return false
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// describedAfter reports whether a word starting at or after end describes
// the term before it.
func describedAfter(joined []byte, words [][2]int, end int, describe map[string]bool) bool {
	for _, w := range words {
		if w[0] >= end && describe[string(joined[w[0]:w[1]])] {
			return true
		}
	}
	return false
}

// countedBefore reports whether a word before i makes a token a count.
func countedBefore(joined []byte, words [][2]int, i int) bool {
	for _, w := range words {
		if w[1] <= i && tokenCountWords[string(joined[w[0]:w[1]])] {
			return true
		}
	}
	return false
}

// flaggedBefore reports whether the word just before i makes the name a
// flag (has_password).
func flaggedBefore(joined []byte, words [][2]int, i int) bool {
	for k, w := range words {
		if w[1] <= i && (k+1 == len(words) || words[k+1][0] >= i) {
			return flagWords[string(joined[w[0]:w[1]])]
		}
	}
	return false
}
