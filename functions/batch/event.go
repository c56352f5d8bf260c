package batch

import (
	"bytes"

	"github.com/aws/aws-lambda-go/events"

	"github.com/agentdlq/agentdlq/functions/batch/internal/sqsevent"
)

// Event is a Lambda SQS event decoded by DecodeEvent. It owns its data:
// DecodeEvent decoded a copy of the payload, and nothing it hands out
// shares memory with the payload. A record keeps its message id, receipt
// handle and event source ARN as strings and its body decoded; its
// attributes and message attributes stay raw JSON, decoded when read
// (Record.Attribute, Record.MessageAttributes).
type Event struct {
	ev sqsevent.Event
}

// ErrRepeatedJSONKey is wrapped by DecodeEvent's error for a record (or a
// message attribute) with the same key twice, which encoding/json would
// merge or let the last one win: DecodeEvent refuses the event instead.
var ErrRepeatedJSONKey = sqsevent.ErrRepeatedJSONKey

// Len returns the number of records.
func (e *Event) Len() int {
	if e == nil {
		return 0
	}
	return len(e.ev.Records)
}

// MessageID returns the message id of record i.
func (e *Event) MessageID(i int) string { return e.ev.Records[i].ID() }

// Body returns a copy of the body of record i.
func (e *Event) Body(i int) []byte { return bytes.Clone(e.ev.Records[i].Body()) }

// SQSEvent returns the event as aws-lambda-go's type, every string and
// slice a new copy (for tests and for code that needs the maps, which the
// processor otherwise never builds).
func (e *Event) SQSEvent() events.SQSEvent {
	if e == nil {
		return events.SQSEvent{}
	}
	return e.ev.SQSEvent()
}

// DecodeEvent decodes a Lambda SQS event from the invocation payload, as
// the Lambda runtime hands it to a handler (lambda.Handler's Invoke). It
// accepts what json.Unmarshal into events.SQSEvent accepts, with the same
// values (keys matched case-insensitively, unknown keys skipped, escapes,
// surrogate pairs and invalid UTF-8 decoded as encoding/json does), except
// a record or message attribute with a repeated key, which is an error
// wrapping ErrRepeatedJSONKey. Any other malformed payload is an error
// wrapping ErrNotSQSEvent that says where: for invalid JSON, the index of
// the byte where encoding/json finds it invalid (the payload's length when
// it ends first), with encoding/json's words for it.
//
// The payload is neither modified nor kept: the Event decodes a copy of it,
// which it owns. Per record it allocates one string holding its message
// id, receipt handle and group id (the event source ARN is shared by
// records that have the same); the records themselves are one slice.
func DecodeEvent(payload []byte) (*Event, error) {
	e := &Event{}
	if err := sqsevent.DecodeInto(&e.ev, bytes.Clone(payload)); err != nil {
		return nil, err
	}
	return e, nil
}
