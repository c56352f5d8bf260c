package batch

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// NewLogHandler returns slog.NewJSONHandler(w, opts) with one difference in
// cost, none in output: the processor writes its one line per dead letter
// itself, the bytes the JSON handler would write for that record, without
// slog's work per attribute (about a tenth of a dead letter's CPU). Every
// other record, and every handler derived with WithAttrs or WithGroup, is
// the JSON handler's. With opts.AddSource or opts.ReplaceAttr set, the
// processor leaves every line to the JSON handler. Use it as
// Config.Logger's handler: slog.New(batch.NewLogHandler(os.Stdout, nil)).
func NewLogHandler(w io.Writer, opts *slog.HandlerOptions) slog.Handler {
	lw := &lockedWriter{w: w}
	h := &LogHandler{JSONHandler: slog.NewJSONHandler(lw, opts), w: lw}
	h.direct = opts == nil || (!opts.AddSource && opts.ReplaceAttr == nil)
	return h
}

// LogHandler is the handler NewLogHandler returns: a *slog.JSONHandler
// that the processor recognizes.
type LogHandler struct {
	*slog.JSONHandler
	w      *lockedWriter
	direct bool // the processor may write its dead-letter lines itself
}

// lockedWriter serializes whole lines from the JSON handler and from the
// processor's own lines (each is one Write).
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

var lineBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// deadLetterLine is the log record of a sent dead letter; stack is empty
// but for a panic.
type deadLetterLine struct {
	messageID, queue, reason string
	attempt                  int
	traceID, code, err       string
	stack                    string
}

// logDeadLettered writes the "dead-lettered" line: itself when the logger
// is a LogHandler, through slog otherwise (the same bytes either way; a
// test holds them together).
func (p *Processor) logDeadLettered(ctx context.Context, l *deadLetterLine) {
	h, ok := p.log.Handler().(*LogHandler)
	if !ok || !h.direct {
		attrs := [8]slog.Attr{
			slog.String("message_id", l.messageID), slog.String("queue", l.queue),
			slog.String("reason", l.reason), slog.Int("attempt", l.attempt), slog.String("trace_id", l.traceID),
			slog.String("error_code", l.code), slog.String("error", l.err),
		}
		n := 7
		if l.stack != "" {
			attrs[n] = slog.String("stack", l.stack)
			n++
		}
		logAttrs(ctx, p.log, slog.LevelWarn, "dead-lettered", attrs[:n]...)
		return
	}
	if !h.Enabled(ctx, slog.LevelWarn) {
		return
	}
	bp := lineBufs.Get().(*[]byte)
	b := append((*bp)[:0], `{"time":"`...)
	b = time.Now().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","level":"WARN","msg":"dead-lettered","message_id":`...)
	b = appendLogString(b, l.messageID)
	b = append(b, `,"queue":`...)
	b = appendLogString(b, l.queue)
	b = append(b, `,"reason":`...)
	b = appendLogString(b, l.reason)
	b = append(b, `,"attempt":`...)
	b = strconv.AppendInt(b, int64(l.attempt), 10)
	b = append(b, `,"trace_id":`...)
	b = appendLogString(b, l.traceID)
	b = append(b, `,"error_code":`...)
	b = appendLogString(b, l.code)
	b = append(b, `,"error":`...)
	b = appendLogString(b, l.err)
	if l.stack != "" {
		b = append(b, `,"stack":`...)
		b = appendLogString(b, l.stack)
	}
	b = append(b, "}\n"...)
	_, _ = h.w.Write(b) // as slog does, a failed log write fails nothing
	*bp = b
	if cap(b) <= 16<<10 {
		lineBufs.Put(bp)
	}
}

// appendLogString writes s quoted as slog's JSON handler does: \" \\ \n \r
// \t, \u00XX for the other control characters, \ufffd for each invalid
// UTF-8 byte, and U+2028 and U+2029 escaped; eight plain ASCII bytes are
// copied at a time.
func appendLogString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) {
			x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
				uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
			if specialByte(x)|x&swarHigh == 0 {
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
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigit[b>>4], hexDigit[b&0xF])
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
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigit[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

const (
	hexDigit = "0123456789abcdef"
	swarLow  = 0x0101010101010101
	swarHigh = 0x8080808080808080
)

// specialByte is non-zero when x holds a quote, a backslash or a control
// character (the high bit of its lowest such byte is set).
func specialByte(x uint64) uint64 {
	q := x ^ (swarLow * '"')
	s := x ^ (swarLow * '\\')
	return ((q - swarLow) | (s - swarLow) | (x - swarLow*0x20)) &^ x & swarHigh
}
