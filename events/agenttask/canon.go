package agenttask

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/agentdlq/agentdlq/internal/jsonscan"
)

// appendCanonical appends the RFC 8785 form of the JSON value at b[i:] to
// dst for the args producers usually write, and reports false for anything
// else, which ArgsDigest then gives to github.com/gowebpki/jcs: strings of
// valid UTF-8 (appendEscaped where they hold escapes), object keys of plain ASCII (sorted by bytes, which is RFC 8785's
// UTF-16 order for ASCII) and not repeated, numbers of magnitude 1e-6 to 1e21
// (appendNumber), true, false and null. The library costs about 150 allocations an args object (half of
// the worker's CPU on a batch of ok tasks); this costs a sort and the copy.
// FuzzArgsDigest holds the two to the same digest.
func appendCanonical(dst, b []byte, i, depth int) ([]byte, int, bool) {
	if depth > jsonscan.MaxDepth {
		return dst, -1, false
	}
	i = jsonscan.SkipWS(b, i)
	if i >= len(b) {
		return dst, -1, false
	}
	switch c := b[i]; {
	case c == '"':
		end, flags := jsonscan.ScanString(b, i)
		if end < 0 || (flags&jsonscan.StrHigh != 0 && !utf8.Valid(b[i:end])) {
			return dst, -1, false
		}
		if flags&jsonscan.StrEscape == 0 {
			return append(dst, b[i:end]...), end, true
		}
		return appendEscaped(dst, b[i+1:end-1], end)
	case c == '{':
		return appendObject(dst, b, i, depth)
	case c == '[':
		dst = append(dst, '[')
		i = jsonscan.SkipWS(b, i+1)
		if i < len(b) && b[i] == ']' {
			return append(dst, ']'), i + 1, true
		}
		for n := 0; ; n++ {
			if n > 0 {
				dst = append(dst, ',')
			}
			var ok bool
			if dst, i, ok = appendCanonical(dst, b, i, depth+1); !ok {
				return dst, -1, false
			}
			i = jsonscan.SkipWS(b, i)
			if i >= len(b) {
				return dst, -1, false
			}
			if b[i] == ']' {
				return append(dst, ']'), i + 1, true
			}
			if b[i] != ',' {
				return dst, -1, false
			}
			i++
		}
	case c == '-' || jsonscan.IsDigit(c):
		end := jsonscan.ScanNumber(b, i)
		if end < 0 {
			return dst, -1, false
		}
		return appendNumber(dst, b[i:end], end)
	case c == 't':
		return appendLiteral(dst, b, i, "true")
	case c == 'f':
		return appendLiteral(dst, b, i, "false")
	case c == 'n':
		return appendLiteral(dst, b, i, "null")
	}
	return dst, -1, false
}

// appendEscaped writes a string that held escapes as RFC 8785 does: its
// characters as they are but for " and \ and the control characters
// (\b \t \n \f \r, the others as \u00xx). A lone surrogate goes to the
// library.
func appendEscaped(dst, content []byte, end int) ([]byte, int, bool) {
	text := jsonscan.AppendUnquoted(nil, content)
	if bytes.ContainsRune(text, utf8.RuneError) {
		return dst, -1, false
	}
	return jsonscan.AppendString(dst, string(text), jsonscan.ShortBF|jsonscan.RawLineSeps), end, true
}

func appendLiteral(dst, b []byte, i int, lit string) ([]byte, int, bool) {
	end := jsonscan.ScanLiteral(b, i, lit)
	if end < 0 {
		return dst, -1, false
	}
	return append(dst, lit...), end, true
}

// appendNumber writes a number as RFC 8785 (ECMAScript's Number
// toString) does where that is the shortest round-trip decimal in plain
// notation: 0, and magnitudes from 1e-6 up to 1e21. Others (-0, exponent
// notation) go to the library.
func appendNumber(dst, n []byte, end int) ([]byte, int, bool) {
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		return dst, -1, false
	}
	if f == 0 {
		if n[0] == '-' {
			return dst, -1, false
		}
		return append(dst, '0'), end, true
	}
	if a := math.Abs(f); a < 1e-6 || a >= 1e21 {
		return dst, -1, false
	}
	return strconv.AppendFloat(dst, f, 'f', -1, 64), end, true
}

// canonMember is an object member: its key, and where its canonical value
// lies in the object's tail of dst.
type canonMember struct {
	key    []byte
	off, n int
}

func appendObject(dst, b []byte, i, depth int) ([]byte, int, bool) {
	var members []canonMember
	tail := len(dst)
	i = jsonscan.SkipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return append(dst, '{', '}'), i + 1, true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return dst, -1, false
		}
		kend, flags := jsonscan.ScanString(b, i)
		if kend < 0 || flags != 0 {
			return dst, -1, false
		}
		key := b[i+1 : kend-1]
		i = jsonscan.SkipWS(b, kend)
		if i >= len(b) || b[i] != ':' {
			return dst, -1, false
		}
		// Each value is written on its own (its members sorted in turn),
		// then the members are sorted and joined.
		start := len(dst)
		var ok bool
		if dst, i, ok = appendCanonical(dst, b, i+1, depth+1); !ok {
			return dst, -1, false
		}
		members = append(members, canonMember{key, start - tail, len(dst) - start})
		i = jsonscan.SkipWS(b, i)
		if i >= len(b) {
			return dst, -1, false
		}
		if b[i] == '}' {
			i++
			break
		}
		if b[i] != ',' {
			return dst, -1, false
		}
		i = jsonscan.SkipWS(b, i+1)
	}
	slices.SortFunc(members, func(x, y canonMember) int { return bytes.Compare(x.key, y.key) })
	for k := 1; k < len(members); k++ {
		if string(members[k].key) == string(members[k-1].key) {
			return dst, -1, false
		}
	}
	// The values were written into dst's tail, in the order read; the
	// object is written over that tail from a copy of it.
	vals := append([]byte(nil), dst[tail:]...)
	dst = append(dst[:tail], '{')
	for k, m := range members {
		if k > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '"')
		dst = append(dst, m.key...)
		dst = append(dst, '"', ':')
		dst = append(dst, vals[m.off:m.off+m.n]...)
	}
	return append(dst, '}'), i, true
}
