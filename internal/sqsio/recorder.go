// Package sqsio holds small SQS pieces that several packages share. Release
// makes received messages visible again, ten a call (triage's scan and
// redrive's select). Recorder is a stand-in for running the worker without
// SQS: it keeps what the worker sends to its DLQ and the visibility changes
// it asks for, for `agentdlq invoke`, `agentdlq bench` and tests.
package sqsio

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/agentdlq/agentdlq/events/deadletter"
)

// Recorder records SendMessage and ChangeMessageVisibility calls instead of
// making them. It is safe for concurrent use; the zero value is ready.
type Recorder struct {
	mu         sync.Mutex
	sent       []*sqs.SendMessageInput
	visibility []*sqs.ChangeMessageVisibilityInput
}

// SendMessage records the message.
func (r *Recorder) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	r.mu.Lock()
	r.sent = append(r.sent, in)
	n := len(r.sent)
	r.mu.Unlock()
	return &sqs.SendMessageOutput{MessageId: aws.String(fmt.Sprintf("recorded-%d", n))}, nil
}

// ChangeMessageVisibility records the change.
func (r *Recorder) ChangeMessageVisibility(_ context.Context, in *sqs.ChangeMessageVisibilityInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	r.mu.Lock()
	r.visibility = append(r.visibility, in)
	r.mu.Unlock()
	return &sqs.ChangeMessageVisibilityOutput{}, nil
}

// Reset forgets everything recorded.
func (r *Recorder) Reset() {
	r.mu.Lock()
	r.sent, r.visibility = r.sent[:0], r.visibility[:0]
	r.mu.Unlock()
}

// Sent returns the recorded SendMessage inputs, in order.
func (r *Recorder) Sent() []*sqs.SendMessageInput {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*sqs.SendMessageInput(nil), r.sent...)
}

// VisibilityChanges returns the recorded ChangeMessageVisibility inputs.
func (r *Recorder) VisibilityChanges() []*sqs.ChangeMessageVisibilityInput {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*sqs.ChangeMessageVisibilityInput(nil), r.visibility...)
}

// DeadLetter is one recorded dead letter, decoded.
type DeadLetter struct {
	// MessageID is the original message's id (from dlq_meta).
	MessageID string            `json:"messageId"`
	Reason    deadletter.Reason `json:"reason"`
	// Meta is the dlq_meta document as the worker wrote it.
	Meta json.RawMessage `json:"meta"`
	// Body is the dead letter's body (the original, byte for byte).
	Body string `json:"-"`
	// Attributes are the dead letter's message attributes.
	Attributes map[string]deadletter.Attribute `json:"-"`
}

// DeadLetters decodes the recorded sends. A send whose dlq_meta cannot be
// read is an error: the worker must never write one.
func (r *Recorder) DeadLetters() ([]DeadLetter, error) {
	sent := r.Sent()
	out := make([]DeadLetter, 0, len(sent))
	for i, in := range sent {
		attrs := make(map[string]deadletter.Attribute, len(in.MessageAttributes))
		for name, v := range in.MessageAttributes {
			attrs[name] = deadletter.Attribute{DataType: aws.ToString(v.DataType), StringValue: aws.ToString(v.StringValue), BinaryValue: v.BinaryValue}
		}
		raw := attrs[deadletter.AttrMeta].StringValue
		meta, err := deadletter.ParseMeta([]byte(raw))
		if err != nil {
			return nil, fmt.Errorf("dead letter %d: %w", i, err)
		}
		if got := deadletter.Reason(attrs[deadletter.AttrReason].StringValue); got != meta.Reason {
			return nil, fmt.Errorf("dead letter %d: dlq_reason %q, dlq_meta reason %q", i, got, meta.Reason)
		}
		out = append(out, DeadLetter{MessageID: meta.MessageID, Reason: meta.Reason, Meta: json.RawMessage(raw), Body: aws.ToString(in.MessageBody), Attributes: attrs})
	}
	return out, nil
}
