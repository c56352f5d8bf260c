// Package sqsio holds small SQS pieces that several packages share. Release
// makes received messages visible again, ten a call (triage's scan and
// redrive's select). Recorder is a stand-in for running the worker without
// SQS: it keeps what the worker sends to its DLQ and the visibility changes
// it asks for, for `agentdlq invoke`, `agentdlq bench` and tests; EntryInput
// copies a SendMessageBatch entry for any such recording client.
package sqsio

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/agentdlq/agentdlq/events/deadletter"
)

// Recorder records SendMessageBatch and ChangeMessageVisibility calls
// instead of making them. It is safe for concurrent use; the zero value is
// ready.
type Recorder struct {
	// Discard, when set, makes SendMessageBatch report every entry sent and
	// keep nothing, as a real client keeps nothing it sent (agentdlq bench
	// records only its last repeat).
	Discard bool

	mu         sync.Mutex
	sent       []*sqs.SendMessageInput
	visibility []*sqs.ChangeMessageVisibilityInput
}

// SendMessageBatch records each entry as the SendMessage input that would
// send it alone, copied: the caller may reuse the input's memory.
func (r *Recorder) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	out := &sqs.SendMessageBatchOutput{Successful: make([]types.SendMessageBatchResultEntry, 0, len(in.Entries))}
	if r.Discard {
		for i := range in.Entries {
			out.Successful = append(out.Successful, types.SendMessageBatchResultEntry{Id: in.Entries[i].Id})
		}
		return out, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range in.Entries {
		r.sent = append(r.sent, EntryInput(in.QueueUrl, &in.Entries[i]))
		out.Successful = append(out.Successful, types.SendMessageBatchResultEntry{
			Id: aws.String(aws.ToString(in.Entries[i].Id)), MessageId: aws.String(fmt.Sprintf("recorded-%d", len(r.sent))),
		})
	}
	return out, nil
}

// EntryInput returns the SendMessage input that sends the batch entry e to
// queueURL alone, sharing no memory with e: a recording client keeps it
// while the caller reuses e.
func EntryInput(queueURL *string, e *types.SendMessageBatchRequestEntry) *sqs.SendMessageInput {
	str := func(s *string) *string {
		if s == nil {
			return nil
		}
		return aws.String(strings.Clone(*s))
	}
	in := &sqs.SendMessageInput{
		QueueUrl: str(queueURL), MessageBody: str(e.MessageBody), DelaySeconds: e.DelaySeconds,
		MessageGroupId: str(e.MessageGroupId), MessageDeduplicationId: str(e.MessageDeduplicationId),
	}
	if e.MessageAttributes != nil {
		in.MessageAttributes = make(map[string]types.MessageAttributeValue, len(e.MessageAttributes))
		for name, v := range e.MessageAttributes {
			in.MessageAttributes[strings.Clone(name)] = types.MessageAttributeValue{
				DataType: str(v.DataType), StringValue: str(v.StringValue), BinaryValue: bytes.Clone(v.BinaryValue),
			}
		}
	}
	if e.MessageSystemAttributes != nil {
		in.MessageSystemAttributes = make(map[string]types.MessageSystemAttributeValue, len(e.MessageSystemAttributes))
		for name, v := range e.MessageSystemAttributes {
			in.MessageSystemAttributes[strings.Clone(name)] = types.MessageSystemAttributeValue{
				DataType: str(v.DataType), StringValue: str(v.StringValue), BinaryValue: bytes.Clone(v.BinaryValue),
			}
		}
	}
	return in
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

// Sent returns the recorded dead letters as SendMessage inputs, in order.
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
		attrs := DeadLetterAttributes(in.MessageAttributes)
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
