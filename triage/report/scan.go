package report

import (
	"time"
)

// ScanStats say what a scan did and whether it covered the queue.
type ScanStats struct {
	Queue string `json:"queue"`
	// ApproxDepth is ApproximateNumberOfMessages at the start (visible
	// messages), ApproxInFlight ApproximateNumberOfMessagesNotVisible.
	ApproxDepth    int `json:"approx_depth"`
	ApproxInFlight int `json:"approx_in_flight"`
	// RetentionSeconds is the DLQ's MessageRetentionPeriod (0 if not reported);
	// FIFO is true for a FIFO queue.
	RetentionSeconds int  `json:"retention_seconds"`
	FIFO             bool `json:"fifo"`
	Receives         int  `json:"receives"`
	EmptyReceives    int  `json:"empty_receives"`
	Received         int  `json:"received"`
	Unique           int  `json:"unique"`
	Duplicates       int  `json:"duplicates"`
	Released         int  `json:"released"`
	ReleaseFailed    int  `json:"release_failed"`
	Receivers        int  `json:"receivers"`
	// VisibilityTimeoutSeconds is the scan's visibility timeout.
	VisibilityTimeoutSeconds int       `json:"visibility_timeout_seconds"`
	StartedAt                time.Time `json:"started_at"`
	DurationSeconds          float64   `json:"duration_seconds"`
	MessagesPerSecond        float64   `json:"messages_per_second"`
	// StopReason is why the scan stopped: "empty" (a receive returned
	// nothing), "repeats" (only messages already seen), "max_messages" or
	// "max_duration" (a bound), "canceled" or "error" (a receive failed).
	StopReason string `json:"stop_reason"`
	// QueueVisibilityTimeoutSeconds is the DLQ's own VisibilityTimeout: how
	// long a reader that sets none holds what it receives (0 if not reported).
	QueueVisibilityTimeoutSeconds int `json:"queue_visibility_timeout_seconds"`
	// Partial is true when the scan may have missed messages: Unique is then
	// a lower bound of the DLQ's letters. PartialReason says why in words,
	// PartialCause as one of the Cause… values, and RetryAfterSeconds when a
	// rerun may see everything (0: a rerun now, or only a changed bound,
	// helps; see the cause).
	Partial           bool   `json:"partial"`
	PartialReason     string `json:"partial_reason,omitempty"`
	PartialCause      string `json:"partial_cause,omitempty"`
	RetryAfterSeconds int    `json:"retry_after_seconds,omitempty"`
}
