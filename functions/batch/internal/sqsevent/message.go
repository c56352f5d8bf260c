package sqsevent

import (
	"strconv"
	"time"
)

// Attribute names of the SQS system attributes read from each record.
const (
	attrReceiveCount = "ApproximateReceiveCount"
	attrSentAt       = "SentTimestamp"
	attrFirstReceive = "ApproximateFirstReceiveTimestamp"
	attrGroupID      = "MessageGroupId"
	attrTraceHeader  = "AWSTraceHeader"
)

// AttrRequeued is the message attribute a requeue of the processor carries
// (batch.AttrRequeued); Decode notes whether a record has it
// (Message.Requeued), so that the commonest record, without it, is never
// searched for it.
const AttrRequeued = "agentdlq_requeued"

// span is where a value stands in a buffer: its offset and length.
type span struct{ off, n uint32 }

// cut returns the value of sp in s.
func (sp span) cut(s string) string { return s[sp.off : sp.off+sp.n] }

// bytesOf returns the value of sp in b.
func (sp span) bytesOf(b []byte) []byte { return b[sp.off : sp.off+sp.n] }

// ID returns the record's message id.
func (r *Message) ID() string { return r.id }

// Receipt returns the record's receipt handle.
func (r *Message) Receipt() string { return r.receipt }

// ARN returns the record's event source ARN.
func (r *Message) ARN() string { return r.arn }

// Group returns the record's MessageGroupId ("" on a standard queue).
func (r *Message) Group() string { return r.group }

// Body returns the record's body as decoded: a view of the event's buffer,
// which the caller must not modify (copy it to hand it out).
func (r *Message) Body() []byte { return r.body }

// Requeued reports whether the record's message attributes hold
// AttrRequeued.
func (r *Message) Requeued() bool { return r.requeued }

// HasMessageAttributes reports whether the record has at least one message
// attribute.
func (r *Message) HasMessageAttributes() bool { return len(r.mattrs) > 2 }

// SentAt is the record's SentTimestamp (zero when absent or unreadable).
func (r *Message) SentAt() time.Time { return r.epochAttribute(sysSentAt) }

// FirstReceiveAt is the record's ApproximateFirstReceiveTimestamp (zero
// when absent or unreadable).
func (r *Message) FirstReceiveAt() time.Time { return r.epochAttribute(sysFirstReceive) }

// ParseReceiveCount parses ApproximateReceiveCount (at least 1). A single
// digit, by far the commonest value, skips strconv.
func ParseReceiveCount(s string) (int, bool) {
	if len(s) == 1 && '1' <= s[0] && s[0] <= '9' {
		return int(s[0] - '0'), true
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= 1
}

func epochMillis(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil || ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}
