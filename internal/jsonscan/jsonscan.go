// Package jsonscan is the JSON scanner behind events/agenttask's DecodeTask
// and functions/batch's DecodeEvent: single passes over byte slices that
// validate JSON exactly as encoding/json's json.Valid does (same grammar,
// same nesting limit, invalid UTF-8 inside strings accepted as json.Valid
// accepts it) and decode string contents exactly as encoding/json does.
// Its writing side, AppendString, quotes strings as encoding/json or
// log/slog does, for events/deadletter's dlq_meta and functions/batch's
// dead-lettered log line.
//
// It is plain Go: no reflection, no unsafe, no assembly, so it runs the same
// on amd64 and arm64. Strings are scanned a 64-bit word at a time (SWAR on
// little-endian loads, which both architectures do in one instruction; see
// special). The Scan and Skip functions take the index of a value's first
// byte and return the index after it, or -1 when it is not valid JSON.
package jsonscan

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth mirrors encoding/json's nesting limit: json.Valid rejects a
// document nested deeper than this, so the scanner does too.
const MaxDepth = 10000

// String flags returned by ScanString.
const (
	StrEscape = 1 << iota // the string holds a backslash escape
	StrHigh               // the string holds a byte >= 0x80 (maybe invalid UTF-8)
)

const (
	swarLo = 0x0101010101010101
	swarHi = 0x8080808080808080
)

// SkipWS returns the index of the first non-whitespace byte at or after i.
// JSON whitespace is space, tab, newline and carriage return only.
func SkipWS(b []byte, i int) int {
	// Compact JSON has none: one comparison, inlined, settles the common
	// case.
	if i < len(b) && b[i] > ' ' {
		return i
	}
	return skipWS(b, i)
}

// skipWS is SkipWS past its first comparison. Indented JSON has a newline
// and a run of spaces before each member (ten in the generated events'
// message attributes): after a newline the run of spaces is skipped 8
// bytes a step, the first byte that is not a space found in its word (x ^
// 0x2020... has a zero byte for each space), where a byte at a time cost a
// comparison and a branch per space. A single space (after a colon) takes
// the byte loop, as before.
func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case '\n':
			i++
			for i+8 <= len(b) {
				x := binary.LittleEndian.Uint64(b[i:]) ^ swarLo*' '
				if x != 0 {
					i += bits.TrailingZeros64(x) / 8
					break
				}
				i += 8
			}
		case ' ', '\t', '\r':
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

// ScanString validates the string literal whose opening quote is b[i] and
// returns the index after its closing quote (or -1) and its flags.
func ScanString(b []byte, i int) (int, uint8) {
	var flags uint8
	var high uint64
	i++
	for {
		// Two words a step while no byte needs a look; the first byte that
		// does is found in the word that holds it, without a second look.
		found := false
		for i+16 <= len(b) {
			x := binary.LittleEndian.Uint64(b[i:])
			if sx := special(x); sx != 0 {
				n := bits.TrailingZeros64(sx) / 8
				high |= x & (1<<(8*uint(n)) - 1)
				i += n
				found = true
				break
			}
			y := binary.LittleEndian.Uint64(b[i+8:])
			if sy := special(y); sy != 0 {
				n := bits.TrailingZeros64(sy) / 8
				high |= x | y&(1<<(8*uint(n))-1)
				i += 8 + n
				found = true
				break
			}
			high |= x | y
			i += 16
		}
		for !found && i+8 <= len(b) {
			x := binary.LittleEndian.Uint64(b[i:])
			sp := special(x)
			if sp == 0 {
				high |= x
				i += 8
				continue
			}
			n := bits.TrailingZeros64(sp) / 8
			high |= x & (1<<(8*uint(n)) - 1)
			i += n
			break
		}
		if i >= len(b) {
			return -1, 0
		}
		c := b[i]
		switch {
		case c == '"':
			if high&swarHi != 0 {
				flags |= StrHigh
			}
			return i + 1, flags
		case c == '\\':
			flags |= StrEscape
			if i+1 >= len(b) {
				return -1, 0
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return -1, 0
				}
				i += 6
			default:
				return -1, 0
			}
		case c < 0x20:
			return -1, 0
		default:
			if c >= utf8.RuneSelf {
				flags |= StrHigh
			}
			i++
		}
	}
}

