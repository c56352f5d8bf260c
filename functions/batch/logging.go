package batch

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/agentdlq/agentdlq/events/deadletter"
)

// logAttrs is slog.Logger.LogAttrs without the caller's program counter:
// slog.Logger asks runtime.Callers for it on every record (about 1 µs here,
// a twentieth of a dead letter's cost) although only a handler with
// AddSource uses it. A Config.Logger made with AddSource gets no source for
// these records; they name their message, which says more than a line.
func logAttrs(ctx context.Context, l *slog.Logger, level slog.Level, msg string, attrs ...slog.Attr) {
	h := l.Handler()
	if !h.Enabled(ctx, level) {
		return
	}
	r := slog.NewRecord(time.Now(), level, msg, 0)
	r.AddAttrs(attrs...)
	_ = h.Handle(ctx, r)
}

func (p *Processor) logFailure(ctx context.Context, level slog.Level, msg string, rec Record, reason deadletter.Reason, err error) {
	logAttrs(ctx, p.log, level, msg,
		slog.String("message_id", rec.MessageID()), slog.String("queue", queueName(rec.EventSourceARN())),
		slog.String("reason", string(reason)), slog.Int("attempt", rec.ReceiveCount), slog.String("trace_id", rec.st.fields.TraceID),
		slog.String("error", deadletter.Redact(err.Error(), deadletter.MaxErrorRunes)))
}

// queueName is the last part of a queue ARN.
func queueName(arn string) string {
	if i := strings.LastIndexByte(arn, ':'); i >= 0 {
		return arn[i+1:]
	}
	return arn
}
