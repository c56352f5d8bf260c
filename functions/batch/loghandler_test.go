package batch

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dropTime removes the time field, the one the two writers read apart.
func dropTime(t *testing.T, line string) string {
	t.Helper()
	const prefix = `{"time":"`
	require.True(t, strings.HasPrefix(line, prefix), line)
	end := strings.Index(line, `","level":`)
	require.Positive(t, end, line)
	_, err := time.Parse(time.RFC3339Nano, line[len(prefix):end])
	require.NoError(t, err, line)
	return line[end:]
}

// logLineTexts are texts that exercise every escape of slog's JSON writer.
func logLineTexts() []string {
	texts := []string{
		"", "plain", `quote " and backslash \`, "tab\tnewline\nreturn\r", "\x00\x01\x08\x0c\x1f\x7f",
		"naïve “quoted” <tag> & é", "\u2028 and \u2029", "\xff\xfe invalid \xc3", "\ufffe\uffff",
		"12345678", "1234567\"", strings.Repeat("long plain text ", 40), "🙂 four-byte",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "Z", " ", "\"", "\\", "\n", "\x01", "\x7f", "é", "\u2028", "\xff", "🙂", "12345678"}
	for range 500 {
		var b strings.Builder
		for range rng.IntN(40) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		texts = append(texts, b.String())
	}
	return texts
}

// The processor's own "dead-lettered" line (NewLogHandler) is the line
// slog.NewJSONHandler writes for the same record, byte for byte but for
// the time, which each reads from the clock.
func TestDeadLetteredLineIsSlogJSON(t *testing.T) {
	t.Parallel()
	var fast, std bytes.Buffer
	pf := &Processor{log: slog.New(NewLogHandler(&fast, nil))}
	ps := &Processor{log: slog.New(slog.NewJSONHandler(&std, nil))}
	texts := logLineTexts()
	for i, s := range texts {
		l := deadLetterLine{
			messageID: s, queue: texts[(i+1)%len(texts)], reason: "schema_invalid", attempt: i - 3,
			traceID: texts[(i+2)%len(texts)], code: texts[(i+3)%len(texts)], err: texts[(i+4)%len(texts)],
		}
		if i%3 == 0 {
			l.stack = texts[(i+5)%len(texts)]
		}
		fast.Reset()
		std.Reset()
		pf.logDeadLettered(context.Background(), &l)
		ps.logDeadLettered(context.Background(), &l)
		require.Equal(t, dropTime(t, std.String()), dropTime(t, fast.String()), "text %q", s)
		var rec map[string]any
		require.NoError(t, json.Unmarshal(fast.Bytes(), &rec))
	}
}

// NewLogHandler is the JSON handler for every other record, respects its
// level, and leaves the dead-letter line to slog when ReplaceAttr is set.
func TestLogHandler(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	l := slog.New(NewLogHandler(&buf, &slog.HandlerOptions{Level: slog.LevelError}))
	p := &Processor{log: l}
	p.logDeadLettered(context.Background(), &deadLetterLine{messageID: "m1"})
	assert.Empty(t, buf.String(), "a WARN line below the handler's level")
	l.Error("boom", "k", 1)
	assert.Contains(t, buf.String(), `"msg":"boom","k":1}`)

	buf.Reset()
	replaced := slog.New(NewLogHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == "message_id" {
			a.Value = slog.StringValue("replaced")
		}
		return a
	}}))
	(&Processor{log: replaced}).logDeadLettered(context.Background(), &deadLetterLine{messageID: "m1"})
	assert.Contains(t, buf.String(), `"message_id":"replaced"`)

	buf.Reset()
	with := slog.New(NewLogHandler(&buf, nil)).With("function", "worker")
	(&Processor{log: with}).logDeadLettered(context.Background(), &deadLetterLine{messageID: "m1"})
	assert.Contains(t, buf.String(), `"function":"worker","message_id":"m1"`)
}

// FuzzDeadLetteredLine holds the processor's own dead-lettered line to
// slog's JSON handler on any text (make fuzz).
func FuzzDeadLetteredLine(f *testing.F) {
	for _, s := range logLineTexts()[:13] {
		f.Add(s, s, 1)
	}
	f.Fuzz(func(t *testing.T, a, b string, n int) {
		var fast, std bytes.Buffer
		l := deadLetterLine{messageID: a, queue: b, reason: a + b, attempt: n, traceID: b, code: a, err: b + a, stack: a}
		(&Processor{log: slog.New(NewLogHandler(&fast, nil))}).logDeadLettered(context.Background(), &l)
		(&Processor{log: slog.New(slog.NewJSONHandler(&std, nil))}).logDeadLettered(context.Background(), &l)
		if dropTime(t, std.String()) != dropTime(t, fast.String()) {
			t.Fatalf("own line\n%s\nslog\n%s", fast.String(), std.String())
		}
	})
}
