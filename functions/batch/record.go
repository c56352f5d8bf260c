package batch

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unsafe"

	"github.com/aws/aws-lambda-go/events"

	"github.com/agentdlq/agentdlq/events/agenttask"
	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/ledger"
)

// Handler handles one record. Return nil when the record is done (it is
// acknowledged), one of the outcome constructors (Transient, Poison, ...)
// to say what the failure does to the message, or any other error (it is
// classified; see Classify). A panic is recovered and is that record's
// failure only.
type Handler func(ctx context.Context, r Record) error

// Record is one SQS message as a handler sees it, with its SQS system
// attributes decoded. It is passed by value; its methods share the
// record's state with the processor and are valid only during the handler
// call (the state is recycled for the next batch).
//
// Its accessors (MessageID, Body, Attribute, MessageAttributes,
// EventSourceARN, ReceiptHandle, SQSMessage) read the message on either
// path: Handle's events.SQSEvent or the lean path of Invoke and HandleEvent.
type Record struct {
	// Message is the Lambda SQS record when the event came through Handle
	// (events.SQSEvent). Read only. It is nil on the lean path (Invoke,
	// HandleEvent), which decodes no events.SQSMessage: use the accessors,
	// which work on both paths.
	Message *events.SQSMessage
	// ReceiveCount is ApproximateReceiveCount: 1 on the first delivery. A
	// missing or unreadable value counts as 1 (and is logged).
	ReceiveCount int
	// GroupID is MessageGroupId (FIFO queues only).
	GroupID string

	p    *Processor
	st   *recordState
	lean *leanRecord // the record on the lean path (Message is nil)
}

// recordState is what the handler tells the processor about a record.
type recordState struct {
	task          agenttask.Task
	described     bool
	key           string
	begun         bool
	mutates       bool
	effectStarted bool
	redriveCount  int
	receipt       string
	now           time.Time // the record's clock reading: the ledger's "now"
	badCount      bool      // ApproximateReceiveCount was missing or unreadable
	result        result    // what happened to the record
	notStarted    bool      // not handled: the invocation was out of time
}

// SentAt returns SentTimestamp (zero when missing), read on demand: only
// dead letters need it (parsing it for every record cost ~0.1 µs).
func (r Record) SentAt() time.Time {
	return r.epochAttribute(sysSentAt, attrSentAt)
}

// epochAttribute reads a timestamp attribute, on the lean path without
// making a string of it.
func (r Record) epochAttribute(k int, name string) time.Time {
	if r.lean != nil {
		if v, ok := r.lean.sysAttr(k); ok {
			return epochMillis(unsafe.String(unsafe.SliceData(v), len(v)))
		}
	}
	return epochMillis(r.Attribute(name))
}

// traceHeader is AWSTraceHeader for the dead letter's send: on the lean
// path a view of the payload's bytes, as sendBody.
func (r Record) traceHeader() string {
	if r.lean != nil {
		if v, ok := r.lean.sysAttr(sysTraceHeader); ok {
			return unsafe.String(unsafe.SliceData(v), len(v))
		}
	}
	return r.Attribute(attrTraceHeader)
}

// FirstReceivedAt returns ApproximateFirstReceiveTimestamp (zero when
// missing), read on demand: only dead letters need it.
func (r Record) FirstReceivedAt() time.Time {
	return r.epochAttribute(sysFirstReceive, attrFirstReceive)
}

// Body returns the message body as bytes without copying it: never modify
// it. Through Handle the slice aliases the event's string; on the lean path
// it aliases the invocation's payload, which the Lambda runtime reuses for
// the next invocation, so it is valid only during the handler call: copy
// what you keep (strings made from it, as string(b), are copies).
func (r Record) Body() []byte {
	if r.lean != nil {
		if len(r.lean.body) == 0 {
			return nil
		}
		return r.lean.body
	}
	if r.Message == nil || r.Message.Body == "" {
		return nil
	}
	return unsafe.Slice(unsafe.StringData(r.Message.Body), len(r.Message.Body))
}

