package triage

import (
	"time"

	"github.com/agentdlq/agentdlq/triage/dlq"
	"github.com/agentdlq/agentdlq/triage/report"
)

// Expiry is when DLQ retention will delete one dead letter.
type Expiry struct {
	Basis      report.ClockBasis
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
func ExpiryOf(t *dlq.Tagged, fifo bool, retention time.Duration, now time.Time) Expiry {
	var basis report.ClockBasis
	workerSent := (t.Meta != nil || t.MetaErr != nil) && !t.StaleMeta
	switch {
	case t.SentTimestamp.IsZero():
		basis = report.ClockUnknown
	case workerSent:
		basis = report.ClockWorkerSend
	case fifo:
		basis = report.ClockFIFOReset
	default:
		basis = report.ClockOriginalSend
	}
	start := t.SentTimestamp
	if basis == report.ClockUnknown {
		start = now
	}
	return Expiry{Basis: basis, ClockStart: start, DeletesAt: start.Add(retention)}
}
