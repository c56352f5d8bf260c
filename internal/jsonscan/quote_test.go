package jsonscan

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

var quoteCases = []string{
	"", "plain ascii, longer than eight bytes", `"quoted" \back\slash`, "\b\f\n\r\t\x00\x01\x1f\x7f",
	"<html> & friends", "é ü 日本", "\u2028\u2029", "\ufffe\uffff", "bad \xff utf-8 \xc3", "\xed\xa0\x80",
	strings.Repeat("12345678", 5) + "\x02" + strings.Repeat("z", 9),
}

// stdJSON is encoding/json's literal for s, HTML escaping off.
func stdJSON(t *testing.T, s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// slogJSON is log/slog's JSON handler's literal for s.
func slogJSON(t *testing.T, s string) string {
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key != "k" {
				return slog.Attr{}
			}
			return a
		},
	})).Info("", "k", s)
	line := strings.TrimSuffix(buf.String(), "\n")
	if !strings.HasPrefix(line, `{"k":`) || !strings.HasSuffix(line, "}") {
		t.Fatalf("slog line %q", line)
	}
	return line[len(`{"k":`) : len(line)-1]
}

func checkAppendString(t *testing.T, s string) {
	t.Helper()
	if got, want := string(AppendString(nil, s, ShortBF)), stdJSON(t, s); got != want {
		t.Errorf("AppendString(%q, ShortBF) = %s, encoding/json writes %s", s, got, want)
	}
	if got, want := string(AppendString(nil, s, 0)), slogJSON(t, s); got != want {
		t.Errorf("AppendString(%q, 0) = %s, slog writes %s", s, got, want)
	}
	// Nonchars changes only U+FFFE and U+FFFF, and what it writes decodes
	// to what encoding/json's literal decodes to.
	withNC := AppendString(nil, s, ShortBF|Nonchars)
	if want := strings.NewReplacer("\ufffe", `\ufffe`, "\uffff", `\uffff`).Replace(stdJSON(t, s)); string(withNC) != want {
		t.Errorf("AppendString(%q, ShortBF|Nonchars) = %s, want %s", s, withNC, want)
	}
	var back, std string
	if err := json.Unmarshal(withNC, &back); err != nil {
		t.Fatalf("%s: %v", withNC, err)
	}
	if err := json.Unmarshal([]byte(stdJSON(t, s)), &std); err != nil || back != std {
		t.Errorf("%s decodes to %q, encoding/json's literal to %q (%v)", withNC, back, std, err)
	}
}

func TestAppendStringMatchesEncodingJSONAndSlog(t *testing.T) {
	for _, s := range quoteCases {
		checkAppendString(t, s)
	}
	if got := AppendString([]byte("pre"), "x", 0); string(got) != `pre"x"` {
		t.Errorf("appends: %q", got)
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range quoteCases {
		f.Add(s)
	}
	f.Fuzz(checkAppendString)
}

// BenchmarkAppendString: a log line's error text, mostly ASCII with one
// escape, and a short non-ASCII one, with dlq_meta's escapes and slog's.
func BenchmarkAppendString(b *testing.B) {
	for _, e := range []struct {
		name string
		esc  Escapes
	}{{"meta", ShortBF | Nonchars}, {"log", 0}} {
		for _, c := range []struct{ name, s string }{
			{"ascii", strings.Repeat("tool call failed: upstream timeout ", 4) + "\n"},
			{"unicode", "résumé \u2028 日本語 \ufffe"},
		} {
			b.Run(e.name+"/"+c.name, func(b *testing.B) {
				buf := make([]byte, 0, 256)
				b.SetBytes(int64(len(c.s)))
				for b.Loop() {
					buf = AppendString(buf[:0], c.s, e.esc)
				}
			})
		}
	}
}
