package sqsevent

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/internal/jsonscan"
	"github.com/agentdlq/agentdlq/internal/textutil"
)

// Event is a Lambda SQS event as Decode leaves it: its records, views of
// the buffer it decoded (which it owns from then on). A record keeps its
// message id, receipt handle and event source ARN as strings and its body
// decoded in place; its attributes and message attributes stay raw JSON,
// decoded when read. Records is nil for a null or absent "Records".
type Event struct {
	Records []Message
}

// Message is one record of an event, as the processor holds it: views of
// the buffer it was decoded in, the Event's own copy of the payload, which
// nothing writes once it is decoded; a Record reads it, and hands out
// copies.
type Message struct {
	id, receipt, arn, group string // cut from the event's one string of copies
	body                    []byte // the body, decoded in place in the buffer
	// bodyStr is the body as a string when hasBodyStr: the
	// events.SQSMessage's own Body (FromSQSEvent), which SQSMessage and the
	// dead letter's MessageBody share (a string never changes) instead of
	// copying body again.
	bodyStr       string
	hasBodyStr    bool
	attrs, mattrs []byte // raw JSON objects in the buffer; nil when absent or null
	requeued      bool   // mattrs has AttrRequeued (carried)
	count         []byte // ApproximateReceiveCount's raw string content; nil when absent
	countEscaped  bool   // count holds an escape (decoded when read)
	// Raw string literals (quotes included) in the buffer; nil when absent
	// or null. Decoded when read.
	md5Body, md5Attrs, source, region []byte
	null                              bool // the record was JSON null
	// SentTimestamp, ApproximateFirstReceiveTimestamp and AWSTraceHeader,
	// which every dead letter reads: where their values stand in attrs
	// (offset, length), noted when decoded; sysSlow when one needs decoding
	// (an escape, invalid UTF-8), and then they are looked up in attrs.
	sys     [numSys]span
	sysSlow bool
}

// The system attributes a dead letter reads, in Message.sys.
const (
	sysSentAt = iota
	sysFirstReceive
	sysTraceHeader
	numSys
)

var sysNames = [numSys]string{attrSentAt, attrFirstReceive, attrTraceHeader}

// sysAttr is the value of system attribute k (sysSentAt, ...) as bytes in
// the buffer, and whether they are its value as is (false: use attribute,
// which decodes it).
func (r *Message) sysAttr(k int) ([]byte, bool) {
	if r.sysSlow {
		return nil, false
	}
	return r.sys[k].bytesOf(r.attrs), true
}

// ErrNotSQSEvent is wrapped by Decode's error for a payload that is not a
// Lambda SQS event, and by Check's for records that are not SQS messages
// (batch.ErrNotSQSEvent is this error).
var ErrNotSQSEvent = errors.New("batch: not an SQS event")

// ErrRepeatedJSONKey is wrapped by Decode's error for a record (or a
// message attribute) with the same key twice, which encoding/json would
// merge or let the last one win: Decode refuses the event instead
// (batch.ErrRepeatedJSONKey is this error).
var ErrRepeatedJSONKey = errors.New("repeated JSON key")

// Decode decodes a Lambda SQS event from buf, which it may overwrite (each
// body is decoded in place) and then owns: the records are views of it. It
// accepts what json.Unmarshal into events.SQSEvent accepts, with the same
// values (keys matched case-insensitively, unknown keys skipped, escapes,
// surrogate pairs and invalid UTF-8 decoded as encoding/json does), except
// a record or message attribute with a repeated key, which is an error
// wrapping ErrRepeatedJSONKey. Any other malformed payload is an error
// wrapping ErrNotSQSEvent that says where: for invalid JSON, the index of
// the byte where encoding/json finds it invalid (the payload's length when
// it ends first), with encoding/json's words for it.
//
// Per record it allocates one string holding its message id, receipt
// handle and group id (the event source ARN is shared by records that have
// the same); the records themselves are one slice.
func Decode(buf []byte) (*Event, error) {
	ev := &Event{}
	if err := DecodeInto(ev, buf); err != nil {
		return nil, err
	}
	return ev, nil
}

// DecodeInto is Decode into an Event the caller holds (batch's, so that a
// decoded event is one allocation, not two). On an error ev is left in an
// unspecified state.
func DecodeInto(ev *Event, buf []byte) error {
	*ev = Event{}
	d := decoder{b: buf}
	return d.event(ev)
}

// The record's own strings, decoded into the decoder's tmp and cut from
// one string when the record ends, in decoder.cur.
const (
	ownID = iota
	ownReceipt
	ownGroup
	numOwn
)

type decoder struct {
	b        []byte
	kbufs    [8][]byte // decoded keys, one buffer per nesting depth
	mkeys    []byte    // the message attribute names of one record, for duplicates
	moffs    []int
	requeued bool         // the last messageAttributes walked held AttrRequeued
	tmp      []byte       // the current record's strings, decoded: id, receipt, group
	cur      [numOwn]span // where they stand in tmp (ownID, ownReceipt, ownGroup)
	arn      []byte       // the current record's eventSourceARN, decoded
	lastARN  string       // the previous record's: records share it
	blocks   []*[recordBlock]Message
	scratch  []byte // base64 validation: a value's content, decoded
	b64      []byte // base64 validation: its decoded bytes, kept by no one
}

func (d *decoder) fail(i int, what string) error {
	return fmt.Errorf("%w: %s at byte %d", ErrNotSQSEvent, what, i)
}

// invalid is the error for a value at b[i] that is not valid JSON: it
// says where encoding/json finds the first byte that makes it invalid
// (len(b) when the payload ends first), and what that byte is. Only the
// error path pays for the second look. The value at b[i] is as received:
// the bodies decoded in place so far all stand before it (a body that is
// itself invalid is invalidString's).
func (d *decoder) invalid(i int) error {
	pos, why := syntaxError(d.b, i)
	return d.fail(pos, "invalid JSON: "+why)
}