// SkipString validates the string literal whose opening quote is b[i] and
// returns the index after its closing quote, or -1. It is ScanString without
// the flags, for the strings nobody decodes (inside args) and the ones a
// caller checks itself, and it adapts to two kinds of string:
//
//   - Short ones and ones dense with escapes (an SQS body that is itself
//     JSON arrives as {\"tool\":\"x\",...}: an escape every few bytes) are
//     read a word at a time, as ScanString does: special finds the next
//     quote, backslash or control character in 8 bytes. A call to
//     bytes.IndexByte per escape cost more than the span it searched (on a
//     0.9 KB escaped body, 78 escapes: ~645 ns with two IndexByte calls an
//     escape, ~420 ns with the word loop; BenchmarkSkipString, this 2-core
//     machine).
//   - Long plain runs (32 bytes without a byte to look at) are handed to
//     bytes.IndexByte (assembly on amd64 and arm64, 16–32 bytes a step) for
//     the next quote and then the next backslash before it, and one
//     branch-free SWAR pass (hasControl) checks the run for control
//     characters: on a 600-byte plain string that is ~50 ns against ~105 ns
//     word by word.
//
// The next quote's index, once IndexByte found it, is kept until the scan
// passes it, so a long string with scattered escapes is searched once, not
// once an escape.
func SkipString(b []byte, i int) int {
	i++
	q := -1 // the next '"' at or after i, when known
	for {
		words := 0 // plain words in a row
		for {
			if i+8 > len(b) {
				// Fewer than 8 bytes left in b (rare: b is a whole document).
				for i < len(b) && b[i] != '"' && b[i] != '\\' && b[i] >= 0x20 {
					i++
				}
				if i >= len(b) {
					return -1
				}
				break
			}
			if sx := special(binary.LittleEndian.Uint64(b[i:])); sx != 0 {
				i += bits.TrailingZeros64(sx) / 8
				break
			}
			i += 8
			if words++; words < 4 {
				continue
			}
			// A long plain run: on to the next quote or backslash.
			if q < i {
				if q = bytes.IndexByte(b[i:], '"'); q < 0 {
					return -1
				}
				q += i
			}
			next := q
			if k := bytes.IndexByte(b[i:q], '\\'); k >= 0 {
				next = i + k
			}
			if hasControl(b[i:next]) {
				return -1
			}
			i = next
			break
		}
		switch b[i] {
		case '"':
			return i + 1
		case '\\':
			// \" \\ \/ \b \f \n \r \t here; \u and bad ones in escapeEnd,
			// which is too big to inline.
			if i+1 < len(b) && shortEscape[b[i+1]] {
				i += 2
			} else if i = escapeEnd(b, i); i < 0 {
				return -1
			}
		default: // a control character
			return -1
		}
	}
}

// shortEscape holds the characters that follow a backslash in a two-byte
// escape.
var shortEscape = [256]bool{'"': true, '\\': true, '/': true, 'b': true, 'f': true, 'n': true, 'r': true, 't': true}

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

// controlOrHigh reports whether s holds a byte below 0x20 and whether it
// holds one >= 0x80, in one pass as hasControl makes it.
func controlOrHigh(s []byte) (ctrl, high bool) {
	var a, c, h uint64
	i := 0
	for ; i+16 <= len(s); i += 16 {
		w := s[i : i+16 : i+16]
		x := binary.LittleEndian.Uint64(w[0:8])
		y := binary.LittleEndian.Uint64(w[8:16])
		a |= (x - swarLo*0x20) &^ x
		c |= (y - swarLo*0x20) &^ y
		h |= x | y
	}
	for ; i+8 <= len(s); i += 8 {
		x := binary.LittleEndian.Uint64(s[i:])
		a |= (x - swarLo*0x20) &^ x
		h |= x
	}
	for _, ch := range s[i:] {
		ctrl = ctrl || ch < 0x20
		h |= uint64(ch)
	}
	return ctrl || (a|c)&swarHi != 0, h&swarHi != 0
}