// sendBody is the body as the dead letter's MessageBody: the event's own
// string, or on the lean path a view of the payload's bytes, which do not
// change during the invocation. The SendMessageBatch input holds it only
// until the call returns (SQSAPI: a client that keeps the input copies it),
// and the lane's outbox is sent and reset before the invocation ends.
func (r Record) sendBody() string {
	if r.lean != nil {
		return unsafe.String(unsafe.SliceData(r.lean.body), len(r.lean.body))
	}
	if r.Message == nil {
		return ""
	}
	return r.Message.Body
}

// MessageID returns the SQS message id.
func (r Record) MessageID() string {
	if r.lean != nil {
		return r.lean.id
	}
	if r.Message == nil {
		return ""
	}
	return r.Message.MessageId
}

// EventSourceARN returns the ARN of the queue the message came from.
func (r Record) EventSourceARN() string {
	if r.lean != nil {
		return r.lean.arn
	}
	if r.Message == nil {
		return ""
	}
	return r.Message.EventSourceARN
}

// ReceiptHandle returns the message's receipt handle.
func (r Record) ReceiptHandle() string {
	if r.lean != nil {
		return r.lean.receipt
	}
	if r.Message == nil {
		return ""
	}
	return r.Message.ReceiptHandle
}

// Attribute returns the SQS system attribute name (SentTimestamp,
// AWSTraceHeader, ...), "" when the message has none. On the lean path it
// is decoded from the raw attributes when read.
func (r Record) Attribute(name string) string {
	if r.lean != nil {
		v, _ := r.lean.attribute(name)
		return v
	}
	if r.Message == nil {
		return ""
	}
	return r.Message.Attributes[name]
}

// MessageAttributes returns the message attributes (nil when there are
// none). On the lean path they are decoded when read, into a new map on
// each call; DecodeEvent validated them, so the error is not expected.
func (r Record) MessageAttributes() (map[string]events.SQSMessageAttribute, error) {
	if r.lean != nil {
		return r.lean.messageAttributes()
	}
	if r.Message == nil {
		return nil, nil
	}
	return r.Message.MessageAttributes, nil
}

// appendDeadLetterAttrs appends to dst the message attributes as a dead
// letter carries them: data type and value, no lists. Through Handle they
// come from Message's map; on the lean path they are decoded now, the names
// and values that need no decoding viewing the payload's bytes (as
// sendBody).
func (r Record) appendDeadLetterAttrs(dst []namedAttr) []namedAttr {
	if r.lean != nil {
		return r.lean.appendDeadLetterAttrs(dst)
	}
	if r.Message == nil {
		return dst
	}
	for name, a := range r.Message.MessageAttributes {
		v := namedAttr{name: name, Attribute: deadletter.Attribute{DataType: a.DataType, BinaryValue: a.BinaryValue}}
		if a.StringValue != nil {
			v.StringValue = *a.StringValue
		}
		dst = append(dst, v)
	}
	return dst
}

// SQSMessage returns the message as aws-lambda-go's type: Message itself
// through Handle, a copy decoded when called on the lean path (it costs what
// the lean path saves: call it only where a library needs the type).
func (r Record) SQSMessage() (*events.SQSMessage, error) {
	if r.lean != nil {
		m, err := r.lean.sqsMessage()
		if err != nil {
			return nil, err
		}
		return &m, nil
	}
	return r.Message, nil
}

// Describe attaches the decoded task, so that a dead letter's dlq_meta
// carries its task, run, tenant, tool, idempotency key and trace id, and
// logs carry its trace_id. The task is copied; its Args are not kept.
func (r Record) Describe(t *agenttask.Task) {
	if r.st == nil || t == nil {
		return
	}
	r.st.task = *t
	r.st.task.Args = nil
	r.st.described = true
}