// invalidString is the error for a string literal made invalid by the
// byte at b[i] (i is len(b) when the payload ends inside it), as
// encoding/json words it. The literal was being decoded in place: the
// bytes before i may have been overwritten, so i is not looked for again.
func (d *decoder) invalidString(i int) error {
	if i >= len(d.b) {
		return d.fail(len(d.b), "invalid JSON: unexpected end of JSON input")
	}
	where := "in string literal" // a control character
	switch {
	case d.b[i] < 0x20:
	case d.b[i-1] == '\\': // the escape's backslash, before i: not overwritten
		where = "in string escape code"
	default:
		where = "in \\u hexadecimal character escape"
	}
	return d.fail(i, "invalid JSON: invalid character "+strconv.QuoteRune(rune(d.b[i]))+" "+where)
}

// syntaxError finds, with encoding/json, the first byte of the JSON value
// at b[i] that makes it invalid: its index and encoding/json's words for
// it. When encoding/json reads a whole value there (it is not reached: the
// decoder refuses only what encoding/json refuses), or the value is nested
// too deep, the index is i.
func syntaxError(b []byte, i int) (int, string) {
	var v json.RawMessage
	err := json.NewDecoder(bytes.NewReader(b[i:])).Decode(&v)
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se) && strings.Contains(se.Error(), "exceeded max depth"):
		// encoding/json counts depth from where it starts, here the value,
		// not the payload: the value's start is the honest position.
		return i, fmt.Sprintf("nested deeper than %d", jsonscan.MaxDepth)
	case errors.As(err, &se) && se.Offset > 0:
		return i + int(se.Offset) - 1, se.Error()
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return len(b), "unexpected end of JSON input"
	case err != nil:
		return i, err.Error()
	}
	return i, "not accepted"
}

func (d *decoder) event(ev *Event) error {
	b := d.b
	i := jsonscan.SkipWS(b, 0)
	if i >= len(b) {
		return d.fail(i, "empty payload")
	}
	switch b[i] {
	case 'n':
		k := jsonscan.ScanLiteral(b, i, "null")
		if k < 0 {
			return d.invalid(i)
		}
		i = k
	case '{':
		var err error
		if i, err = d.top(ev, i); err != nil {
			return err
		}
	default:
		return d.fail(i, "not a JSON object")
	}
	if i = jsonscan.SkipWS(b, i); i != len(b) {
		return d.fail(i, "data after the event")
	}
	return nil
}

// top decodes the event object whose '{' is b[i].
func (d *decoder) top(ev *Event, i int) (int, error) {
	b := d.b
	seen := false
	return d.object(i, 1, func(key []byte, j int) (int, error) {
		if !bytes.EqualFold(key, []byte("Records")) {
			k := jsonscan.SkipValue(b, j, 1)
			if k < 0 {
				return -1, d.invalid(j)
			}
			return k, nil
		}
		if seen {
			return -1, fmt.Errorf("%w: %w: \"Records\" twice", ErrNotSQSEvent, ErrRepeatedJSONKey)
		}
		seen = true
		return d.records(ev, j)
	})
}

// object walks the object whose '{' is b[i], itself at depth, calling
// member with each key (decoded) and the index of its value; member returns
// the index after the value.
func (d *decoder) object(i, depth int, member func(key []byte, j int) (int, error)) (int, error) {
	b := d.b
	if depth > jsonscan.MaxDepth {
		return -1, d.fail(i, "JSON nested too deep")
	}
	i = jsonscan.SkipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		key, end, err := d.keyAt(i, depth)
		if err != nil {
			return -1, err
		}
		if i, err = d.colon(end); err != nil {
			return -1, err
		}
		if i, err = member(key, i); err != nil {
			return -1, err
		}
		i = jsonscan.SkipWS(b, i)
		if i >= len(b) {
			return -1, d.fail(i, "invalid JSON: unterminated object")
		}
		switch b[i] {
		case ',':
			i = jsonscan.SkipWS(b, i+1)
		case '}':
			return i + 1, nil
		default:
			return -1, d.fail(i, "invalid JSON: want ',' or '}'")
		}
	}
}

// array walks the array whose '[' is b[i], itself at depth.
func (d *decoder) array(i, depth int, elem func(j int) (int, error)) (int, error) {
	b := d.b
	if depth > jsonscan.MaxDepth {
		return -1, d.fail(i, "JSON nested too deep")
	}
	i = jsonscan.SkipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for {
		if i >= len(b) {
			return -1, d.fail(i, "invalid JSON: unterminated array")
		}
		var err error
		if i, err = elem(i); err != nil {
			return -1, err
		}
		i = jsonscan.SkipWS(b, i)
		if i >= len(b) {
			return -1, d.fail(i, "invalid JSON: unterminated array")
		}
		switch b[i] {
		case ',':
			i = jsonscan.SkipWS(b, i+1)
		case ']':
			return i + 1, nil
		default:
			return -1, d.fail(i, "invalid JSON: want ',' or ']'")
		}
	}
}