// isHex reports whether c is a hex digit.
func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// IsDigit reports whether c is a decimal digit.
func IsDigit(c byte) bool { return '0' <= c && c <= '9' }

// ScanNumber validates the number literal starting at b[i] and returns the
// index after it, or -1.
func ScanNumber(b []byte, i int) int {
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
		for i < len(b) && IsDigit(b[i]) {
			i++
		}
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !IsDigit(b[i]) {
			return -1
		}
		for i < len(b) && IsDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !IsDigit(b[i]) {
			return -1
		}
		for i < len(b) && IsDigit(b[i]) {
			i++
		}
	}
	return i
}

// ScanLiteral checks that the literal lit (true, false, null) starts at
// b[i] and returns the index after it, or -1.
func ScanLiteral(b []byte, i int, lit string) int {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// SkipValue validates the value starting at b[i] (no leading whitespace),
// nested at depth (the top-level object is depth 1), and returns the index
// after it, or -1.
func SkipValue(b []byte, i, depth int) int {
	if i >= len(b) {
		return -1
	}
	switch c := b[i]; c {
	case '"':
		return SkipString(b, i)
	case '{':
		return SkipObject(b, i, depth+1)
	case '[':
		return SkipArray(b, i, depth+1)
	case 't':
		return ScanLiteral(b, i, "true")
	case 'f':
		return ScanLiteral(b, i, "false")
	case 'n':
		return ScanLiteral(b, i, "null")
	default:
		return ScanNumber(b, i)
	}
}

// SkipObject validates the object whose '{' is b[i], itself at depth.
func SkipObject(b []byte, i, depth int) int {
	if depth > MaxDepth {
		return -1
	}
	i = SkipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return -1
		}
		if i = SkipString(b, i); i < 0 {
			return -1
		}
		i = SkipWS(b, i)
		if i >= len(b) || b[i] != ':' {
			return -1
		}
		i = SkipWS(b, i+1)
		if i = SkipValue(b, i, depth); i < 0 {
			return -1
		}
		i = SkipWS(b, i)
		if i >= len(b) {
			return -1
		}
		switch b[i] {
		case ',':
			i = SkipWS(b, i+1)
		case '}':
			return i + 1
		default:
			return -1
		}
	}
}

// SkipArray validates the array whose '[' is b[i], itself at depth.
func SkipArray(b []byte, i, depth int) int {
	if depth > MaxDepth {
		return -1
	}
	i = SkipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1
	}
	for {
		if i = SkipValue(b, i, depth); i < 0 {
			return -1
		}
		i = SkipWS(b, i)
		if i >= len(b) {
			return -1
		}
		switch b[i] {
		case ',':
			i = SkipWS(b, i+1)
		case ']':
			return i + 1
		default:
			return -1
		}
	}
}

// AppendUnquoted appends the decoded content of a validated JSON string
// (without its quotes) to dst, exactly as encoding/json decodes it: escapes
// resolved, surrogate pairs joined, lone surrogates and invalid UTF-8 bytes
// replaced by U+FFFD one for one. dst may share memory with s when it starts
// at or before s and s is valid UTF-8 (functions/batch decodes bodies in
// place that way).
func AppendUnquoted(dst, s []byte) []byte {
	valid := utf8.Valid(s)
	for r := 0; r < len(s); {
		if valid {
			k := bytes.IndexByte(s[r:], '\\')
			if k < 0 {
				return append(dst, s[r:]...)
			}
			dst = append(dst, s[r:r+k]...)
			r += k
		}
		c := s[r]
		switch {
		case c == '\\':
			switch s[r+1] {
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				rr := hex4(s[r+2:])
				r += 6
				if utf16.IsSurrogate(rr) {
					if r+6 <= len(s) && s[r] == '\\' && s[r+1] == 'u' {
						if dec := utf16.DecodeRune(rr, hex4(s[r+2:])); dec != unicode.ReplacementChar {
							dst = utf8.AppendRune(dst, dec)
							r += 6
							continue
						}
					}
					rr = unicode.ReplacementChar
				}
				dst = utf8.AppendRune(dst, rr)
				continue
			default: // '"', '\\', '/'
				dst = append(dst, s[r+1])
			}
			r += 2
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			r++
		default:
			rr, size := utf8.DecodeRune(s[r:])
			dst = utf8.AppendRune(dst, rr)
			r += size
		}
	}
	return dst
}

