package textutil

import (
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// What a message can put in front of an operator is text, never a
// command to the terminal, the page or the renderer. Every face that shows
// message content (a table, a plain line, a key list, a Markdown file, an
// HTML page, a log line) writes it through Escape (one line), EscapeBlock
// (a block whose line breaks are its own) or Markdown (Markdown text).
//
// Escaped, and so shown as visible text:
//   - the C0 controls (U+0000–U+001F: ESC starts every terminal escape
//     sequence, ESC[2J clears the screen, ESC]8 is a hyperlink, ESC]52
//     writes the clipboard), DEL (U+007F) and the C1 controls
//     (U+0080–U+009F: U+009B is a one-character CSI on some terminals);
//   - the bidi controls that reorder what follows them (U+061C, U+200E,
//     U+200F, U+202A–U+202E, U+2066–U+2069: U+202E shows
//     "task-\u202egnp.exe" as "task-exe.png") and the line and paragraph
//     separators U+2028, U+2029;
//   - a byte that is not UTF-8 (a lone 0x9B is CSI to a terminal that is
//     not in UTF-8 mode).
//
// \n, \r and \t read as \n, \r, \t; other bytes below 0x80 and invalid
// bytes as \xHH; runes as \uHHHH. A backslash is not escaped: escaped text
// is for reading, and a literal "\x1b" in a message reads as the escaped
// ESC does. The exact bytes are in the JSON faces (-o json, --keys0).

// IsControl reports whether r is one of the runes Escape escapes (a C0 or
// C1 control, DEL, a bidi control, U+2028 or U+2029).
func IsControl(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case r < 0x61c:
		return false
	}
	switch r {
	case 0x061c, 0x200e, 0x200f, 0x2028, 0x2029,
		0x202a, 0x202b, 0x202c, 0x202d, 0x202e,
		0x2066, 0x2067, 0x2068, 0x2069:
		return true
	}
	return false
}

// Escape is s for one line of text: a table cell, a key, a plain line. It
// escapes every control IsControl names, line breaks and tabs included, and
// invalid UTF-8, so that the result holds no byte a terminal acts on and
// cannot break a line or a column. s is returned as it is (no copy) when
// there is nothing to escape.
func Escape(s string) string { return escape(s, false) }

// EscapeBlock is Escape for text whose line breaks and tabs are its own (a
// pretty-printed body, a multi-line error): \n and \t are kept, everything
// else Escape escapes is escaped, \r included (a carriage return would let
// a line overwrite the one it seems to be).
func EscapeBlock(s string) string { return escape(s, true) }

// NeedsEscape reports whether Escape would change s.
func NeedsEscape(s string) bool { return firstEscape(s, false) >= 0 }

// firstEscape is the index of the first byte of s that escape changes, or -1.
func firstEscape(s string, keepLines bool) int {
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b < 0x20 || b == 0x7f {
				if !keepLines || (b != '\n' && b != '\t') {
					return i
				}
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || IsControl(r) {
			return i
		}
		i += size
	}
	return -1
}