func (d *decoder) records(ev *Event, i int) (int, error) {
	b := d.b
	switch b[i] {
	case 'n':
		if j := jsonscan.ScanLiteral(b, i, "null"); j >= 0 {
			ev.Records = nil
			return j, nil
		}
		return -1, d.invalid(i)
	case '[':
		ev.Records = []Message{}
	default:
		return -1, d.typeError(i, "\"Records\" is not an array")
	}
	n := 0
	end, err := d.array(i, 2, func(j int) (int, error) {
		// Records go into pooled blocks, copied once into an exact slice at
		// the end: a growing slice would allocate five times the final size.
		if n%recordBlock == 0 {
			d.blocks = append(d.blocks, getBlock())
		}
		r := &d.blocks[n/recordBlock][n%recordBlock]
		n++
		switch b[j] {
		case 'n':
			if k := jsonscan.ScanLiteral(b, j, "null"); k >= 0 {
				r.null = true
				return k, nil
			}
			return -1, d.invalid(j)
		case '{':
			return d.record(r, j, n-1)
		}
		return -1, d.typeError(j, fmt.Sprintf("record %d is not an object", n-1))
	})
	if err == nil {
		ev.Records = make([]Message, n)
		for k, blk := range d.blocks {
			copy(ev.Records[k*recordBlock:], blk[:])
		}
	}
	for k, blk := range d.blocks {
		used := min(recordBlock, n-k*recordBlock)
		clear(blk[:used]) // keep nothing of this payload alive in the pool
		blockPool.Put(blk)
	}
	d.blocks = d.blocks[:0]
	if err != nil {
		return -1, err
	}
	return end, nil
}

// recordBlock is the number of records in a block of the decoder's scratch.
const recordBlock = 256

var blockPool sync.Pool // *[recordBlock]Message

func getBlock() *[recordBlock]Message {
	if b, ok := blockPool.Get().(*[recordBlock]Message); ok {
		return b
	}
	return new([recordBlock]Message)
}

// typeError is a valid JSON value of the wrong type at b[i].
func (d *decoder) typeError(i int, what string) error {
	return d.fail(i, what)
}

// Record members.
const (
	fMessageID = iota
	fReceipt
	fBody
	fMD5Body
	fMD5Attrs
	fAttrs
	fMAttrs
	fARN
	fSource
	fRegion
	numFields
)

var fieldNames = [numFields]string{"messageId", "receiptHandle", "body", "md5OfBody", "md5OfMessageAttributes",
	"attributes", "messageAttributes", "eventSourceARN", "eventSource", "awsRegion"}

func fieldIndex(key []byte) int {
	for f, name := range fieldNames {
		if len(key) == len(name) && string(key) == name {
			return f
		}
	}
	for f, name := range fieldNames {
		if bytes.EqualFold(key, []byte(name)) {
			return f
		}
	}
	return -1
}

// record decodes the record object whose '{' is b[i] into r.
func (d *decoder) record(r *Message, i, n int) (int, error) {
	b := d.b
	var seen [numFields]bool
	d.tmp, d.cur, d.arn = d.tmp[:0], [numOwn]span{}, d.arn[:0]
	end, err := d.object(i, 3, func(key []byte, j int) (int, error) {
		f := fieldIndex(key)
		if f < 0 {
			k := jsonscan.SkipValue(b, j, 3)
			if k < 0 {
				return -1, d.invalid(j)
			}
			return k, nil
		}
		if seen[f] {
			return -1, fmt.Errorf("%w: %w: record %d has %q twice", ErrNotSQSEvent, ErrRepeatedJSONKey, n, fieldNames[f])
		}
		seen[f] = true
		switch f {
		case fAttrs:
			return d.attributes(r, j, n)
		case fMAttrs:
			return d.messageAttributes(r, j, n)
		}
		// A string or null.
		if b[j] == 'n' {
			if k := jsonscan.ScanLiteral(b, j, "null"); k >= 0 {
				return k, nil
			}
			return -1, d.invalid(j)
		}
		if b[j] != '"' {
			if k := jsonscan.SkipValue(b, j, 3); k < 0 {
				return -1, d.invalid(j)
			}
			return -1, d.typeError(j, fmt.Sprintf("record %d: %q is not a string", n, fieldNames[f]))
		}
		if f == fBody {
			end, body, bad := bodyInPlace(b, j)
			if end < 0 {
				return -1, d.invalidString(bad)
			}
			r.body = body
			return end, nil
		}
		end := jsonscan.SkipString(b, j)
		if end < 0 {
			return -1, d.invalid(j)
		}
		switch f {
		case fMessageID, fReceipt:
			own := ownID
			if f == fReceipt {
				own = ownReceipt
			}
			off := len(d.tmp)
			d.tmp = plainOrUnquoteAppend(d.tmp, b[j+1:end-1])
			d.cur[own] = span{uint32(off), uint32(len(d.tmp) - off)}
		case fARN:
			d.arn = plainOrUnquoteAppend(d.arn[:0], b[j+1:end-1])
		case fMD5Body:
			r.md5Body = b[j:end]
		case fMD5Attrs:
			r.md5Attrs = b[j:end]
		case fSource:
			r.source = b[j:end]
		case fRegion:
			r.region = b[j:end]
		}
		return end, nil
	})
	if err != nil {
		return -1, err
	}
	// One allocation holds the record's own strings; the ARN is shared
	// with the previous record when it is the same (it usually is).
	if len(d.tmp) > 0 {
		all := string(d.tmp)
		r.id, r.receipt, r.group = d.cur[ownID].cut(all), d.cur[ownReceipt].cut(all), d.cur[ownGroup].cut(all)
	}
	if len(d.arn) > 0 {
		if string(d.arn) != d.lastARN {
			d.lastARN = string(d.arn)
		}
		r.arn = d.lastARN
	}
	return end, nil
}

