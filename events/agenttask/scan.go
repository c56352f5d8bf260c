package agenttask

import "github.com/agentdlq/agentdlq/internal/jsonscan"

// DecodeTask's scanner, the one that validates a body as JSON exactly as
// encoding/json does (json.Valid), is internal/jsonscan, shared with
// functions/batch's DecodeEvent. What is left here is the agent task's own.

// numberIsOne classifies the validated JSON number literal num: whether its
// value is an integer, and whether it is exactly 1. It works on the digits,
// so 1.0, 1e0, 10e-1 and 0.1e1 are 1, and no exponent is too big.
func numberIsOne(num []byte) (integer, one bool) {
	i := 0
	neg := false
	if num[0] == '-' {
		neg = true
		i++
	}
	// The significant digits are intPart+frac with leading zeros dropped;
	// the value is digits × 10^(exp - len(frac)).
	start := i
	for i < len(num) && jsonscan.IsDigit(num[i]) {
		i++
	}
	intPart := num[start:i]
	var frac []byte
	if i < len(num) && num[i] == '.' {
		i++
		fs := i
		for i < len(num) && jsonscan.IsDigit(num[i]) {
			i++
		}
		frac = num[fs:i]
	}
	// exp, saturated far beyond any length a body can have.
	const sat = 1 << 40
	exp := 0
	if i < len(num) && (num[i] == 'e' || num[i] == 'E') {
		i++
		eneg := false
		if num[i] == '+' || num[i] == '-' {
			eneg = num[i] == '-'
			i++
		}
		for ; i < len(num); i++ {
			if exp < sat {
				exp = exp*10 + int(num[i]-'0')
			}
		}
		if eneg {
			exp = -exp
		}
	}
	// Count significant digits: strip leading zeros across intPart+frac and
	// trailing zeros (each trailing zero raises the exponent by one).
	total := len(intPart) + len(frac)
	digit := func(k int) byte {
		if k < len(intPart) {
			return intPart[k]
		}
		return frac[k-len(intPart)]
	}
	lead := 0
	for lead < total && digit(lead) == '0' {
		lead++
	}
	if lead == total {
		return true, false // zero (or -0): an integer, not 1
	}
	last := total - 1
	for digit(last) == '0' {
		last--
	}
	// value = digits[lead..last] × 10^(exp - len(frac) + (total-1-last))
	scale := exp - len(frac) + (total - 1 - last)
	if scale < 0 {
		return false, false
	}
	one = !neg && lead == last && digit(lead) == '1' && scale == 0
	return true, one
}
