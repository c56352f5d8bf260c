package main

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"

	"golang.org/x/term"

	"github.com/agentdlq/agentdlq/internal/textutil"
)

// Log formats of --log-format.
const (
	logAuto = "auto" // text on a terminal, JSON otherwise
	logJSON = "json"
	logText = "text"
)

func checkLogFormat(f string) error {
	switch f {
	case logAuto, logJSON, logText:
		return nil
	}
	return fmt.Errorf("--log-format %q: auto, json or text", f)
}

// isTerminal reports whether w is a terminal (a *errConsole or a
// *checkedWriter reports on the writer it wraps).
func isTerminal(w io.Writer) bool {
	if c, ok := w.(*errConsole); ok {
		return c.tty
	}
	if c, ok := w.(*checkedWriter); ok {
		return isTerminal(c.w)
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// logHandler is the handler of a command's logs on w: JSON with
// --log-format json, text with --log-format text, and with auto (the
// default) text on a terminal and JSON otherwise (a pipe, a file, a CI log).
func logHandler(w io.Writer, format string, level slog.Leveler) slog.Handler {
	opts := &slog.HandlerOptions{Level: level}
	if format == logText || (format != logJSON && isTerminal(w)) {
		// The text handler quotes a value holding a character that is not
		// printable (strconv.Quote: \x1b, \n, \u202e): a logged key or
		// tool name never drives the terminal.
		return slog.NewTextHandler(w, opts)
	}
	// JSON escapes the C0 controls; JSONWriter also writes the C1 and bidi
	// controls a logged key or tool name may carry as \u escapes.
	return slog.NewJSONHandler(textutil.JSONWriter(w), opts)
}

// logger is the logger of an operator command (triage, redrive, pause,
// send): warnings and errors on stderr, and progress (info) only with
// --verbose. Written through the console, a line never lands in the middle
// of a progress bar.
func (g *globalFlags) logger(w io.Writer) *slog.Logger {
	level := slog.LevelWarn
	if g.verbose {
		level = slog.LevelInfo
	}
	return slog.New(logHandler(g.console(w), g.logFormat, level))
}

// log is the operator logger on the command's stderr.
func (g *globalFlags) log() *slog.Logger {
	w := g.stderr
	if w == nil {
		w = os.Stderr
	}
	return g.logger(w)
}

// errConsole is stderr shared by the logs and a progress bar: a log line
// written while a bar is shown clears the bar's line, is written whole, and
// the bar is drawn again under it, so that the two never interleave.
type errConsole struct {
	mu    sync.Mutex
	w     io.Writer
	tty   bool
	frame []byte // the bar's last frame while one is shown
}

// console is the console on w, one for the run: the same for every
// logger and bar of the command.
func (g *globalFlags) console(w io.Writer) *errConsole {
	if c, ok := w.(*errConsole); ok {
		return c
	}
	g.consoleMu.Lock()
	defer g.consoleMu.Unlock()
	if g.cons == nil || g.cons.w != w {
		g.cons = newConsole(w)
	}
	return g.cons
}

func newConsole(w io.Writer) *errConsole { return &errConsole{w: w, tty: isTerminal(w)} }

// clearLine returns the cursor to the start of the line and erases it.
const clearLine = "\r\x1b[2K"

// Write writes p (log lines) above the bar, if one is shown.
func (c *errConsole) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.frame == nil {
		return c.w.Write(p)
	}
	if _, err := io.WriteString(c.w, clearLine); err != nil {
		return 0, err
	}
	n, err := c.w.Write(p)
	if err != nil {
		return n, err
	}
	if len(p) > 0 && p[len(p)-1] != '\n' {
		_, _ = io.WriteString(c.w, "\n")
	}
	_, err = c.w.Write(c.frame)
	return n, err
}

// barWriter is where a progress bar draws: each frame is written and kept,
// to be drawn again after a log line; a frame that only clears the line
// ends the bar's display.
type barWriter struct{ c *errConsole }

func (b barWriter) Write(p []byte) (int, error) {
	b.c.mu.Lock()
	defer b.c.mu.Unlock()
	if len(bytes.Trim(p, "\r \x1b[2K")) == 0 {
		b.c.frame = nil
	} else {
		b.c.frame = append(b.c.frame[:0], p...)
	}
	return b.c.w.Write(p)
}

// release forgets the bar: what follows is written as it is.
func (c *errConsole) release() {
	c.mu.Lock()
	c.frame = nil
	c.mu.Unlock()
}
