package textutil

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// hostile holds every kind of text a message can use against the face
// that shows it.
var hostile = []string{
	"\x1b[2J",                           // clear the screen
	"\x1b]8;;http://evil.example\x1b\\", // a hyperlink
	"\x1b]52;c;ZXZpbA==\x07",            // write the clipboard
	"a\nb", "a\r\nb", "a\tb", "\x00", "\x7f",
	"\u009b31m", "\u0085", // C1: CSI, NEL
	"task-\u202egnp.exe", "\u202a\u202b\u202c\u202d", "\u2066\u2067\u2068\u2069", "\u200e\u200f\u061c",
	"\u2028\u2029",
	"\xff\x9b", // not UTF-8
}

// raw are the runes and bytes none of the escaped faces may hold.
func hasRaw(s string, keepLines bool) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return true
		}
		if IsControl(r) && !(keepLines && (r == '\n' || r == '\t')) {
			return true
		}
		i += size
	}
	return false
}

func TestEscape(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"plain text: café ✓", "plain text: café ✓"},
		{"\x1b[2J", `\x1b[2J`},
		{"a\nb", `a\nb`},
		{"a\r\nb\tc", `a\r\nb\tc`},
		{"\x00\x7f", `\x00\x7f`},
		{"\u009b", `\u009b`},
		{"task-\u202egnp.exe", `task-\u202egnp.exe`},
		{"\u2066x\u2069\u061c\u200e\u200f\u2028", `\u2066x\u2069\u061c\u200e\u200f\u2028`},
		{"a\xffb", `a\xffb`},
		{`already \x1b`, `already \x1b`}, // a backslash is text
	} {
		if got := Escape(tt.in); got != tt.want {
			t.Errorf("Escape(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	for _, s := range hostile {
		if got := Escape(s); hasRaw(got, false) || strings.Contains(got, "\n") {
			t.Errorf("Escape(%q) = %q keeps a control", s, got)
		}
		if got := EscapeBlock(s); hasRaw(got, true) {
			t.Errorf("EscapeBlock(%q) = %q keeps a control", s, got)
		}
		if !NeedsEscape(s) {
			t.Errorf("NeedsEscape(%q) = false", s)
		}
	}
	if got := EscapeBlock("line 1\n\tline 2\r\n"); got != "line 1\n\tline 2\\r\n" {
		t.Errorf("EscapeBlock kept or lost the wrong breaks: %q", got)
	}
}

func TestEscapeNoCopy(t *testing.T) {
	s := strings.Repeat("web.search@2 ", 10)
	if allocs := testing.AllocsPerRun(10, func() { _ = Escape(s) }); allocs != 0 {
		t.Errorf("Escape of clean text allocated %v times", allocs)
	}
}

func TestMarkdownInert(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"[click me](http://evil.example)", `\[click me\](http:\/\/evil.example)`},
		{"![img](x.png)", `\!\[img\](x.png)`},
		{"<a href=x>y</a>", `&lt;a href=x&gt;y&lt;/a&gt;`},
		{"<https://evil.example>", `&lt;https:\/\/evil.example&gt;`},
		{"see www.evil.example or https://evil.example", `see www\.evil.example or https:\/\/evil.example`},
		{"mail bob@evil.example", `mail bob\@evil.example`},
		{"`code` *em* _em_ ~~s~~ # h | c", "\\`code\\` \\*em\\* \\_em\\_ \\~\\~s\\~\\~ \\# h \\| c"},
		{"&#x202e;", `&amp;\#x202e;`},
		{`\[escaped\]`, `\\\[escaped\\\]`},
		{"a\nb", `a\\nb`},
		{"effect_unknown _em_ a_", `effect_unknown \_em\_ a\_`},
		{"\x1b[2J", `\\x1b\[2J`},
	} {
		if got := Markdown(tt.in); got != tt.want {
			t.Errorf("Markdown(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	for _, s := range hostile {
		if got := Markdown(s); hasRaw(got, false) {
			t.Errorf("Markdown(%q) = %q keeps a control", s, got)
		}
	}
	if got := MarkdownCode("a`b|c\x1b"); got != "`a'b¦c\\x1b`" {
		t.Errorf("MarkdownCode = %q", got)
	}
}

func TestJSONSafe(t *testing.T) {
	t.Parallel()
	in := map[string]string{"key": "k\u202e\u009b\x7f\u2028 é \x1b\n"}
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	safe := JSONSafe(raw)
	if hasRaw(string(safe), false) {
		t.Fatalf("JSONSafe left a control: %q", safe)
	}
	var back map[string]string
	if err := json.Unmarshal(safe, &back); err != nil {
		t.Fatalf("JSONSafe broke the JSON %s: %v", safe, err)
	}
	if back["key"] != in["key"] {
		t.Errorf("the value changed: %q, want %q", back["key"], in["key"])
	}
	if !strings.Contains(string(safe), `\u202e`) || !strings.Contains(string(safe), `é`) {
		t.Errorf("JSONSafe = %s", safe)
	}
	clean := []byte(`{"a":"é"}`)
	if got := JSONSafe(clean); &got[0] != &clean[0] {
		t.Error("JSONSafe copied clean JSON")
	}
	var b strings.Builder
	if _, err := JSONWriter(&b).Write(raw); err != nil || b.String() != string(safe) {
		t.Errorf("JSONWriter wrote %q, %v", b.String(), err)
	}
}
