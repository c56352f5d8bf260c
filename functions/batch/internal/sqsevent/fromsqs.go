package sqsevent

import (
	"encoding/base64"

	"github.com/aws/aws-lambda-go/events"

	"github.com/agentdlq/agentdlq/internal/jsonscan"
)

// FromSQSEvent is Handle's way to the processor's one representation of a
// record: each events.SQSMessage becomes a message as Invoke decodes one,
// its strings shared (a Go string never changes), its body copied, and its
// attribute maps written as the JSON Lambda would send, then read by the
// decoder Invoke uses.
func FromSQSEvent(ev events.SQSEvent) ([]Message, error) {
	out := make([]Message, len(ev.Records))
	for i := range ev.Records {
		m, r := &ev.Records[i], &out[i]
		r.id, r.receipt, r.arn, r.group = m.MessageId, m.ReceiptHandle, m.EventSourceARN, m.Attributes[attrGroupID]
		if m.Body != "" {
			r.body = []byte(m.Body)
		}
		r.bodyStr, r.hasBodyStr = m.Body, true // shared: a string never changes
		r.md5Body, r.md5Attrs = literal(m.Md5OfBody), literal(m.Md5OfMessageAttributes)
		r.source, r.region = literal(m.EventSource), literal(m.AWSRegion)
		// One buffer a record for both objects, sized for them unescaped:
		// the second is appended after the first, which keeps its bytes
		// whether or not the buffer grows.
		buf := make([]byte, 0, jsonSize(m))
		if m.Attributes != nil {
			buf = appendAttributes(buf, m.Attributes)
			d := decoder{b: buf}
			if _, err := d.attributes(r, 0, i); err != nil {
				return nil, err
			}
		}
		if m.MessageAttributes != nil {
			start := len(buf)
			buf = appendMessageAttributes(buf, m.MessageAttributes)
			d := decoder{b: buf[start:]}
			if _, err := d.messageAttributes(r, 0, i); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// jsonSize is about the size of m's attribute maps as JSON, when nothing
// in them needs an escape.
func jsonSize(m *events.SQSMessage) int {
	n := 4
	for k, v := range m.Attributes {
		n += len(k) + len(v) + 6
	}
	for k, a := range m.MessageAttributes {
		n += len(k) + len(a.DataType) + base64.StdEncoding.EncodedLen(len(a.BinaryValue)) + 48
		if a.StringValue != nil {
			n += len(*a.StringValue) + 16
		}
		for _, s := range a.StringListValues {
			n += len(s) + 3
		}
		for _, b := range a.BinaryListValues {
			n += base64.StdEncoding.EncodedLen(len(b)) + 3
		}
	}
	return n
}

// literal is s as a JSON string literal, nil when s is empty (what the
// decoder keeps of an absent member).
func literal(s string) []byte {
	if s == "" {
		return nil
	}
	return jsonscan.AppendString(nil, s, jsonscan.ShortBF)
}

// appendAttributes appends the system attributes as a JSON object.
func appendAttributes(dst []byte, attrs map[string]string) []byte {
	dst = append(dst, '{')
	first := true
	for name, v := range attrs {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = jsonscan.AppendString(dst, name, jsonscan.ShortBF)
		dst = append(dst, ':')
		dst = jsonscan.AppendString(dst, v, jsonscan.ShortBF)
	}
	return append(dst, '}')
}

// appendMessageAttributes appends the message attributes as a JSON object,
// as aws-lambda-go's events.SQSMessageAttribute marshals them.
func appendMessageAttributes(dst []byte, attrs map[string]events.SQSMessageAttribute) []byte {
	dst = append(dst, '{')
	first := true
	for name, a := range attrs {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = jsonscan.AppendString(dst, name, jsonscan.ShortBF)
		dst = append(dst, `:{"dataType":`...)
		dst = jsonscan.AppendString(dst, a.DataType, jsonscan.ShortBF)
		if a.StringValue != nil {
			dst = append(dst, `,"stringValue":`...)
			dst = jsonscan.AppendString(dst, *a.StringValue, jsonscan.ShortBF)
		}
		if a.BinaryValue != nil {
			dst = append(dst, `,"binaryValue":"`...)
			dst = base64.StdEncoding.AppendEncode(dst, a.BinaryValue)
			dst = append(dst, '"')
		}
		if a.StringListValues != nil {
			dst = append(dst, `,"stringListValues":[`...)
			for k, s := range a.StringListValues {
				if k > 0 {
					dst = append(dst, ',')
				}
				dst = jsonscan.AppendString(dst, s, jsonscan.ShortBF)
			}
			dst = append(dst, ']')
		}
		if a.BinaryListValues != nil {
			dst = append(dst, `,"binaryListValues":[`...)
			for k, b := range a.BinaryListValues {
				if k > 0 {
					dst = append(dst, ',')
				}
				if b == nil {
					dst = append(dst, "null"...) // as encoding/json writes a nil slice
					continue
				}
				dst = append(dst, '"')
				dst = base64.StdEncoding.AppendEncode(dst, b)
				dst = append(dst, '"')
			}
			dst = append(dst, ']')
		}
		dst = append(dst, '}')
	}
	return append(dst, '}')
}
