package report

// ClockBasis says which enqueue time the retention clock of a dead letter
// runs from, and so how its expiry was computed.
type ClockBasis string

const (
	// ClockOriginalSend means a standard queue's broker move (no dlq_meta). SQS keeps
	// the original enqueue time on a redrive-policy move, and SentTimestamp on
	// the DLQ message reports it: the message has already spent its time in
	// the hot queue out of the DLQ's retention.
	ClockOriginalSend ClockBasis = "original_send"
	// ClockWorkerSend means the worker sent the dead letter itself (it has dlq_meta):
	// a new message with a new id, whose SentTimestamp is the DLQ send time.
	ClockWorkerSend ClockBasis = "worker_send"
	// ClockFIFOReset means a FIFO broker move (no dlq_meta). FIFO resets the enqueue
	// time on the move to the DLQ. SQS exposes no separate "moved at" attribute,
	// so the SentTimestamp SQS reports for the message in the DLQ is read; if
	// SQS reports the original send time there, the computed expiry is earlier
	// than the real one: the warning comes early, never late.
	ClockFIFOReset ClockBasis = "fifo_reset"
	// ClockUnknown means no SentTimestamp was returned; the scan time stands in for
	// it (the message is at most DLQ-retention old, so this is a late bound)
	// and the report flags the message.
	ClockUnknown ClockBasis = "unknown"
)
