package jsonscan

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// valid reports whether b is one JSON value, as json.Valid does, using the
// scanner the way the decoders do.
func valid(b []byte) bool {
	i := SkipValue(b, SkipWS(b, 0), 0)
	return i >= 0 && SkipWS(b, i) == len(b)
}

var validCases = []string{
	``, ` `, `{}`, `[]`, `{"a":1}`, ` { "a" : [ 1 , 2 ] } `, `{"a":1,}`, `[1,]`, `{"a"}`, `{"a":}`, `{1:2}`,
	`"x"`, `"`, `"\"`, `"\\"`, `"\u00e9"`, `"\u00g9"`, `"\u00"`, `"\x"`, `"a` + "\x01" + `b"`, "\"\x7f\"",
	"\"\xff\xfe\"", `"\ud800"`, `"` + strings.Repeat("abcdefgh", 20) + `"`,
	`"` + strings.Repeat("abcdefgh", 20) + "\x1f" + `"`, `"` + strings.Repeat("a\\n", 40) + `"`,
	`0`, `-0`, `01`, `-`, `1.`, `1.5`, `.5`, `1e`, `1e+`, `1e+5`, `1E-05`, `-1.0e10`, `1x`,
	`true`, `tru`, `false`, `null`, `nul`, `nulll`, `[true,false,null]`, "[1,\t\n\r2]", "[1,\v2]",
	`{"a":{"b":[{"c":"d"}]}}`, `{"a":1}{}`, `[[[]]]`, `[[[]]`,
	// Indentation: runs of spaces around the 8-byte steps, mixed with
	// tabs, CR and bytes that are not JSON whitespace (\v, \f, NBSP).
	"{\n" + strings.Repeat(" ", 7) + `"a": [` + "\n" + strings.Repeat(" ", 8) + "1,\n" + strings.Repeat(" ", 9) + "2\n" + strings.Repeat(" ", 17) + "]\r\n}" + strings.Repeat(" ", 16),
	"[" + strings.Repeat(" ", 8) + "\t" + strings.Repeat(" ", 8) + "1]", "[" + strings.Repeat(" ", 10) + "\f1]",
	"[" + strings.Repeat(" ", 9) + "\v]", "[1," + strings.Repeat(" ", 12) + "\xc2\xa0]", strings.Repeat(" ", 24) + "1" + strings.Repeat(" ", 9) + "x",
}

// denseLiterals are string literals dense with escapes, as an SQS body that
// is itself JSON arrives: a JSON document quoted (an escaped quote every
// few bytes), with the escapes at every offset in a word, runs of 32 plain
// bytes and more between them (where SkipString switches to
// bytes.IndexByte), and \u escapes and non-ASCII text among them.
func denseLiterals() []string {
	doc := `{"tool":"x","args":{"path":"/a/b","n":[1,2],"s":"q\"uo\\te\n"},"é":"日本","pad":"` +
		strings.Repeat("p", 40) + `","t":"\u00e9\ud83d\ude00"}`
	quoted, _ := json.Marshal(doc)
	lits := []string{string(quoted)}
	for pad := range 17 {
		p := strings.Repeat("x", pad)
		lits = append(lits,
			`"`+p+strings.Repeat(`\"k\":`, 12)+`"`,
			`"`+p+`\"`+strings.Repeat("y", 31+pad)+`\"`+strings.Repeat("z", 40)+`\n"`,
			`"`+strings.Repeat(p+`\u00e9é\t`, 5)+`"`,
		)
	}
	return lits
}

// TestDenseEscapesMatchEncodingJSON damages each escape-dense literal at
// every byte (a control character, a bad escape, a lone backslash, a quote
// that ends it early, the end of the input) and holds the scanner to
// json.Valid, ScanString to SkipString, and decoding to json.Unmarshal.
func TestDenseEscapesMatchEncodingJSON(t *testing.T) {
	check := func(b []byte) {
		t.Helper()
		if got, want := valid(b), json.Valid(b); got != want {
			t.Fatalf("valid(%q) = %v, json.Valid says %v", b, got, want)
		}
		end, _ := ScanString(b, 0)
		if skip := SkipString(b, 0); skip != end {
			t.Fatalf("ScanString(%q) ends at %d, SkipString at %d", b, end, skip)
		}
		if un, _, _ := ScanUnquoteInPlace(bytes.Clone(b), 0); un != end {
			t.Fatalf("ScanString(%q) ends at %d, ScanUnquoteInPlace at %d", b, end, un)
		}
		if end > 0 && end == len(b) {
			checkUnquote(t, b)
		}
	}
	for _, lit := range denseLiterals() {
		check([]byte(lit))
		for k := 1; k < len(lit)-1; k++ {
			for _, c := range []byte{0x01, 0x1f, 'x', '\\', '"'} {
				b := []byte(lit)
				b[k] = c
				check(b)
			}
			check([]byte(lit[:k]))
		}
	}
}

