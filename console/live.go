package console

import (
	"context"
	"strconv"
	"time"

	"github.com/agentdlq/agentdlq/pipeline"
)

// liveState is what the DLQ holds now (its queue attributes: one
// GetQueueAttributes, never a receive) beside the report a page renders
// from, so that a page never passes a kept report off as the queue: the
// pipeline, group and redrive pages say how old the report is and, when
// the DLQ's depth differs from what the report counted, that the report is
// older than the queue.
type liveState struct {
	// Known: the depth was read; Err says why not.
	Known bool
	Err   string
	// Visible and InFlight are the DLQ's approximate depth now.
	Visible, InFlight int
	// Counted is what the report counted (at least, on a partial scan);
	// At when it was triaged; Kept is true when the report was read from
	// the kept reports (its letters are not loaded).
	Counted int
	At      time.Time
	Kept    bool
	Partial bool
	Now     time.Time
}

// Live is the DLQ's depth now: visible and in flight.
func (l *liveState) Live() int { return l.Visible + l.InFlight }

// Stale is true when the DLQ's depth now is not what the report counted:
// the report is older than the queue (letters arrived, were redriven,
// rejected and deleted, or expired since).
func (l *liveState) Stale() bool {
	if !l.Known {
		return false
	}
	if l.Partial {
		return l.Live() < l.Counted
	}
	return l.Live() != l.Counted
}

// Age is how long ago the report was triaged, in words ("3m ago").
func (l *liveState) Age() string {
	if l.At.IsZero() {
		return "-"
	}
	d := l.Now.Sub(l.At)
	if d < time.Minute {
		return "just now"
	}
	return countdown(l.Now.Add(d), l.Now) + " ago"
}

// lettersWord is n dead letters in words ("1 dead letter", "15 dead letters").
func lettersWord(n int) string {
	if n == 1 {
		return "1 dead letter"
	}
	return strconv.Itoa(n) + " dead letters"
}

// live reads the DLQ's depth (bounded: a page must not hang on SQS) and
// sets it beside the snapshot's report. Nil when there is no report.
func (s *Server) live(ctx context.Context, p *pipeline.Pipeline, sn *snapshot) *liveState {
	if sn == nil || sn.report == nil {
		return nil
	}
	l := &liveState{Counted: sn.report.Totals.Messages, At: sn.report.GeneratedAt, Kept: sn.letters == nil,
		Partial: !sn.report.Complete, Now: s.cfg.Now()}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	q, err := s.cfg.Resolve(ctx, p)
	if err != nil {
		l.Err = err.Error()
		return l
	}
	vis, inf, err := s.depth(ctx, q.DLQURL)
	if err != nil {
		l.Err = err.Error()
		return l
	}
	l.Visible, _ = strconv.Atoi(vis)
	l.InFlight, _ = strconv.Atoi(inf)
	l.Known = true
	return l
}
