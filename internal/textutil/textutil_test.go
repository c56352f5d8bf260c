package textutil

import (
	"testing"
	"unicode/utf8"
)

func TestTruncate(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		s    string
		n    int
		want string
	}{
		{"", 4, ""},
		{"abc", 3, "abc"},
		{"abc", 4, "abc"},
		{"abcdef", 3, "abc"},
		{"abc", 0, ""},
		{"abc", -1, ""},
		{"aé", 2, "a"},          // é is two bytes: not cut in two
		{"aé", 3, "aé"},         // fits exactly
		{"a€b", 3, "a"},         // € is three bytes
		{"a€b", 4, "a€"},        // a rune boundary at n
		{"€€", 5, "€"},          // one byte short of the second €
		{"𝄞x", 3, ""},           // a four-byte rune longer than n
		{"x\xffyz", 2, "x\xff"}, // an invalid byte is a rune start: cut after it, as it was
	} {
		got := Truncate(tt.s, tt.n)
		if got != tt.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
		if len(got) > max(tt.n, 0) && got != tt.s {
			t.Errorf("Truncate(%q, %d) = %q: longer than %d bytes", tt.s, tt.n, got, tt.n)
		}
		if utf8.ValidString(tt.s) && !utf8.ValidString(got) {
			t.Errorf("Truncate(%q, %d) = %q: not UTF-8", tt.s, tt.n, got)
		}
	}
}

func TestCount(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]string{0: "0 groups", 1: "1 group", 2: "2 groups", 1000: "1000 groups"} {
		if got := Count(n, "group", "groups"); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
}
