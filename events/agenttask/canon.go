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
// they hold escapes), object keys below U+E000 (sorted by their UTF-8
// bytes, which is RFC 8785's UTF-16 order there) and not repeated, any
// number, true, false and null. Its buffers are reused (canonPool): a
// digest allocates nothing but its string. FuzzArgsDigest holds it to the
// library.
type canon struct {
	out []byte
	// members is a stack of the objects being written, innermost last:
	// each object's members as written, then sorted in place.
	members []canonMember
	text    []byte // an escaped string's text
	keys    []byte // the keys that held escapes, decoded (members' keys view it)
	tmp     []byte // an object's members as read, while they are written sorted
}

// canonMember is an object member: its key (without quotes: a view of the
// args, or of keys where it held escapes) and where its text, "key":value,
// lies in out.
type canonMember struct {
	key    []byte
	off, n int
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

// object writes the object's members as they come, each "key":value
// with its value in its canonical form, then, unless they came sorted,
// sorts them by key and writes them again in that order over the same
// bytes (the object's canonical text is as long either way).
func (c *canon) object(b []byte, i, depth int) (int, bool) {
	base := len(c.members)
	defer func() { c.members = c.members[:base] }()
	start := len(c.out)
	c.out = append(c.out, '{')
	i = jsonscan.SkipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		c.out = append(c.out, '}')
		return i + 1, true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return -1, false
		}
		kstart := i
		kend, flags := jsonscan.ScanString(b, i)
		if kend < 0 {
			return -1, false
		}
		off := len(c.out)
		key := b[kstart+1 : kend-1]
		if flags == 0 {
			c.out = append(c.out, b[kstart:kend]...)
		} else if key = c.key(key, flags); key == nil {
			return -1, false
		}
		c.out = append(c.out, ':')
		i = jsonscan.SkipWS(b, kend)
		if i >= len(b) || b[i] != ':' {
			return -1, false
		}
		var ok bool
		if i, ok = c.value(b, i+1, depth+1); !ok {
			return -1, false
		}
		// Nested objects have pushed and popped their own members by now.
		c.members = append(c.members, canonMember{key, off, len(c.out) - off})
		c.out = append(c.out, ',')
		i = jsonscan.SkipWS(b, i)
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
	c.out[len(c.out)-1] = '}' // the last member's comma
	members := c.members[base:]
	if !sortKeys(members) {
		return i, uniqueKeys(members)
	}
	if !uniqueKeys(members) {
		return -1, false
	}
	c.tmp = append(c.tmp[:0], c.out[start:]...)
	w := start + 1
	for _, m := range members {
		w += copy(c.out[w:], c.tmp[m.off-start:m.off-start+m.n])
		c.out[w] = ','
		w++
	}
	c.out[w-1] = '}'
	return i, true
}

func uniqueKeys(members []canonMember) bool {
	for k := 1; k < len(members); k++ {
		if string(members[k].key) == string(members[k-1].key) {
			return false
		}
	}
	return true
}

// sortKeys sorts members by key (bytes) and reports whether they were out
// of order. An object has few members: an insertion sort of string
// comparisons, a large one slices.SortFunc.
func sortKeys(members []canonMember) (moved bool) {
	if len(members) > 16 {
		if slices.IsSortedFunc(members, compareKeys) {
			return false
		}
		slices.SortFunc(members, compareKeys)
		return true
	}
	for k := 1; k < len(members); k++ {
		m := members[k]
		j := k
		for ; j > 0 && string(m.key) < string(members[j-1].key); j-- {
			members[j] = members[j-1]
		}
		if j != k {
			members[j] = m
			moved = true
		}
	}
	return moved
}

func compareKeys(x, y canonMember) int { return bytes.Compare(x.key, y.key) }

// escaped writes a string that held escapes as RFC 8785 does: its
// characters as they are but for " and \ and the control characters
// (\b \t \n \f \r, the others as \u00xx). A lone surrogate goes to the
// library.
func (c *canon) escaped(content []byte) bool {
	c.text = jsonscan.AppendUnquoted(c.text[:0], content)
	if bytes.ContainsRune(c.text, utf8.RuneError) {
		return false
	}
	c.quote(c.text)
	return true
}