func escape(s string, keepLines bool) string {
	i := firstEscape(s, keepLines)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case keepLines && (c == '\n' || c == '\t'):
				b.WriteByte(c)
			case c == '\n':
				b.WriteString(`\n`)
			case c == '\r':
				b.WriteString(`\r`)
			case c == '\t':
				b.WriteString(`\t`)
			case c < 0x20 || c == 0x7f:
				writeHex(&b, `\x`, uint32(c), 2)
			default:
				b.WriteByte(c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			writeHex(&b, `\x`, uint32(c), 2)
		case IsControl(r):
			writeHex(&b, `\u`, uint32(r), 4)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func writeHex(b *strings.Builder, prefix string, v uint32, width int) {
	b.WriteString(prefix)
	h := strconv.FormatUint(uint64(v), 16)
	for n := len(h); n < width; n++ {
		b.WriteByte('0')
	}
	b.WriteString(h)
}

// Markdown is s as inert Markdown text, for a table cell, a list item or a
// paragraph: Escape'd (so one line), then every character Markdown or
// GitHub's autolinks act on made literal. [ ] ` * ~ # ! | \ are
// backslash-escaped, and _ unless it stands between two letters or digits
// (where it is never emphasis); ( and ) are left, as no link can start
// without a [; < > & written as entities (no HTML, no <autolink>,
// no &#x202e; that renders as the bidi control), and the autolinks GitHub
// finds in plain text broken: "://" as ":\/\/", "www." as "www\.", "@" before a
// dotted domain as "\@". Rendered, the text reads as s does (escaped), and no part of it is
// a link, an image, emphasis, code or HTML.
func Markdown(s string) string {
	s = Escape(s)
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '@':
			// GitHub links x@y.z as an email: break one whose domain has a
			// dot; "web.search@2" stays as it reads.
			if dom, _, _ := strings.Cut(s[i+1:], " "); strings.Contains(dom, ".") {
				b.WriteByte('\\')
			}
			b.WriteByte(c)
		case '\\', '[', ']', '`', '*', '~', '#', '!', '|':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '_':
			// Between two letters or digits a _ never opens or closes
			// emphasis (CommonMark's flanking rules): "effect_unknown"
			// stays as it reads.
			if i == 0 || i == len(s)-1 || !isAlnum(s[i-1]) || !isAlnum(s[i+1]) {
				b.WriteByte('\\')
			}
			b.WriteByte(c)
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		case ':':
			b.WriteByte(':')
			if strings.HasPrefix(s[i+1:], "//") {
				b.WriteString(`\/\/`)
				i += 2
			}
		case 'w', 'W':
			if len(s)-i >= 4 && strings.EqualFold(s[i:i+4], "www.") {
				b.WriteString(s[i : i+3])
				b.WriteString(`\.`)
				i += 3
				continue
			}
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= utf8.RuneSelf
}

// MarkdownCode is s as a Markdown code span (`s`), for identifiers a
// reader copies: Escape'd, with a backtick (which would end the span)
// and a | (which would end a table cell) shown as ' and ¦. Inside a code
// span nothing is a link or HTML.
func MarkdownCode(s string) string {
	s = strings.NewReplacer("`", "'", "|", "¦").Replace(Escape(s))
	return "`" + s + "`"
}

// JSONSafe rewrites JSON text so that it holds no raw DEL, C1 control,
// bidi control, U+2028 or U+2029 (encoding/json escapes the C0 controls but
// writes those as they are): each becomes its \uHHHH escape, which a JSON
// reader decodes to the same string, so the value is unchanged and a
// terminal shows the escape. Outside strings JSON is ASCII, so the rewrite
// only ever touches string contents. b is returned as it is when nothing
// needs it.
func JSONSafe(b []byte) []byte {
	i := firstJSONEscape(b)
	if i < 0 {
		return b
	}
	out := make([]byte, 0, len(b)+12)
	out = append(out, b[:i]...)
	for i < len(b) {
		c := b[i]
		if c < utf8.RuneSelf {
			if c == 0x7f {
				out = append(out, `\u007f`...)
			} else {
				out = append(out, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError && IsControl(r) {
			h := strconv.FormatUint(uint64(r), 16)
			out = append(out, `\u`...)
			for n := len(h); n < 4; n++ {
				out = append(out, '0')
			}
			out = append(out, h...)
		} else {
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	return out
}

func firstJSONEscape(b []byte) int {
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			if c == 0x7f {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError && IsControl(r) {
			return i
		}
		i += size
	}
	return -1
}

// JSONWriter is w through JSONSafe: for JSON written to a terminal (the
// CLI's -o json, JSON log lines). Each Write must hold whole runes, as
// encoding/json's Encoder and slog's handlers write (a value or a record a
// call).
func JSONWriter(w io.Writer) io.Writer { return jsonWriter{w} }

type jsonWriter struct{ w io.Writer }

func (j jsonWriter) Write(p []byte) (int, error) {
	q := JSONSafe(p)
	if _, err := j.w.Write(q); err != nil {
		return 0, err
	}
	return len(p), nil
}
