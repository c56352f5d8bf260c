package deadletter

import "strings"

// Payment card numbers have 13 to 19 digits (ISO/IEC 7812), written plain
// or in groups of 3 to 6 digits split by one space or one dash.
const (
	minCardDigits = 13
	maxCardDigits = 19
)

// redactCards replaces the payment card numbers in s with [REDACTED_CARD]. A
// card number is a run of 13 to 19 digits, plain or grouped with one kind of
// separator, whose first digit names a card industry (2 to 6: Mastercard,
// Amex, Diners, JCB, Visa, Discover, UnionPay) and that passes the Luhn
// check, so that order ids, epoch times in ms or ns (which start with 1) and
// nine in ten other long numbers are kept.
func redactCards(s string) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); {
		if !isDigit(s[i]) || i > 0 && isDigit(s[i-1]) {
			i++
			continue
		}
		if end := cardAt(s, i); end > 0 {
			if b.Len() == 0 {
				b.Grow(len(s))
			}
			b.WriteString(s[last:i])
			b.WriteString("[REDACTED_CARD]")
			last, i = end, end
			continue
		}
		// Not a card from here: try the next group.
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// cardAt returns the end of the card number that starts at s[i] (the start
// of a group of digits), or 0: 13 to 19 digits in a row, or a first group of
// four and then groups of 3 to 6 after one kind of separator (4-4-4-4,
// 4-6-5, 4-6-4, 4-4-4-4-3), the longest that passes the check.
func cardAt(s string, i int) int {
	if s[i] < '2' || s[i] > '6' {
		return 0
	}
	k := i
	for k < len(s) && isDigit(s[k]) {
		k++
	}
	if n := k - i; n >= minCardDigits && n <= maxCardDigits && luhn(s[i:k]) {
		return k
	}
	if k-i != 4 {
		return 0
	}
	var digits [maxCardDigits]byte
	n := copy(digits[:], s[i:k])
	best := 0
	var sep byte
	for k+1 < len(s) && (s[k] == ' ' || s[k] == '-') && (sep == 0 || s[k] == sep) && isDigit(s[k+1]) {
		sep = s[k]
		j := k + 1
		for k = j; k < len(s) && isDigit(s[k]); k++ {
		}
		if g := k - j; g < 3 || g > 6 || n+g > maxCardDigits {
			break
		}
		n += copy(digits[n:], s[j:k])
		if n >= minCardDigits && luhn(digits[:n]) {
			best = k
		}
	}
	return best
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// luhn reports whether the ASCII digits pass the Luhn check.
func luhn[D string | []byte](digits D) bool {
	sum := 0
	for i := 0; i < len(digits); i++ {
		d := int(digits[len(digits)-1-i] - '0')
		if i%2 == 1 {
			if d *= 2; d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return sum%10 == 0
}
