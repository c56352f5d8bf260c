package triage

import "time"

// ClockBasis says which enqueue time the retention clock of a dead letter
// runs from, and so how its expiry was computed.
type ClockBasis string

const (
	// ClockOriginalSend: a standard queue's broker move (no dlq_meta). SQS keeps
	// the original enqueue time on a redrive-policy move, and SentTimestamp on
	// the DLQ message reports it: the message has already spent its time in
	// the hot queue out of the DLQ's retention.
	ClockOriginalSend ClockBasis = "original_send"
	// ClockWorkerSend: the worker sent the dead letter itself (it has dlq_meta):
	// a new message with a new id, whose SentTimestamp is the DLQ send time.
	ClockWorkerSend ClockBasis = "worker_send"
	// ClockFIFOReset: a FIFO broker move (no dlq_meta). FIFO resets the enqueue
	// time on the move to the DLQ. SQS exposes no separate "moved at" attribute,
	// so the SentTimestamp SQS reports for the message in the DLQ is read; if
	// SQS reports the original send time there, the computed expiry is earlier
	// than the real one: the warning comes early, never late.
	ClockFIFOReset ClockBasis = "fifo_reset"
	// ClockUnknown: no SentTimestamp was returned; the scan time stands in for
	// it (the message is at most DLQ-retention old, so this is a late bound)
	// and the report flags the message.
	ClockUnknown ClockBasis = "unknown"
)

// Expiry is when DLQ retention will delete one dead letter.
type Expiry struct {
	Basis      ClockBasis
	ClockStart time.Time
	DeletesAt  time.Time
}

// ExpiryOf computes a dead letter's deletion time: clock start + DLQ retention.
//
// The attribute read is always SentTimestamp, as SQS reports it for the
// message in the DLQ; what it means depends on how the message got there:
//
//	how it got to the DLQ             queue     SentTimestamp is            basis
//	worker sent it (has dlq_meta)     any       the DLQ send time           worker_send
//	broker move (no dlq_meta)         standard  the original enqueue time   original_send
//	broker move (no dlq_meta)         FIFO      the reset enqueue time*     fifo_reset
//
// (*) see ClockFIFOReset. A message whose dlq_meta is unreadable was still
// sent by a worker (only a worker writes dlq_*), so it counts as worker_send;
// one with stale metadata (Tagged.StaleMeta) came back by a broker move.
// Without SentTimestamp, now stands in (ClockUnknown).
func ExpiryOf(t *Tagged, fifo bool, retention time.Duration, now time.Time) Expiry {
	var basis ClockBasis
	workerSent := (t.Meta != nil || t.MetaErr != nil) && !t.StaleMeta
	switch {
	case t.SentTimestamp.IsZero():
		basis = ClockUnknown
	case workerSent:
		basis = ClockWorkerSend
	case fifo:
		basis = ClockFIFOReset
	default:
		basis = ClockOriginalSend
	}
	start := t.SentTimestamp
	if basis == ClockUnknown {
		start = now
	}
	return Expiry{Basis: basis, ClockStart: start, DeletesAt: start.Add(retention)}
}