// attributes validates the attributes object (string or null values) at
// b[i], keeps it raw, and notes ApproximateReceiveCount and MessageGroupId.
func (d *decoder) attributes(r *Message, i, n int) (int, error) {
	b := d.b
	switch b[i] {
	case 'n':
		if k := jsonscan.ScanLiteral(b, i, "null"); k >= 0 {
			return k, nil
		}
		return -1, d.invalid(i)
	case '{':
	default:
		return -1, d.typeError(i, fmt.Sprintf("record %d: \"attributes\" is not an object", n))
	}
	end, err := d.object(i, 4, func(key []byte, j int) (int, error) {
		var k int
		switch b[j] {
		case 'n':
			if k = jsonscan.ScanLiteral(b, j, "null"); k < 0 {
				return -1, d.invalid(j)
			}
		case '"':
			if k = jsonscan.SkipString(b, j); k < 0 {
				return -1, d.invalid(j)
			}
		default:
			if k = jsonscan.SkipValue(b, j, 4); k < 0 {
				return -1, d.invalid(j)
			}
			return -1, d.typeError(j, fmt.Sprintf("record %d: attribute %q is not a string", n, textutil.Truncate(string(key), 64)))
		}
		// The last of duplicate keys wins, as in a decoded map.
		switch string(key) {
		case attrReceiveCount:
			r.count, r.countEscaped = nil, false
			if b[j] == '"' {
				r.count = b[j+1 : k-1]
				r.countEscaped = bytes.IndexByte(r.count, '\\') >= 0
			}
		case attrSentAt, attrFirstReceive, attrTraceHeader:
			x := sysSentAt
			switch string(key) {
			case attrFirstReceive:
				x = sysFirstReceive
			case attrTraceHeader:
				x = sysTraceHeader
			}
			r.sys[x] = span{}
			if b[j] == '"' {
				v := b[j+1 : k-1]
				r.sys[x] = span{uint32(j + 1 - i), uint32(len(v))}
				if bytes.IndexByte(v, '\\') >= 0 || !utf8.Valid(v) {
					r.sysSlow = true
				}
			}
		case attrGroupID:
			off := len(d.tmp)
			if b[j] == '"' {
				d.tmp = plainOrUnquoteAppend(d.tmp, b[j+1:k-1])
			}
			d.cur[ownGroup] = span{uint32(off), uint32(len(d.tmp) - off)}
		}
		return k, nil
	})
	if err != nil {
		return -1, err
	}
	r.attrs = b[i:end]
	return end, nil
}

// messageAttributes validates the messageAttributes object at b[i] as
// encoding/json would decode it into map[string]events.SQSMessageAttribute
// and keeps it raw.
func (d *decoder) messageAttributes(r *Message, i, n int) (int, error) {
	b := d.b
	switch b[i] {
	case 'n':
		if k := jsonscan.ScanLiteral(b, i, "null"); k >= 0 {
			return k, nil
		}
		return -1, d.invalid(i)
	case '{':
	default:
		return -1, d.typeError(i, fmt.Sprintf("record %d: \"messageAttributes\" is not an object", n))
	}
	end, err := walkMessageAttributes(d, i)
	if err != nil {
		return -1, err
	}
	r.mattrs, r.requeued = b[i:end], d.requeued
	return end, nil
}

// Message attribute members.
const (
	mStringValue = iota
	mBinaryValue
	mStringList
	mBinaryList
	mDataType
	numMFields
)

var mFieldNames = [numMFields]string{"stringValue", "binaryValue", "stringListValues", "binaryListValues", "dataType"}

func mFieldIndex(key []byte) int {
	for f, name := range mFieldNames {
		if string(key) == name {
			return f
		}
	}
	for f, name := range mFieldNames {
		if bytes.EqualFold(key, []byte(name)) {
			return f
		}
	}
	return -1
}

// walkMessageAttributes validates the messageAttributes object whose '{' is
// d.b[i] as encoding/json would decode it into
// map[string]events.SQSMessageAttribute. It returns the index after the
// object.
//
// It is a loop, not the decoder's object walk with a callback per member:
// Decode runs it on every record, and a record of the generated mix
// has seven attributes of four members each, so the calls, closures and
// generic key handling cost more than the validation itself. It accepts
// and refuses exactly what d.object with the checks below would (same
// grammar, same nesting depths, same errors); diffDecode holds it to
// encoding/json.
func walkMessageAttributes(d *decoder, i int) (int, error) {
	b := d.b
	var names map[string]struct{} // duplicate attribute names, past 16 of them
	d.mkeys, d.moffs, d.requeued = d.mkeys[:0], d.moffs[:0], false
	i = jsonscan.SkipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		key, end, err := d.keyAt(i, 4)
		if err != nil {
			return -1, err
		}
		dup := false
		if names != nil {
			_, dup = names[string(key)]
			names[string(key)] = struct{}{}
		} else {
			for k, off := 0, 0; k < len(d.moffs); k++ {
				dup = dup || string(d.mkeys[off:d.moffs[k]]) == string(key)
				off = d.moffs[k]
			}
			d.mkeys = append(d.mkeys, key...)
			d.moffs = append(d.moffs, len(d.mkeys))
			if len(d.moffs) > 16 {
				names = make(map[string]struct{}, 32)
				for k, off := 0, 0; k < len(d.moffs); k++ {
					names[string(d.mkeys[off:d.moffs[k]])] = struct{}{}
					off = d.moffs[k]
				}
			}
		}
		d.requeued = d.requeued || string(key) == AttrRequeued
		j, err := d.colon(end)
		if err != nil {
			return -1, err
		}
		if dup {
			return -1, fmt.Errorf("%w: %w: message attribute %q twice", ErrNotSQSEvent, ErrRepeatedJSONKey, textutil.Truncate(string(key), 64))
		}
		switch b[j] {
		case 'n':
			k := jsonscan.ScanLiteral(b, j, "null")
			if k < 0 {
				return -1, d.invalid(j)
			}
			j = k
		case '{':
			if j, err = d.messageAttribute(j, key); err != nil {
				return -1, err
			}
		default:
			if k := jsonscan.SkipValue(b, j, 4); k < 0 {
				return -1, d.invalid(j)
			}
			return -1, d.typeError(j, fmt.Sprintf("message attribute %q is not an object", textutil.Truncate(string(key), 64)))
		}
		var done bool
		if i, done, err = d.next(j, '}'); err != nil || done {
			return i, err
		}
	}
}