// ScanUnquoteInPlace validates the string literal whose opening quote is
// b[i], as ScanString does, and decodes its content in place as it goes:
// the decoded content is b[i+1:n]. It returns the index after the closing
// quote (or -1, and then b[i+1:] may have been partly overwritten), n, and
// the flags. A content without escapes is not moved (n is its end).
//
// Bytes >= 0x80 are copied as they are: when the flags have StrHigh the
// caller checks b[i+1:n] with utf8.Valid and, when it is not valid, takes
// AppendReplacingInvalid of it, which is then what AppendUnquoted gives for
// the original content (an escape decodes to whole, valid characters, so it
// neither completes nor breaks a sequence around it).
//
// It is for an SQS body that is itself JSON: an escape every few bytes,
// {\"tool\":\"x\",...}. Scanning it and then unquoting it looked at each
// escape twice, and the unquoting paid a call to bytes.IndexByte and one
// to memmove per escape; here each escape costs one look at a word.
// Decoding never makes the content longer (an escape is at least as long
// as what it stands for), so the write index w never passes the read
// index r: a word written at w overwrites only bytes already read.
//
// When the literal is not valid, end is -1 and n is the index of the byte
// that makes it invalid (len(b) when b ends inside it); the bytes before
// that index may have been overwritten, the ones from it on have not.
func ScanUnquoteInPlace(b []byte, i int) (end, n int, flags uint8) {
	var high uint64 // the plain bytes OR-ed, as in ScanString
	r := i + 1
	w := r  // w == r until the first escape, then w < r
	q := -1 // the next '"' at or after r, when known
	for {
		words := 0 // plain words in a row
		for {
			if r+8 > len(b) {
				// Fewer than 8 bytes left in b (rare: b is a whole document).
				if r, w, high = unquoteTail(b, r, w, high); r >= len(b) {
					return -1, r, 0
				}
				break
			}
			x := binary.LittleEndian.Uint64(b[r:])
			if sx := special(x); sx != 0 {
				k := bits.TrailingZeros64(sx) / 8
				high |= x & (1<<(8*uint(k)) - 1)
				movePlain(b, w, r, k, x)
				w += k
				r += k
				break
			}
			high |= x
			if w != r {
				binary.LittleEndian.PutUint64(b[w:], x)
			}
			w += 8
			r += 8
			if words++; words < 4 {
				continue
			}
			// A long plain run, as in SkipString; moved with copy (memmove).
			if q < r {
				if q = bytes.IndexByte(b[r:], '"'); q < 0 {
					return -1, len(b), 0
				}
				q += r
			}
			next := q
			if k := bytes.IndexByte(b[r:q], '\\'); k >= 0 {
				next = r + k
			}
			ctrl, hi := controlOrHigh(b[r:next])
			if ctrl {
				for b[r] >= 0x20 {
					r++
				}
				return -1, r, 0
			}
			if hi {
				high |= swarHi
			}
			if w != r {
				copy(b[w:], b[r:next])
			}
			w += next - r
			r = next
			break
		}
		switch b[r] {
		case '"':
			if high&swarHi != 0 {
				flags |= StrHigh
			}
			return r + 1, w, flags
		case '\\':
			flags |= StrEscape
			if r+1 >= len(b) {
				return -1, len(b), 0
			}
			// A two-byte escape by table: one branch, the same one for
			// every \" of a quoted JSON body.
			if c := unescape[b[r+1]]; c != 0 {
				b[w] = c
				w++
				r += 2
				continue
			}
			if r, w = unquoteU(b, r, w); r < 0 {
				return -1, w, 0
			}
		default: // a control character
			return -1, r, 0
		}
	}
}