// key writes a key that holds escapes or bytes past ASCII, and returns it
// decoded (in c.keys, for the sort), or nil for the library: a lone
// surrogate, invalid UTF-8, or a character from U+E000 up, where RFC
// 8785's order (of UTF-16 code units) is not the order of UTF-8 bytes.
func (c *canon) key(content []byte, flags uint8) []byte {
	key := content
	if flags&jsonscan.StrEscape != 0 {
		k := len(c.keys)
		c.keys = jsonscan.AppendUnquoted(c.keys, content)
		key = c.keys[k:]
		if bytes.ContainsRune(key, utf8.RuneError) {
			return nil
		}
	} else if !utf8.Valid(key) {
		return nil
	}
	for _, ch := range key {
		if ch >= 0xEE { // the first byte of U+E000 and of everything above
			return nil
		}
	}
	c.quote(key)
	return key
}

// quote writes text (valid UTF-8) as an RFC 8785 string.
func (c *canon) quote(text []byte) {
	for _, ch := range text {
		if ch < 0x20 || ch == '"' || ch == '\\' {
			c.out = jsonscan.AppendString(c.out, string(text), jsonscan.ShortBF|jsonscan.RawLineSeps)
			return
		}
	}
	c.out = append(c.out, '"')
	c.out = append(c.out, text...)
	c.out = append(c.out, '"')
}

func (c *canon) literal(b []byte, i int, lit string) (int, bool) {
	end := jsonscan.ScanLiteral(b, i, lit)
	if end < 0 {
		return -1, false
	}
	c.out = append(c.out, lit...)
	return end, true
}

// number writes a number as RFC 8785 does, ECMAScript's Number toString:
// the shortest decimal that reads back to its double, in plain notation
// from 1e-6 up to 1e21 (an integer of up to 15 digits, and the like, is
// already in that form: plainNumber), with an exponent outside (1e+21,
// 1e-7), and 0 for -0.
func (c *canon) number(n []byte) bool {
	if plainNumber(n) {
		c.out = append(c.out, n...)
		return true
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		return false
	}
	switch a := math.Abs(f); {
	case f == 0:
		c.out = append(c.out, '0')
	case a < 1e-6 || a >= 1e21:
		// Go writes the exponent with two digits at least, ECMAScript
		// with no leading zero: 1e-07 is 1e-7.
		start := len(c.out)
		c.out = strconv.AppendFloat(c.out, f, 'e', -1, 64)
		if e := bytes.IndexByte(c.out[start:], 'e') + start; c.out[e+2] == '0' {
			c.out = append(c.out[:e+2], c.out[e+3:]...)
		}
	default:
		c.out = strconv.AppendFloat(c.out, f, 'f', -1, 64)
	}
	return true
}

// plainNumber reports whether the valid JSON number n is written as
// ECMAScript's Number toString writes its double, so that RFC 8785 keeps
// it as it is: no exponent, no leading zero (but the one of "0.x"), no
// trailing zero in a fraction, at most 15 significant digits (a decimal of
// 15 digits or fewer is the shortest that reads back to its double: no two
// such decimals make one double), and a magnitude from 1e-6 up to 1e21
// (outside that, toString uses an exponent); not -0.
func plainNumber(n []byte) bool {
	d := n
	if d[0] == '-' {
		d = d[1:]
	}
	intLen := len(d)
	if dot := bytes.IndexByte(d, '.'); dot >= 0 {
		intLen = dot
	}
	if bytes.ContainsAny(d, "eE") || intLen == 0 || intLen > 21 {
		return false
	}
	sig := 0 // significant digits
	if d[0] == '0' {
		if intLen > 1 {
			return false
		}
		if intLen == len(d) { // 0 or -0
			return len(d) == len(n)
		}
		frac := d[2:]
		lead := len(frac) - len(bytes.TrimLeft(frac, "0"))
		if lead > 5 || lead == len(frac) { // below 1e-6, or zero
			return false
		}
		sig = len(frac) - lead
	} else {
		sig = len(d)
		if intLen < len(d) {
			sig-- // the point
		}
	}
	if intLen < len(d) && d[len(d)-1] == '0' {
		return false // a trailing zero in the fraction
	}
	if intLen == len(d) {
		// An integer: its trailing zeros are not significant.
		sig = len(bytes.TrimRight(d, "0"))
	}
	return sig <= 15
}