// keyAt reads the object key whose opening quote should be b[i], at depth:
// the key decoded (a view of the payload when it needs no decoding, which
// ScanString's flags say for almost every key, sparing plainOrUnquote's two
// passes over it) and the index after its closing quote.
func (d *decoder) keyAt(i, depth int) ([]byte, int, error) {
	b := d.b
	if i >= len(b) || b[i] != '"' {
		return nil, -1, d.fail(i, "invalid JSON: want a key")
	}
	end, flags := jsonscan.ScanString(b, i)
	if end < 0 {
		return nil, -1, d.invalid(i)
	}
	key := b[i+1 : end-1]
	if flags != 0 {
		key = d.key(depth, key)
	}
	return key, end, nil
}

// key decodes an object key at depth that needs it (ScanString's flags not
// zero) into the decoder's buffer for that depth (a new slice past the
// depths that have one): the key is valid until the next key at that depth.
func (d *decoder) key(depth int, raw []byte) []byte {
	if depth >= len(d.kbufs) {
		return plainOrUnquote(nil, raw)
	}
	key := plainOrUnquote(d.kbufs[depth][:0], raw)
	if cap(key) > cap(d.kbufs[depth]) && len(key) > 0 && &key[0] != &raw[0] {
		d.kbufs[depth] = key[:0]
	}
	return key
}

// colon reads the ':' after the key that ends before b[i], and the
// whitespace around it, and returns the index of the value's first byte.
func (d *decoder) colon(i int) (int, error) {
	b := d.b
	i = jsonscan.SkipWS(b, i)
	if i >= len(b) || b[i] != ':' {
		return -1, d.fail(i, "invalid JSON: want ':'")
	}
	i = jsonscan.SkipWS(b, i+1)
	if i >= len(b) {
		return -1, d.fail(i, "invalid JSON: want a value")
	}
	return i, nil
}

// next reads what follows a member or an element that ends before b[i], in
// an object (end '}') or an array (end ']'): either a ',' and the whitespace
// after it, and then it returns the index of the next member's or element's
// first byte; or end, and then it returns the index after it and true.
func (d *decoder) next(i int, end byte) (int, bool, error) {
	b := d.b
	i = jsonscan.SkipWS(b, i)
	if i >= len(b) {
		if end == '}' {
			return -1, false, d.fail(i, "invalid JSON: unterminated object")
		}
		return -1, false, d.fail(i, "invalid JSON: unterminated array")
	}
	switch b[i] {
	case ',':
		return jsonscan.SkipWS(b, i+1), false, nil
	case end:
		return i + 1, true, nil
	}
	if end == '}' {
		return -1, false, d.fail(i, "invalid JSON: want ',' or '}'")
	}
	return -1, false, d.fail(i, "invalid JSON: want ',' or ']'")
}

// mFieldAt reads the key whose opening quote is b[i] when it is a message
// attribute member spelled exactly as SQS spells it (no escape, no other
// case), and returns the member and the index after the closing quote;
// otherwise -1 (and the caller scans the key). The comparisons with
// constants of at most 16 bytes compile to a few word loads, where scanning
// the key and then matching it read it twice.
func mFieldAt(b []byte, i int) (int, int) {
	if i+len(`"stringListValues"`) > len(b) {
		return -1, 0
	}
	k := b[i+1:]
	switch k[0] {
	case 's':
		if string(k[:len("stringValue")+1]) == `stringValue"` {
			return mStringValue, i + len(`"stringValue"`)
		}
		if string(k[:len("stringListValues")]) == "stringListValues" && k[len("stringListValues")] == '"' {
			return mStringList, i + len(`"stringListValues"`)
		}
	case 'b':
		if string(k[:len("binaryValue")+1]) == `binaryValue"` {
			return mBinaryValue, i + len(`"binaryValue"`)
		}
		if string(k[:len("binaryListValues")]) == "binaryListValues" && k[len("binaryListValues")] == '"' {
			return mBinaryList, i + len(`"binaryListValues"`)
		}
	case 'd':
		if string(k[:len("dataType")+1]) == `dataType"` {
			return mDataType, i + len(`"dataType"`)
		}
	}
	return -1, 0
}

