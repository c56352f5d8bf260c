package agenttask

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/agentdlq/agentdlq/internal/jsonscan"
)

// canon writes the RFC 8785 form of the args producers usually write
// (ArgsDigest), and reports false for anything else, which ArgsDigest then
// gives to github.com/gowebpki/jcs: strings of valid UTF-8 (escaped where
// they hold escapes), object keys of plain ASCII (sorted by bytes, which is
// RFC 8785's UTF-16 order for ASCII) and not repeated, numbers of magnitude
// 1e-6 to 1e21, true, false and null. Its buffers are reused (canonPool):
// a digest allocates nothing but its string. FuzzArgsDigest holds it to
// the library.
type canon struct {
	out []byte
	// members is a stack of the objects being written, innermost last:
	// each object's members sorted in place, then written in turn.
	members []canonMember
	text    []byte // an escaped string's text
}

// canonMember is an object member: its key (without quotes) and its value
// (b[val:end]), views of the args.
type canonMember struct {
	key      []byte
	val, end int
}

var canonPool = sync.Pool{New: func() any { return new(canon) }}

// value writes the value at b[i:] (after white space) and returns the index
// after it.
func (c *canon) value(b []byte, i, depth int) (int, bool) {
	if depth > jsonscan.MaxDepth {
		return -1, false
	}
	i = jsonscan.SkipWS(b, i)
	if i >= len(b) {
		return -1, false
	}
	switch ch := b[i]; {
	case ch == '"':
		end, flags := jsonscan.ScanString(b, i)
		if end < 0 || (flags&jsonscan.StrHigh != 0 && !utf8.Valid(b[i:end])) {
			return -1, false
		}
		if flags&jsonscan.StrEscape == 0 {
			c.out = append(c.out, b[i:end]...)
			return end, true
		}
		return end, c.escaped(b[i+1 : end-1])
	case ch == '{':
		return c.object(b, i, depth)
	case ch == '[':
		return c.array(b, i, depth)
	case ch == '-' || jsonscan.IsDigit(ch):
		end := jsonscan.ScanNumber(b, i)
		return end, end >= 0 && c.number(b[i:end])
	case ch == 't':
		return c.literal(b, i, "true")
	case ch == 'f':
		return c.literal(b, i, "false")
	case ch == 'n':
		return c.literal(b, i, "null")
	}
	return -1, false
}

func (c *canon) array(b []byte, i, depth int) (int, bool) {
	c.out = append(c.out, '[')
	i = jsonscan.SkipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		c.out = append(c.out, ']')
		return i + 1, true
	}
	for n := 0; ; n++ {
		if n > 0 {
			c.out = append(c.out, ',')
		}
		var ok bool
		if i, ok = c.value(b, i, depth+1); !ok {
			return -1, false
		}
		i = jsonscan.SkipWS(b, i)
		if i >= len(b) {
			return -1, false
		}
		if b[i] == ']' {
			c.out = append(c.out, ']')
			return i + 1, true
		}
		if b[i] != ',' {
			return -1, false
		}
		i++
	}
}

// object reads the object's members (keys, and where each value lies),
// sorts them by key, and writes each value in that order.
func (c *canon) object(b []byte, i, depth int) (int, bool) {
	base := len(c.members)
	defer func() { c.members = c.members[:base] }()
	i = jsonscan.SkipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		c.out = append(c.out, '{', '}')
		return i + 1, true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return -1, false
		}
		kend, flags := jsonscan.ScanString(b, i)
		if kend < 0 || flags != 0 {
			return -1, false
		}
		key := b[i+1 : kend-1]
		i = jsonscan.SkipWS(b, kend)
		if i >= len(b) || b[i] != ':' {
			return -1, false
		}
		val := jsonscan.SkipWS(b, i+1)
		end := jsonscan.SkipValue(b, val, depth+1)
		if end < 0 {
			return -1, false
		}
		c.members = append(c.members, canonMember{key, val, end})
		i = jsonscan.SkipWS(b, end)
		if i >= len(b) {
			return -1, false
		}
		if b[i] == '}' {
			i++
			break
		}
		if b[i] != ',' {
			return -1, false
		}
		i = jsonscan.SkipWS(b, i+1)
	}
	members := c.members[base:]
	slices.SortFunc(members, func(x, y canonMember) int { return bytes.Compare(x.key, y.key) })
	for k := 1; k < len(members); k++ {
		if string(members[k].key) == string(members[k-1].key) {
			return -1, false
		}
	}
	c.out = append(c.out, '{')
	// Each value's own objects push their members past this object's and
	// pop them again, so members keep their indexes (not the slice).
	for k, top := base, len(c.members); k < top; k++ {
		m := c.members[k]
		if k > base {
			c.out = append(c.out, ',')
		}
		c.out = append(c.out, '"')
		c.out = append(c.out, m.key...)
		c.out = append(c.out, '"', ':')
		if end, ok := c.value(b, m.val, depth+1); !ok || end != m.end {
			return -1, false
		}
	}
	c.out = append(c.out, '}')
	return i, true
}

// escaped writes a string that held escapes as RFC 8785 does: its
// characters as they are but for " and \ and the control characters
// (\b \t \n \f \r, the others as \u00xx). A lone surrogate goes to the
// library.
func (c *canon) escaped(content []byte) bool {
	c.text = jsonscan.AppendUnquoted(c.text[:0], content)
	if bytes.ContainsRune(c.text, utf8.RuneError) {
		return false
	}
	c.out = jsonscan.AppendString(c.out, string(c.text), jsonscan.ShortBF|jsonscan.RawLineSeps)
	return true
}

func (c *canon) literal(b []byte, i int, lit string) (int, bool) {
	end := jsonscan.ScanLiteral(b, i, lit)
	if end < 0 {
		return -1, false
	}
	c.out = append(c.out, lit...)
	return end, true
}

// number writes a number as RFC 8785 (ECMAScript's Number toString) does
// where that is the shortest round-trip decimal in plain notation: 0, and
// magnitudes from 1e-6 up to 1e21; an integer of up to 15 digits is
// already in that form. Others (-0, exponent notation) go to the library.
func (c *canon) number(n []byte) bool {
	if plainInt(n) {
		c.out = append(c.out, n...)
		return true
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		return false
	}
	if f == 0 {
		if n[0] == '-' {
			return false
		}
		c.out = append(c.out, '0')
		return true
	}
	if a := math.Abs(f); a < 1e-6 || a >= 1e21 {
		return false
	}
	c.out = strconv.AppendFloat(c.out, f, 'f', -1, 64)
	return true
}

// plainInt reports whether n (a valid JSON number) is 0 or an integer of
// 1 to 15 digits without a leading zero: exactly a double, written as
// ECMAScript writes it.
func plainInt(n []byte) bool {
	d := n
	if len(d) > 0 && d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 15 || (d[0] == '0' && (len(d) > 1 || len(n) > 1)) {
		return false
	}
	for _, ch := range d {
		if !jsonscan.IsDigit(ch) {
			return false
		}
	}
	return true
}

// appendCanonical appends the fast form of the args value at b[i:] to dst
// (canon), with the index after it.
func appendCanonical(dst, b []byte) ([]byte, int, bool) {
	c := canon{out: dst}
	end, ok := c.value(b, 0, 0)
	return c.out, end, ok
}
