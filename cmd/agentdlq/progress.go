package main

import (
	"io"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// barWarmup is how long a bar waits before its first frame: a job shorter
// than that needs no bar, and the first rate shown is an average over at
// least this long, never the rate of one tick a microsecond after the start
// (which read 172206 msg/s).
const barWarmup = 500 * time.Millisecond

// bar is a progress bar on the console (stderr) of a known total (an
// approximate one, such as a queue's depth, grows when it is passed): count,
// percent, rate and time left, redrawn at most five times a second, cleared
// when it finishes. Log lines written meanwhile go above it (console). A
// nil *bar, which newBar returns when stderr is not a terminal, does
// nothing.
type bar struct {
	mu    sync.Mutex
	con   *errConsole
	pb    *progressbar.ProgressBar
	start time.Time
	n     int64
	max   int64
	shown bool
	done  bool // finished: later calls do nothing
	now   func() time.Time
}

// newBar is a bar of total (<= 0: unknown, a spinner) described as what,
// on w when w is a terminal, else nil.
func (g *globalFlags) newBar(w io.Writer, total int64, what string) *bar {
	con := g.console(w)
	if !con.tty {
		return nil
	}
	return startBar(con, total, what)
}

func startBar(con *errConsole, total int64, what string) *bar {
	max := total
	if max <= 0 {
		max = -1
	}
	pb := progressbar.NewOptions64(max,
		progressbar.OptionSetWriter(barWriter{con}), progressbar.OptionSetDescription(what),
		progressbar.OptionSetWidth(30), progressbar.OptionShowCount(), progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("msg"), progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(200*time.Millisecond), progressbar.OptionClearOnFinish())
	pb.StartWithoutRender()
	return &bar{con: con, pb: pb, start: time.Now(), max: max, now: time.Now}
}

// Add counts n more done.
func (b *bar) Add(n int) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n += int64(n)
	b.draw()
}

// Set says n are done so far; a count lower than one already shown (from
// concurrent reporters) is ignored.
func (b *bar) Set(n int) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if int64(n) <= b.n {
		return
	}
	b.n = int64(n)
	b.draw()
}

// draw passes the count to the bar once the warmup is over.
func (b *bar) draw() {
	if b.done || !b.shown && b.now().Sub(b.start) < barWarmup {
		return
	}
	b.shown = true
	if b.max > 0 && b.n > b.max {
		b.max = b.n // the total was approximate
		b.pb.ChangeMax64(b.max)
	}
	_ = b.pb.Set64(b.n)
}

// Finish clears the bar (the command prints its result next); a second
// Finish does nothing.
func (b *bar) Finish() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return
	}
	b.done = true
	if b.shown {
		_ = b.pb.Finish()
		_ = b.pb.Clear()
	}
	b.con.release()
}