// messageAttribute validates one message attribute object at b[i] (depth
// 5). It is a loop for the reason walkMessageAttributes is.
func (d *decoder) messageAttribute(i int, name []byte) (int, error) {
	b := d.b
	var seen [numMFields]bool
	i = jsonscan.SkipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return -1, d.fail(i, "invalid JSON: want a key")
		}
		f, end := mFieldAt(b, i)
		if f < 0 {
			key, kend, err := d.keyAt(i, 5)
			if err != nil {
				return -1, err
			}
			f, end = mFieldIndex(key), kend
		}
		j, err := d.colon(end)
		if err != nil {
			return -1, err
		}
		switch {
		case f < 0:
			k := jsonscan.SkipValue(b, j, 5)
			if k < 0 {
				return -1, d.invalid(j)
			}
			j = k
		case seen[f]:
			return -1, fmt.Errorf("%w: %w: message attribute %q has %q twice", ErrNotSQSEvent, ErrRepeatedJSONKey, textutil.Truncate(string(name), 64), mFieldNames[f])
		case b[j] == 'n':
			seen[f] = true
			k := jsonscan.ScanLiteral(b, j, "null") // the zero value
			if k < 0 {
				return -1, d.invalid(j)
			}
			j = k
		case f == mStringList || f == mBinaryList:
			seen[f] = true
			if j, err = d.messageAttributeList(j, name, f); err != nil {
				return -1, err
			}
		default: // stringValue, binaryValue, dataType
			seen[f] = true
			if b[j] != '"' {
				if k := jsonscan.SkipValue(b, j, 5); k < 0 {
					return -1, d.invalid(j)
				}
				return -1, d.mattrError(j, name, mFieldNames[f]+" is not a string")
			}
			k, vflags := jsonscan.ScanString(b, j)
			if k < 0 {
				return -1, d.invalid(j)
			}
			v := b[j+1 : k-1]
			if f == mBinaryValue {
				if err := d.checkBase64(v, vflags); err != nil {
					return -1, d.mattrError(j, name, "binaryValue: "+err.Error())
				}
			}
			j = k
		}
		var done bool
		if i, done, err = d.next(j, '}'); err != nil || done {
			return i, err
		}
	}
}

// messageAttributeList validates the list member f (mStringList or
// mBinaryList) of message attribute name, whose '[' is b[i] (depth 6).
func (d *decoder) messageAttributeList(i int, name []byte, f int) (int, error) {
	b := d.b
	if b[i] != '[' {
		if k := jsonscan.SkipValue(b, i, 5); k < 0 {
			return -1, d.invalid(i)
		}
		return -1, d.mattrError(i, name, mFieldNames[f]+" is not an array")
	}
	i = jsonscan.SkipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for {
		if i >= len(b) {
			return -1, d.fail(i, "invalid JSON: unterminated array")
		}
		var k int
		switch b[i] {
		case 'n':
			if k = jsonscan.ScanLiteral(b, i, "null"); k < 0 {
				return -1, d.invalid(i)
			}
		case '"':
			var flags uint8
			if k, flags = jsonscan.ScanString(b, i); k < 0 {
				return -1, d.invalid(i)
			}
			if f == mBinaryList {
				if err := d.checkBase64(b[i+1:k-1], flags); err != nil {
					return -1, d.mattrError(i, name, "binaryListValues: "+err.Error())
				}
			}
		default:
			if k = jsonscan.SkipValue(b, i, 6); k < 0 {
				return -1, d.invalid(i)
			}
			return -1, d.mattrError(i, name, mFieldNames[f]+" holds a value that is not a string")
		}
		var done bool
		var err error
		if i, done, err = d.next(k, ']'); err != nil || done {
			return i, err
		}
	}
}

// mattrError is a message attribute's member of the wrong type at b[i].
func (d *decoder) mattrError(i int, name []byte, what string) error {
	return d.typeError(i, fmt.Sprintf("message attribute %q: %s", textutil.Truncate(string(name), 64), what))
}

// checkBase64 validates the raw content of a JSON string (ScanString's
// flags given) as base64 as d.base64 decodes it, into the decoder's
// scratch: validation keeps nothing, so it allocates nothing. As in
// d.base64, only content that needs decoding goes to the scratch; plain
// content, the payload's own bytes, never becomes it.
func (d *decoder) checkBase64(content []byte, flags uint8) error {
	s := content
	if flags&jsonscan.StrEscape != 0 || flags&jsonscan.StrHigh != 0 && !utf8.Valid(content) {
		s = jsonscan.AppendUnquoted(d.scratch[:0], content)
		d.scratch = s[:0]
	}
	n := base64.StdEncoding.DecodedLen(len(s))
	if cap(d.b64) < n {
		d.b64 = make([]byte, n, max(n, 2*cap(d.b64)))
	}
	_, err := base64.StdEncoding.Decode(d.b64[:n], s)
	return err
}

// dataTypeString decodes the raw content of a validated JSON string holding
// a data type, the usual ones (as written, no escapes) without an
// allocation or a decoding pass.
func dataTypeString(content []byte) string {
	switch string(content) {
	case "String":
		return "String"
	case "Number":
		return "Number"
	case "Binary":
		return "Binary"
	}
	return string(plainOrUnquote(nil, content))
}

// base64 decodes the raw content of a JSON string as encoding/json decodes
// a []byte (standard encoding, padded; CR and LF ignored). The result is a
// new slice.
func (d *decoder) base64(content []byte) ([]byte, error) {
	s := content
	if bytes.IndexByte(content, '\\') >= 0 || !utf8.Valid(content) {
		// Decoded into the scratch, never into the payload: content itself,
		// when plain, must not become the scratch a later value is decoded in.
		s = jsonscan.AppendUnquoted(d.scratch[:0], content)
		d.scratch = s[:0]
	}
	out := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
	n, err := base64.StdEncoding.Decode(out, s)
	if err != nil {
		return nil, err
	}
	return out[:n], nil
}

// plainOrUnquote returns content (a JSON string's raw content, validated)
// decoded as encoding/json decodes it: content itself when it needs no
// decoding, otherwise appended to dst.
func plainOrUnquote(dst, content []byte) []byte {
	if bytes.IndexByte(content, '\\') < 0 && utf8.Valid(content) {
		return content
	}
	return jsonscan.AppendUnquoted(dst, content)
}

// plainOrUnquoteAppend appends content decoded to dst.
func plainOrUnquoteAppend(dst, content []byte) []byte {
	if bytes.IndexByte(content, '\\') < 0 && utf8.Valid(content) {
		return append(dst, content...)
	}
	return jsonscan.AppendUnquoted(dst, content)
}

