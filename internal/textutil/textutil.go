// Package textutil holds the small text helpers several packages need and
// none can export: cutting a text to a byte limit without cutting a rune in
// two (an SQS attribute, a log value, an audit record must stay UTF-8),
// and counting things in words a reader expects ("1 group", "2 groups").
package textutil

import (
	"strconv"
	"unicode/utf8"
)

// Count is n and the noun in the number n takes: "1 group", "0 groups",
// "2 dead letters" (one: "group"; many: "groups").
func Count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// Truncate cuts s to at most n bytes, at a rune boundary: the cut never
// leaves half a UTF-8 sequence, so it may be up to three bytes short of
// n. s is returned whole when it fits; nothing marks a cut.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
