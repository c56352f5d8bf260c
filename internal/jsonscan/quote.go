package jsonscan

import "unicode/utf8"

// Escapes chooses, for AppendString, the escapes on which encoding/json and
// log/slog's JSON handler differ, and one that neither writes.
type Escapes uint8

const (
	// ShortBF writes backspace and form feed as \b and \f, as encoding/json
	// does; without it they are \u0008 and \u000c, as log/slog writes them.
	ShortBF Escapes = 1 << iota
	// Nonchars also escapes U+FFFE and U+FFFF (as \ufffe and \uffff), the
	// only characters a valid Go string can hold that SQS refuses in a
	// String attribute. Neither encoding/json nor log/slog escapes them.
	Nonchars
	// RawLineSeps writes U+2028 and U+2029 as they are, as RFC 8785
	// (events/agenttask's canonical args) does, instead of escaping them.
	RawLineSeps
)

const hexDigits = "0123456789abcdef"

// AppendString appends s to dst as a JSON string literal, as encoding/json
// (HTML escaping off) and log/slog's JSON handler both write one: \" \\ \n
// \r \t, \u00XX for the other control characters (but see ShortBF), \ufffd
// for each invalid UTF-8 byte, and U+2028 and U+2029 escaped; esc adds the
// escapes it names. Eight plain ASCII bytes are copied at a time.
func AppendString(dst []byte, s string, esc Escapes) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) {
			x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
				uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
			if special(x)|x&swarHi == 0 {
				i += 8
				continue
			}
		}
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch {
			case b == '\\' || b == '"':
				dst = append(dst, '\\', b)
			case b == '\n':
				dst = append(dst, '\\', 'n')
			case b == '\r':
				dst = append(dst, '\\', 'r')
			case b == '\t':
				dst = append(dst, '\\', 't')
			case b == '\b' && esc&ShortBF != 0:
				dst = append(dst, '\\', 'b')
			case b == '\f' && esc&ShortBF != 0:
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if (c == '\u2028' || c == '\u2029') && esc&RawLineSeps == 0 || (c == 0xFFFE || c == 0xFFFF) && esc&Nonchars != 0 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', hexDigits[c>>12], hexDigits[c>>8&0xF], hexDigits[c>>4&0xF], hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