// bodyInPlace validates the string literal whose opening quote is b[j] and
// decodes it in place, in one pass (jsonscan.ScanUnquoteInPlace: a body
// that is itself JSON has an escape every few bytes, and a scan then an
// unquote looked at each twice). It returns the index after the literal
// and the decoded body, a view of b; when the literal is not valid, -1 and
// the index of the byte that makes it invalid (len(b) when b ends first).
// Decoding never makes valid UTF-8 longer; a body with invalid UTF-8, whose
// bytes become U+FFFD's three, is decoded into a new slice.
func bodyInPlace(b []byte, j int) (int, []byte, int) {
	end, n, flags := jsonscan.ScanUnquoteInPlace(b, j)
	if end < 0 {
		return -1, nil, n
	}
	body := b[j+1 : n]
	if flags&jsonscan.StrHigh != 0 && !utf8.Valid(body) {
		body = jsonscan.AppendReplacingInvalid(nil, body)
	}
	return end, body, 0
}

// litString decodes a raw JSON string literal (quotes included) kept by
// the decoder; nil is "".
func litString(lit []byte) string {
	if lit == nil {
		return ""
	}
	return string(plainOrUnquote(nil, lit[1:len(lit)-1]))
}

// Attribute returns the value of the system attribute name ("" when
// absent), decoded from the raw attributes; the last of duplicate keys
// wins, as in a decoded map.
func (r *Message) Attribute(name string) (string, bool) {
	if r.attrs == nil {
		return "", false
	}
	d := decoder{b: r.attrs}
	var val []byte
	found := false
	_, err := d.object(0, 4, func(key []byte, j int) (int, error) {
		b := d.b
		var k int
		if b[j] == 'n' {
			k = j + 4
		} else {
			k = jsonscan.SkipString(b, j)
		}
		if string(key) == name {
			found, val = true, nil
			if b[j] == '"' {
				val = b[j:k]
			}
		}
		return k, nil
	})
	if err != nil || !found {
		return "", false // validated when decoded: not reached
	}
	return litString(val), true
}

// ReceiveCount parses the record's ApproximateReceiveCount.
func (r *Message) ReceiveCount() (int, bool) {
	if r.count == nil {
		return ParseReceiveCount("")
	}
	if !r.countEscaped {
		return ParseReceiveCount(string(r.count)) // a short, non-escaping string: no allocation
	}
	return ParseReceiveCount(string(jsonscan.AppendUnquoted(nil, r.count)))
}

// MessageAttributes decodes the raw message attributes into a new map,
// every value its own copy, with encoding/json: the accessors that build
// aws-lambda-go's maps are not on the processor's path, so they take the
// standard library's decoding, the one Decode is held to. Decode
// validated the object (no duplicate name or member, every member of its
// type), so it does not fail.
func (r *Message) MessageAttributes() map[string]events.SQSMessageAttribute {
	if r.mattrs == nil {
		return nil
	}
	var out map[string]events.SQSMessageAttribute
	_ = json.Unmarshal(r.mattrs, &out)
	return out
}

// AppendDeadLetterAttrs appends the raw message attributes, without their
// lists, to dst: what a dead letter carries of each (name, data type and
// value), names and values decoded into new strings and slices. Decode
// refused a repeated name, so dst holds each name once.
//
// The attributes were validated by Decode (well-formed, no duplicate
// name or member, every member of the right type), so this walk trusts them:
// no duplicate bookkeeping, no callbacks, no second validation. A fuzz test
// (diffDecode) holds it to encoding/json's decoding.
func (r *Message) AppendDeadLetterAttrs(dst []deadletter.NamedAttribute) []deadletter.NamedAttribute {
	b := r.mattrs
	if len(b) <= 2 {
		return dst // absent, null or {}
	}
	var d decoder // base64's scratch
	var kbuf [32]byte
	// The names and string values are decoded into one buffer and made one
	// string, which they are cut from: one allocation a record, not two an
	// attribute.
	var sbuf [1024]byte
	sb := sbuf[:0]
	type spans struct{ name, value [2]int }
	var cut [deadletter.MaxAttributes]spans
	first := len(dst)
	appendContent := func(content []byte, flags uint8) [2]int {
		off := len(sb)
		if flags == 0 {
			sb = append(sb, content...)
		} else {
			sb = plainOrUnquoteAppend(sb, content)
		}
		return [2]int{off, len(sb)}
	}
	i := jsonscan.SkipWS(b, 1)
	for i < len(b) && b[i] == '"' {
		end, fl := jsonscan.ScanString(b, i)
		var a deadletter.NamedAttribute
		var sp spans
		n := len(dst) - first
		if n < len(cut) {
			sp.name = appendContent(b[i+1:end-1], fl)
		} else {
			a.Name = flaggedString(b[i+1:end-1], fl)
		}
		i = jsonscan.SkipWS(b, jsonscan.SkipWS(b, end)+1) // past ':'
		if b[i] == 'n' {
			i += len("null")
		} else { // '{'
			i = jsonscan.SkipWS(b, i+1)
			for b[i] == '"' {
				f, kend := memberAt(b, i, &kbuf)
				j := jsonscan.SkipWS(b, jsonscan.SkipWS(b, kend)+1) // past ':'
				var k int
				switch {
				case b[j] == 'n':
					k = j + len("null") // the zero value
					if f == mStringValue {
						sp.value, a.StringValue = [2]int{}, ""
					}
				case f == mStringValue:
					var vfl uint8
					k, vfl = jsonscan.ScanString(b, j)
					if n < len(cut) {
						sp.value = appendContent(b[j+1:k-1], vfl)
					} else {
						a.StringValue = flaggedString(b[j+1:k-1], vfl)
					}
				case f == mDataType:
					k = jsonscan.SkipString(b, j)
					a.DataType = dataTypeString(b[j+1 : k-1])
				case f == mBinaryValue:
					k = jsonscan.SkipString(b, j)
					a.BinaryValue, _ = d.base64(b[j+1 : k-1]) // validated
				default: // a list or an unknown member
					k = jsonscan.SkipValue(b, j, 5)
				}
				i = jsonscan.SkipWS(b, k)
				if b[i] == ',' {
					i = jsonscan.SkipWS(b, i+1)
				}
			}
			i++ // '}'
		}
		if n < len(cut) {
			cut[n] = sp
		}
		dst = append(dst, a)
		i = jsonscan.SkipWS(b, i)
		if b[i] == ',' {
			i = jsonscan.SkipWS(b, i+1)
		}
	}
	all := string(sb)
	for n := range min(len(dst)-first, len(cut)) {
		a, sp := &dst[first+n], cut[n]
		a.Name, a.StringValue = all[sp.name[0]:sp.name[1]], all[sp.value[0]:sp.value[1]]
	}
	return dst
}

