package batch

import (
	"context"
	"log/slog"
	"time"
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
