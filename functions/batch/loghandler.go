package batch

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/agentdlq/agentdlq/internal/jsonscan"
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
	b := (*bp)[:0]
	b = append(b, `{"time":"`...)
	b = time.Now().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","level":"WARN","msg":"dead-lettered","message_id":`...)
	b = jsonscan.AppendString(b, l.messageID, logEscapes)
	b = append(b, `,"queue":`...)
	b = jsonscan.AppendString(b, l.queue, logEscapes)
	b = append(b, `,"reason":`...)
	b = jsonscan.AppendString(b, l.reason, logEscapes)
	b = append(b, `,"attempt":`...)
	b = strconv.AppendInt(b, int64(l.attempt), 10)
	b = append(b, `,"trace_id":`...)
	b = jsonscan.AppendString(b, l.traceID, logEscapes)
	b = append(b, `,"error_code":`...)
	b = jsonscan.AppendString(b, l.code, logEscapes)
	b = append(b, `,"error":`...)
	b = jsonscan.AppendString(b, l.err, logEscapes)
	if l.stack != "" {
		b = append(b, `,"stack":`...)
		b = jsonscan.AppendString(b, l.stack, logEscapes)
	}
	b = append(b, "}\n"...)
	_, _ = h.w.Write(b) // as slog does, a failed log write fails nothing
	*bp = b
	if cap(b) <= 16<<10 {
		lineBufs.Put(bp)
	}
}

// logEscapes writes strings as log/slog's JSON handler does: \" \\ \n \r
// \t, \u00XX for the other control characters (\b and \f included),
// \ufffd for each invalid UTF-8 byte, and U+2028 and U+2029 escaped.
const logEscapes jsonscan.Escapes = 0