// memberAt returns the field of the attribute member whose name starts at
// b[i] (-1 for one no field has) and the end of its name, with kbuf the
// scratch for an escaped name.
func memberAt(b []byte, i int, kbuf *[32]byte) (f, kend int) {
	f, kend = mFieldAt(b, i) // a member as SQS spells it
	if f >= 0 {
		return f, kend
	}
	var kfl uint8
	kend, kfl = jsonscan.ScanString(b, i)
	key := b[i+1 : kend-1]
	f = mFieldIndex(key)
	if f < 0 && kfl&jsonscan.StrEscape != 0 {
		// A member name no field matches as written: an escaped one may
		// match once decoded.
		f = mFieldIndex(jsonscan.AppendUnquoted(kbuf[:0], key))
	}
	return f, kend
}

// flaggedString is the raw content of a validated JSON string whose
// jsonscan.ScanString flags are known, decoded into a new string: plain
// ASCII is copied with no second look.
func flaggedString(content []byte, flags uint8) string {
	if flags == 0 {
		return string(content)
	}
	return string(plainOrUnquote(nil, content))
}

// attributes decodes the raw attributes.
func (r *Message) attributes() map[string]string {
	if r.attrs == nil {
		return nil
	}
	var out map[string]string
	_ = json.Unmarshal(r.attrs, &out) // validated by Decode, as messageAttributes
	return out
}

// SQSMessage materializes the record as aws-lambda-go would decode it,
// every string and slice a new copy.
func (r *Message) SQSMessage() events.SQSMessage {
	if r.null {
		return events.SQSMessage{}
	}
	return events.SQSMessage{
		MessageId: r.id, ReceiptHandle: r.receipt, Body: r.BodyString(),
		Md5OfBody: litString(r.md5Body), Md5OfMessageAttributes: litString(r.md5Attrs),
		Attributes: r.attributes(), MessageAttributes: r.MessageAttributes(),
		EventSourceARN: r.arn, EventSource: litString(r.source), AWSRegion: litString(r.region),
	}
}

// SQSEvent returns the event as aws-lambda-go's type, every string and
// slice a new copy (for tests and for code that needs the maps, which the
// processor otherwise never builds).
func (e *Event) SQSEvent() events.SQSEvent {
	var ev events.SQSEvent
	if e == nil || e.Records == nil {
		return ev
	}
	ev.Records = make([]events.SQSMessage, len(e.Records))
	for i := range e.Records {
		ev.Records[i] = e.Records[i].SQSMessage()
	}
	return ev
}

// epochAttribute reads the timestamp system attribute k (sysSentAt,
// sysFirstReceive).
func (r *Message) epochAttribute(k int) time.Time {
	if v, ok := r.sysAttr(k); ok {
		return epochMillis(string(v))
	}
	v, _ := r.Attribute(sysNames[k])
	return epochMillis(v)
}

// TraceHeader is AWSTraceHeader, for the dead letter's send.
func (r *Message) TraceHeader() string {
	if v, ok := r.sysAttr(sysTraceHeader); ok {
		return string(v)
	}
	v, _ := r.Attribute(attrTraceHeader)
	return v
}

// BodyString is the body as received, as a string: bodyStr when the
// message has it (a record's own copy: no second copy for the dead
// letter's MessageBody), else a new string.
func (r *Message) BodyString() string {
	if r.hasBodyStr {
		return r.bodyStr
	}
	return string(r.body)
}

// Check is CheckSQSEvent on the lean records.
func (e *Event) Check() error {
	for i := range e.Records {
		r := &e.Records[i]
		if r.id == "" {
			return fmt.Errorf("%w: record %d has no messageId", ErrNotSQSEvent, i)
		}
		if r.source != nil && string(r.source) != `"aws:sqs"` {
			if s := litString(r.source); s != "" && s != "aws:sqs" {
				return fmt.Errorf("%w: record %d has eventSource %q", ErrNotSQSEvent, i, textutil.Truncate(s, 64))
			}
		}
	}
	return nil
}

// CheckSQSEvent reports whether every record of ev is an SQS message (a
// messageId, and no eventSource but aws:sqs), as Check does for a decoded
// Event: an error wrapping ErrNotSQSEvent names the first that is not.
func CheckSQSEvent(ev events.SQSEvent) error {
	for i := range ev.Records {
		r := &ev.Records[i]
		if r.MessageId == "" {
			return fmt.Errorf("%w: record %d has no messageId", ErrNotSQSEvent, i)
		}
		if r.EventSource != "" && r.EventSource != "aws:sqs" {
			return fmt.Errorf("%w: record %d has eventSource %q", ErrNotSQSEvent, i, textutil.Truncate(r.EventSource, 64))
		}
	}
	return nil
}
