package batch

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

// A JSON scanner for DecodeEvent: it validates exactly as encoding/json does
// (json.Valid). It is a copy of events/agenttask's scanner (scan.go), whose
// functions are unexported there; both are tested against encoding/json.

// jsonMaxDepth mirrors encoding/json's nesting limit: json.Valid rejects a
// document nested deeper than this, so the scanner does too.
const jsonMaxDepth = 10000

const (
	swarLo = 0x0101010101010101
	swarHi = 0x8080808080808080
)

// skipWS returns the index of the first non-whitespace byte at or after i.
// JSON whitespace is space, tab, newline and carriage return only.
func skipWS(b []byte, i int) int {
	// Compact JSON has none: one comparison settles the common case.
	if i < len(b) && b[i] > ' ' {
		return i
	}
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// special has the high bit set in the lowest byte of x that is a quote, a
// backslash or a control character (and maybe in bytes above it), and is
// zero when x has none. Each test is the classic "has a zero byte" trick,
// (v - 0x01..) &^ v & 0x80.., on x^'"', x^'\\' and x - 0x20..; the three &^
// share one, since x^'"' and x^'\\' have the high bits of x.
func special(x uint64) uint64 {
	q := x ^ (swarLo * '"')
	s := x ^ (swarLo * '\\')
	return ((q - swarLo) | (s - swarLo) | (x - swarLo*0x20)) &^ x & swarHi
}

// skipString validates the string literal whose opening quote is b[i] and
// returns the index after its closing quote, or -1. It is scanString without
// the flags, for the strings nobody decodes (inside args), and it is faster
// on long ones: bytes.IndexByte (assembly on amd64 and arm64) finds the
// candidate closing quote and each backslash, and one branch-free SWAR pass
// over the whole content then looks for control characters. On a 600-byte
// string like the fixtures' notes it takes ~165 ns where scanString takes
// ~300 ns (go test -bench, this 2-core machine).
func skipString(b []byte, i int) int {
	start := i + 1
	i = start
	// Short strings (keys, most values) end within 32 bytes: a word at a
	// time, as scanString does, saves the calls (3x faster on a 15-byte key).
	for end := min(len(b), i+32); i+8 <= end; i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		if sx := special(x); sx != 0 {
			if n := bits.TrailingZeros64(sx) / 8; b[i+n] == '"' {
				return i + n + 1
			}
			break // a backslash or a control character: the general case
		}
	}
	for {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			return -1
		}
		q += i
		// Escapes before q, each checked; one of them may be the quote at q.
		for i <= q {
			k := bytes.IndexByte(b[i:q], '\\')
			if k < 0 {
				break
			}
			if i = escapeEnd(b, i+k); i < 0 {
				return -1
			}
		}
		if i <= q { // b[q] closes the string
			if hasControl(b[start:q]) {
				return -1
			}
			return q + 1
		}
	}
}

// escapeEnd validates the escape whose backslash is b[k] and returns the
// index after it, or -1.
func escapeEnd(b []byte, k int) int {
	if k+1 >= len(b) {
		return -1
	}
	switch b[k+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return k + 2
	case 'u':
		if k+6 > len(b) || !isHex(b[k+2]) || !isHex(b[k+3]) || !isHex(b[k+4]) || !isHex(b[k+5]) {
			return -1
		}
		return k + 6
	}
	return -1
}

// hasControl reports whether s holds a byte below 0x20. The "has a byte
// less than" test, (x - 0x20..) &^ x & 0x80.., is exact for a word as a
// whole, so the words are OR-ed together (two accumulators, 32 bytes a
// step: about twice as fast as 8 bytes a step here) and tested once.
func hasControl(s []byte) bool {
	var a, c uint64
	i := 0
	for ; i+32 <= len(s); i += 32 {
		w := s[i : i+32 : i+32]
		x := binary.LittleEndian.Uint64(w[0:8])
		y := binary.LittleEndian.Uint64(w[8:16])
		z := binary.LittleEndian.Uint64(w[16:24])
		v := binary.LittleEndian.Uint64(w[24:32])
		a |= (x-swarLo*0x20)&^x | (y-swarLo*0x20)&^y
		c |= (z-swarLo*0x20)&^z | (v-swarLo*0x20)&^v
	}
	for ; i+8 <= len(s); i += 8 {
		x := binary.LittleEndian.Uint64(s[i:])
		a |= (x - swarLo*0x20) &^ x
	}
	for _, ch := range s[i:] {
		if ch < 0x20 {
			return true
		}
	}
	return (a|c)&swarHi != 0
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// scanNumber validates the number literal starting at b[i] and returns the
// index after it, or -1.
func scanNumber(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return -1
	case b[i] == '0':
		i++
	case '1' <= b[i] && b[i] <= '9':
		i++
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return -1
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return -1
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	return i
}

func scanLiteral(b []byte, i int, lit string) int {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// skipValue validates the value starting at b[i] (no leading whitespace),
// nested at depth (the top-level object is depth 1), and returns the index
// after it, or -1.
func skipValue(b []byte, i, depth int) int {
	if i >= len(b) {
		return -1
	}
	switch c := b[i]; c {
	case '"':
		return skipString(b, i)
	case '{':
		return skipObject(b, i, depth+1)
	case '[':
		return skipArray(b, i, depth+1)
	case 't':
		return scanLiteral(b, i, "true")
	case 'f':
		return scanLiteral(b, i, "false")
	case 'n':
		return scanLiteral(b, i, "null")
	default:
		return scanNumber(b, i)
	}
}

// skipObject validates the object whose '{' is b[i], itself at depth.
func skipObject(b []byte, i, depth int) int {
	if depth > jsonMaxDepth {
		return -1
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return -1
		}
		if i = skipString(b, i); i < 0 {
			return -1
		}
		i = skipWS(b, i)
		if i >= len(b) || b[i] != ':' {
			return -1
		}
		i = skipWS(b, i+1)
		if i = skipValue(b, i, depth); i < 0 {
			return -1
		}
		i = skipWS(b, i)
		if i >= len(b) {
			return -1
		}
		switch b[i] {
		case ',':
			i = skipWS(b, i+1)
		case '}':
			return i + 1
		default:
			return -1
		}
	}
}

// skipArray validates the array whose '[' is b[i], itself at depth.
func skipArray(b []byte, i, depth int) int {
	if depth > jsonMaxDepth {
		return -1
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1
	}
	for {
		if i = skipValue(b, i, depth); i < 0 {
			return -1
		}
		i = skipWS(b, i)
		if i >= len(b) {
			return -1
		}
		switch b[i] {
		case ',':
			i = skipWS(b, i+1)
		case ']':
			return i + 1
		default:
			return -1
		}
	}
}
