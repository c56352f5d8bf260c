package deadletter

import "sync"

// Redact removes tokens, keys, authorization headers, credentials in URLs and
// email addresses from s, then truncates it to at most maxRunes runes (an
// ellipsis marks a cut). maxRunes <= 0 means no limit; with a limit, only
// the first 16 KiB of s (cut at whitespace) are read. Invalid UTF-8 is
// replaced, so the result is always valid UTF-8.
//
// The result for a short text is remembered (redactMemoEntries texts of at
// most redactMemoMaxBytes): a text that holds a trigger runs regular
// expressions, 10–30 µs on a 130-byte text here, several times the cost of
// processing a whole record, and the dead letters of one bug carry one text.
// A worker redacts each dead letter's text twice (for its log line, then
// EncodeDeadLetter again on what it is given), and the second call on the
// first's result is remembered too.
func Redact(s string, maxRunes int) string {
	if s == "" || len(s) > redactMemoMaxBytes {
		return redact(s, maxRunes)
	}
	k := redactKey{s, maxRunes}
	redactMemo.Lock()
	out, ok := redactMemo.m[k]
	redactMemo.Unlock()
	if ok {
		return out
	}
	out = redact(s, maxRunes)
	redactMemo.Lock()
	if len(redactMemo.m) >= redactMemoEntries {
		clear(redactMemo.m) // the next texts start over; no eviction order to keep
	}
	redactMemo.m[k] = out
	redactMemo.Unlock()
	return out
}

const (
	redactMemoEntries  = 512
	redactMemoMaxBytes = 2048
)

type redactKey struct {
	s        string
	maxRunes int
}

var redactMemo = struct {
	sync.Mutex
	m map[redactKey]string
}{m: make(map[redactKey]string, redactMemoEntries)}
