package workload

import "github.com/agentdlq/agentdlq/triage/dlq"

// DeadLetters maps tagged DLQ messages to the hot-queue message each one
// was: dlq_meta's message_id where the worker wrote it, else the message's
// own id (the broker keeps the id when its redrive policy moves a message).
func DeadLetters(tagged []dlq.Tagged) []DeadLetter {
	out := make([]DeadLetter, 0, len(tagged))
	for _, t := range tagged {
		id := t.MessageID
		if t.Meta != nil && t.Meta.MessageID != "" {
			id = t.Meta.MessageID
		}
		out = append(out, DeadLetter{OriginalMessageID: id, Reason: t.Reason})
	}
	return out
}