// movePlain moves the first k bytes of the word x, read at b[r], down to
// b[w:] (nothing to do when w == r).
func movePlain(b []byte, w, r, k int, x uint64) {
	switch {
	case w == r:
	case r-w >= 8:
		// The whole word: its bytes after the k land below r, on bytes
		// already read, and are overwritten later. (Until the writes are 8
		// bytes behind, a word would overwrite the backslash; merging it
		// with the word read back at w costs more than the byte loop: that
		// load waits on the store before it, which overlaps.)
		binary.LittleEndian.PutUint64(b[w:], x)
	default:
		for j := range k {
			b[w+j] = b[r+j]
		}
	}
}

// unquoteTail copies the plain bytes from b[r] on to b[w:], in a part of
// b shorter than a word, ORing them into high; it stops at a quote, a
// backslash, a control character or the end of b (then r == len(b)).
func unquoteTail(b []byte, r, w int, high uint64) (int, int, uint64) {
	for r < len(b) && b[r] != '"' && b[r] != '\\' && b[r] >= 0x20 {
		high |= uint64(b[r])
		b[w] = b[r]
		w++
		r++
	}
	return r, w, high
}

// unquoteU decodes the escape at b[r] that no table holds, a \u escape
// (joined with the second half of a surrogate pair that follows), into
// b[w:], and returns the indexes past it. An invalid escape returns -1 and
// the index of its bad byte.
func unquoteU(b []byte, r, w int) (int, int) {
	if b[r+1] != 'u' || r+6 > len(b) || !isHex(b[r+2]) || !isHex(b[r+3]) || !isHex(b[r+4]) || !isHex(b[r+5]) {
		return -1, badEscape(b, r)
	}
	rr := hex4(b[r+2:])
	r += 6
	if utf16.IsSurrogate(rr) {
		// Joined with a second half that follows, else U+FFFD (a
		// \u that follows is then decoded, and checked, on its own).
		dec := unicode.ReplacementChar
		if r+6 <= len(b) && b[r] == '\\' && b[r+1] == 'u' {
			if dec = utf16.DecodeRune(rr, hex4(b[r+2:])); dec != unicode.ReplacementChar {
				r += 6
			}
		}
		rr = dec
	}
	return r, w + utf8.EncodeRune(b[w:], rr)
}

// AppendReplacingInvalid appends s to dst with each byte that is not part
// of valid UTF-8 replaced by U+FFFD, one for one, as encoding/json decodes
// a string (bytes.ToValidUTF8 replaces a run with one).
func AppendReplacingInvalid(dst, s []byte) []byte {
	for len(s) > 0 {
		rr, size := utf8.DecodeRune(s)
		if rr == utf8.RuneError && size == 1 {
			dst = utf8.AppendRune(dst, utf8.RuneError)
		} else {
			dst = append(dst, s[:size]...)
		}
		s = s[size:]
	}
	return dst
}

// unescape maps the character after a backslash in a two-byte escape to
// the byte it stands for; 0 for the others ('u').
var unescape = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// hex4 reads the four hex digits the scanner already checked (a \u escape
// may be followed by something that is not one; then it returns -1).
func hex4(s []byte) rune {
	if len(s) < 4 {
		return -1
	}
	var r rune
	for _, c := range s[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

// badEscape is the index of the byte that makes the escape at b[r] (a
// backslash) invalid, as encoding/json reports it: the byte after the
// backslash, or the first one of \u's four that is not a hex digit, or
// len(b) when b ends first.
func badEscape(b []byte, r int) int {
	if r+1 >= len(b) {
		return len(b)
	}
	if b[r+1] != 'u' {
		return r + 1
	}
	for k := r + 2; k < r+6; k++ {
		if k >= len(b) {
			return len(b)
		}
		if !isHex(b[k]) {
			return k
		}
	}
	return r // a valid escape: not reached
}