func TestValidMatchesEncodingJSON(t *testing.T) {
	for _, c := range validCases {
		if got, want := valid([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("valid(%q) = %v, json.Valid says %v", c, got, want)
		}
	}
}

// TestMaxDepth: json.Valid accepts MaxDepth nested arrays and objects and
// rejects one more; so does the scanner.
func TestMaxDepth(t *testing.T) {
	for _, open := range []string{"[", `{"k":`} {
		closer := "]"
		if open != "[" {
			closer = "}"
		}
		for _, depth := range []int{MaxDepth, MaxDepth + 1} {
			doc := []byte(strings.Repeat(open, depth) + "0" + strings.Repeat(closer, depth))
			if got, want := valid(doc), json.Valid(doc); got != want || want != (depth == MaxDepth) {
				t.Errorf("%s nested %d deep: valid = %v, json.Valid = %v", open, depth, got, want)
			}
		}
	}
}

// TestSkipWS holds SkipWS to a byte-at-a-time reference on whitespace runs
// of every length up to 40 (space runs crossing the 8-byte steps, tabs,
// newlines and CRs among them), ended by a token, a byte that JSON does not
// count as whitespace, or the end of the input.
func TestSkipWS(t *testing.T) {
	ref := func(b []byte, i int) int {
		for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
			i++
		}
		return i
	}
	for n := range 41 {
		for _, mix := range []string{" ", "\n" + strings.Repeat(" ", 10), " \t", "\r\n  ", strings.Repeat(" ", 9) + "\n"} {
			run := strings.Repeat(mix, n)[:n]
			for _, tail := range []string{"", "x", "\"", "\v", "\f", "\x00", "\xa0", "}"} {
				// The tail alone at the end, and with 8 bytes after it (a
				// word to load past the run).
				for _, more := range []string{"", strings.Repeat(" ", 8), "\x00\x00\x00\x00\x00\x00\x00\x00"} {
					for _, start := range []int{0, 1} {
						b := []byte("[" + run + tail + more)
						if got, want := SkipWS(b, start), ref(b, start); got != want {
							t.Fatalf("SkipWS(%q, %d) = %d, want %d", b, start, got, want)
						}
					}
				}
			}
		}
	}
}

// TestScanStringFlags: ScanString ends where SkipString ends and flags
// escapes and high bytes.
func TestScanStringFlags(t *testing.T) {
	for _, c := range []struct {
		lit   string
		flags uint8
	}{
		{`"plain"`, 0},
		{`"` + strings.Repeat("x", 40) + `"`, 0},
		{`"a\nb"`, StrEscape},
		{`"é"`, StrHigh},
		{`"` + strings.Repeat("x", 40) + `é\t"`, StrEscape | StrHigh},
		{"\"\xff\"", StrHigh},
	} {
		b := []byte(c.lit + ",")
		end, flags := ScanString(b, 0)
		if end != len(c.lit) || flags != c.flags {
			t.Errorf("ScanString(%q) = %d, %b; want %d, %b", c.lit, end, flags, len(c.lit), c.flags)
		}
		if got := SkipString(b, 0); got != len(c.lit) {
			t.Errorf("SkipString(%q) = %d, want %d", c.lit, got, len(c.lit))
		}
	}
}

// TestAppendUnquotedMatchesEncodingJSON decodes string literals as
// json.Unmarshal does, including lone surrogates and invalid UTF-8.
func TestAppendUnquotedMatchesEncodingJSON(t *testing.T) {
	for _, c := range []string{
		`""`, `"abc"`, `"a\"b\\c\/d\be\ff\ng\rh\ti"`, `"\u00e9\u20AC"`, `"\ud83d\ude00"`,
		`"\ud83d"`, `"\ude00x"`, `"\ud83d\u0041"`, "\"a\xffb\xc3\"", "\"\xed\xa0\x80\"", `"é\n"`,
	} {
		checkUnquote(t, []byte(c))
	}
}

func checkUnquote(t *testing.T, lit []byte) {
	t.Helper()
	var want string
	if err := json.Unmarshal(lit, &want); err != nil {
		t.Fatalf("json.Unmarshal(%q): %v", lit, err)
	}
	if got := AppendUnquoted([]byte("pre"), lit[1:len(lit)-1]); string(got) != "pre"+want {
		t.Errorf("AppendUnquoted(%q) = %q, want %q", lit, got[3:], want)
	}
	// In place, inside a document (a byte after the literal), as
	// functions/batch decodes a body.
	b := append(bytes.Clone(lit), ',')
	end, n, flags := ScanUnquoteInPlace(b, 0)
	if wantEnd, wantFlags := ScanString(append(bytes.Clone(lit), ','), 0); end != wantEnd || flags != wantFlags {
		t.Fatalf("ScanUnquoteInPlace(%q) = %d, %b; ScanString says %d, %b", lit, end, flags, wantEnd, wantFlags)
	}
	got := b[1:n]
	if flags&StrHigh != 0 && !utf8.Valid(got) {
		got = AppendReplacingInvalid(nil, got)
	}
	if string(got) != want {
		t.Errorf("ScanUnquoteInPlace(%q) decodes to %q, want %q", lit, got, want)
	}
}

// FuzzValid checks the scanner against json.Valid on any input, and the
// decoding of any valid string literal against json.Unmarshal.
func FuzzValid(f *testing.F) {
	for _, c := range validCases {
		f.Add([]byte(c))
	}
	for _, c := range denseLiterals() {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := valid(b), json.Valid(b); got != want {
			t.Fatalf("valid(%q) = %v, json.Valid says %v", b, got, want)
		}
		i := SkipWS(b, 0)
		if i < len(b) && b[i] == '"' {
			end, flags := ScanString(b, i)
			if skip := SkipString(b, i); skip != end {
				t.Fatalf("ScanString(%q) ends at %d, SkipString at %d", b, end, skip)
			}
			if end > 0 {
				lit := b[i:end]
				if (flags&StrHigh != 0) != !isASCII(lit) || (flags&StrEscape != 0) != bytes.Contains(lit, []byte{'\\'}) {
					t.Fatalf("ScanString(%q): flags %b", lit, flags)
				}
				checkUnquote(t, lit)
			}
		}
	})
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