// Begin takes the task's idempotency key in the ledger for this delivery
// (owner: the message id) with a lease, before any work. Return its error
// unchanged from the handler:
//
//   - nil: go on; on success the processor marks the key done with the
//     receipt given to SetReceipt;
//   - ErrDuplicate: the key is done; the message is acknowledged as a no-op;
//   - a Transient outcome: another delivery holds the lease; retried;
//   - an EffectUnknown outcome: mutates is true and an earlier delivery
//     started the mutating call without leaving a receipt;
//   - a ledger outage: retried, never dead-lettered.
//
// Without a ledger in the Config, Begin only records the key and returns nil.
func (r Record) Begin(ctx context.Context, key string, mutates bool) error {
	if r.st == nil {
		return nil
	}
	r.st.key, r.st.mutates = key, mutates
	if r.p == nil || r.p.ledger == nil {
		return nil
	}
	prev, err := r.p.ledger.Begin(ctx, key, r.MessageID(), r.st.now, r.p.lease)
	switch {
	case err == nil:
	case errors.Is(err, ledger.ErrDone):
		return ErrDuplicate
	case errors.Is(err, ledger.ErrLeased):
		return Transient(err)
	default:
		return fmt.Errorf("%w: begin: %w", errLedger, err)
	}
	r.st.begun = true
	r.st.redriveCount = prev.RedriveCount
	if mutates && prev.State == ledger.StateInProgress && prev.EffectStarted && prev.Receipt == "" {
		r.st.effectStarted = true
		return EffectUnknown(errors.New("an earlier delivery started the mutating call and left no receipt"))
	}
	return nil
}

// StartEffect records, before a mutating call, that its effect may happen.
// From then on, a failure that is not poison, security or policy_limit is
// dead-lettered as effect_unknown. If the ledger cannot record it, do not
// make the call: return the error (the record is retried).
func (r Record) StartEffect(ctx context.Context) error {
	if r.st == nil {
		return nil
	}
	if r.st.begun && r.p != nil && r.p.ledger != nil {
		if err := r.p.ledger.StartEffect(ctx, r.st.key, r.MessageID(), r.st.now); err != nil {
			if errors.Is(err, ledger.ErrLeased) {
				return Transient(err)
			}
			return fmt.Errorf("%w: start effect: %w", errLedger, err)
		}
	}
	r.st.effectStarted = true
	return nil
}

// SetReceipt keeps the effect receipt (an id the outside world gave the
// effect, or a hash of the work) for the processor: it only stores it. The
// ledger records it when the handler returns nil and the processor marks
// the key done; a failed record's receipt is dropped.
func (r Record) SetReceipt(receipt string) {
	if r.st != nil {
		r.st.receipt = receipt
	}
}

// Attribute names of the SQS system attributes read from each record.
const (
	attrReceiveCount = "ApproximateReceiveCount"
	attrSentAt       = "SentTimestamp"
	attrFirstReceive = "ApproximateFirstReceiveTimestamp"
	attrGroupID      = "MessageGroupId"
	attrTraceHeader  = "AWSTraceHeader"
)

// newRecord decodes the system attributes of record i that every record
// needs; now is the record's clock reading (see runOne).
func (p *Processor) newRecord(rs *records, i int, st *recordState, now time.Time) Record {
	r := Record{ReceiveCount: 1, p: p, st: st}
	st.now = now
	var n int
	var ok bool
	if rs.lean != nil {
		r.lean = &rs.lean[i]
		n, ok = r.lean.receiveCount()
		if p.fifo {
			r.GroupID = r.lean.group
		}
	} else {
		r.Message = &rs.sqs[i]
		a := r.Message.Attributes
		n, ok = receiveCount(a[attrReceiveCount])
		if p.fifo {
			r.GroupID = a[attrGroupID]
		}
	}
	if ok {
		r.ReceiveCount = n
	} else {
		st.badCount = true
	}
	return r
}

// records are the records of an event on either path: Handle's
// events.SQSEvent (sqs) or the lean path (lean).
type records struct {
	sqs  []events.SQSMessage
	lean []leanRecord
}

func (rs *records) len() int {
	if rs.lean != nil {
		return len(rs.lean)
	}
	return len(rs.sqs)
}

func (rs *records) id(i int) string {
	if rs.lean != nil {
		return rs.lean[i].id
	}
	return rs.sqs[i].MessageId
}

// group is record i's MessageGroupId.
func (rs *records) group(i int) string {
	if rs.lean != nil {
		return rs.lean[i].group
	}
	return rs.sqs[i].Attributes[attrGroupID]
}

// receiveCount parses ApproximateReceiveCount (at least 1). A single digit,
// by far the commonest value, skips strconv.
func receiveCount(s string) (int, bool) {
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
