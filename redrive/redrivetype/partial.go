package redrivetype

import (
	"fmt"
	"time"

	"github.com/agentdlq/agentdlq/triage"
)

// PartialError is the outcome of a command that must see every dead letter
// (plan, select, start, reject) when its scan of the DLQ saw only part of
// it: letters held (in flight) by another receive, by a receive whose
// response was lost, or, in a FIFO DLQ, behind the head of their message
// group. What the command did with the letters it saw stands (its result
// says so); what it did not see is untouched. errors.Is(err,
// triage.ErrScanPartial) is true; its code is CodeScanPartial.
type PartialError struct {
	// Seen counts the distinct dead letters the scan saw; Depth is the
	// DLQ's approximate depth (visible and in flight) when it started, 0
	// when unknown.
	Seen, Depth int
	// Why is what the scan reported, when it said more than the counts.
	Why string
	// FIFO: the DLQ is a FIFO queue, which hands out the letters of a
	// message group behind the ones in flight only after those.
	FIFO bool
	// RetryAfter is how long a letter held by this command's own receives
	// stays hidden (its visibility timeout, or the DLQ's default when that
	// is longer): a rerun after it sees what this one missed. A letter
	// another reader holds comes back after that reader's timeout.
	RetryAfter time.Duration
}

func (e *PartialError) Error() string {
	var b []byte
	b = append(b, "partial scan: "...)
	switch {
	case e.Depth > 0:
		b = fmt.Appendf(b, "saw %d of about %d dead letters", e.Seen, e.Depth)
	default:
		b = fmt.Appendf(b, "saw %d dead letters", e.Seen)
	}
	switch {
	case e.Why != "":
		// The scan said why (triage's words): once, not twice.
		b = fmt.Appendf(b, " (%s)", e.Why)
	case e.FIFO:
		b = append(b, "; the others are held (in flight), or behind a held letter of their FIFO message group, until their visibility timeout lapses"...)
	default:
		b = append(b, "; the others are held (in flight) by a receive until their visibility timeout lapses"...)
	}
	if e.RetryAfter > 0 {
		b = fmt.Appendf(b, ": retry after %s (a reader that set a longer timeout holds them longer)", e.RetryAfter.Round(time.Second))
	} else {
		b = append(b, ": retry after their visibility timeout"...)
	}
	return string(b)
}

// Is makes errors.Is(err, triage.ErrScanPartial) true: not a refusal (the
// request was sound) and not an outage: the letters it missed are held (in
// flight) by a receive, and a rerun after their visibility timeout sees
// them (RetryAfter).
func (e *PartialError) Is(target error) bool { return target == triage.ErrScanPartial }
