package redrivetype

import (
	"time"
)

// MoveTask is one message move task, as ListMessageMoveTasks reports it.
type MoveTask struct {
	TaskHandle     string    `json:"task_handle,omitempty"`
	Status         string    `json:"status"`
	SourceARN      string    `json:"source_arn"`
	DestinationARN string    `json:"destination_arn,omitempty"`
	Rate           int       `json:"max_messages_per_second,omitempty"`
	Moved          int64     `json:"moved"`
	ToMove         int64     `json:"to_move"`
	FailureReason  string    `json:"failure_reason,omitempty"`
	StartedAt      time.Time `json:"started_at"`
}
