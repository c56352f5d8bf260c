package deadletter

import (
	"encoding/base64"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/agentdlq/agentdlq/internal/jsonscan"
)

// appendMeta appends the dlq_meta JSON of m to dst: the bytes that
// encoding/json writes for m with HTML escaping off (a test holds the two
// together; the one difference is that U+FFFE and U+FFFF are escaped, see
// metaEscapes), without reflection, since every dead letter pays for it.
// The decoder stays encoding/json (ParseMeta).
func appendMeta(dst []byte, m *Meta) ([]byte, error) {
	var err error
	var tc timeCache
	dst = append(dst, `{"v":`...)
	dst = strconv.AppendInt(dst, int64(m.Version), 10)
	dst = appendField(dst, "class", string(m.Class))
	dst = appendField(dst, "reason", string(m.Reason))
	dst = appendField(dst, "next_action", string(m.NextAction))
	dst = append(dst, `,"attempts":`...)
	dst = strconv.AppendInt(dst, int64(m.Attempts), 10)
	if dst, err = tc.appendTimeField(dst, "first_failure_at", m.FirstFailureAt, true); err != nil {
		return nil, err
	}
	if dst, err = tc.appendTimeField(dst, "last_failure_at", m.LastFailureAt, true); err != nil {
		return nil, err
	}
	dst = appendFieldOmit(dst, "error_code", m.ErrorCode)
	dst = appendFieldOmit(dst, "error", m.Error)
	if len(m.History) > 0 {
		dst = append(dst, `,"history":[`...)
		for i := range m.History {
			a := &m.History[i]
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"n":`...)
			dst = strconv.AppendInt(dst, int64(a.Receive), 10)
			if dst, err = tc.appendTimeField(dst, "at", a.At, false); err != nil {
				return nil, err
			}
			dst = appendField(dst, "class", string(a.Class))
			dst = appendFieldOmit(dst, "code", a.ErrorCode)
			dst = appendFieldOmit(dst, "error", a.Error)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	dst = appendFieldOmit(dst, "source_queue_arn", m.SourceQueueARN)
	dst = appendFieldOmit(dst, "message_id", m.MessageID)
	if dst, err = tc.appendTimeField(dst, "sent_at", m.SentAt, true); err != nil {
		return nil, err
	}
	if dst, err = tc.appendTimeField(dst, "dead_lettered_at", m.DeadLetteredAt, false); err != nil {
		return nil, err
	}
	dst = appendFieldOmit(dst, "worker_version", m.WorkerVersion)
	dst = appendFieldOmit(dst, "message_group_id", m.MessageGroupID)
	dst = appendFieldOmit(dst, "task_id", m.TaskID)
	dst = appendFieldOmit(dst, "run_id", m.RunID)
	dst = appendFieldOmit(dst, "tenant", m.Tenant)
	dst = appendFieldOmit(dst, "tool", m.Tool)
	dst = appendFieldOmit(dst, "tool_version", m.ToolVersion)
	if m.SchemaVersion != 0 {
		dst = append(dst, `,"schema_version":`...)
		dst = strconv.AppendInt(dst, int64(m.SchemaVersion), 10)
	}
	dst = appendFieldOmit(dst, "idempotency_key", m.IdempotencyKey)
	dst = appendFieldOmit(dst, "trace_id", m.TraceID)
	dst = appendFieldOmit(dst, "input_sha256", m.InputSHA256)
	dst = appendFieldOmit(dst, "effect", string(m.Effect))
	if m.RedriveCount != 0 {
		dst = append(dst, `,"redrive_count":`...)
		dst = strconv.AppendInt(dst, int64(m.RedriveCount), 10)
	}
	dst = appendFolded(dst, m.Folded)
	if len(m.Reduced) > 0 {
		dst = append(dst, `,"reduced":[`...)
		for i, r := range m.Reduced {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsonscan.AppendString(dst, string(r), metaEscapes)
		}
		dst = append(dst, ']')
	}
	dst = appendFieldOmit(dst, "evidence", m.Evidence)
	return append(dst, '}'), nil
}

// appendFolded appends the "folded" field: the folded attributes by name,
// in name order (nothing when there are none).
func appendFolded(dst []byte, folded map[string]Attribute) []byte {
	if len(folded) == 0 {
		return dst
	}
	names := make([]string, 0, len(folded))
	for name := range folded {
		names = append(names, name)
	}
	slices.Sort(names)
	dst = append(dst, `,"folded":{`...)
	for i, name := range names {
		a := folded[name]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonscan.AppendString(dst, name, metaEscapes)
		dst = append(dst, `:{"type":`...)
		dst = jsonscan.AppendString(dst, a.DataType, metaEscapes)
		dst = appendFieldOmit(dst, "s", a.StringValue)
		if len(a.BinaryValue) > 0 {
			dst = append(dst, `,"b":"`...)
			dst = base64.StdEncoding.AppendEncode(dst, a.BinaryValue)
			dst = append(dst, '"')
		}
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

func appendField(dst []byte, name, v string) []byte {
	dst = append(dst, ',', '"')
	dst = append(dst, name...)
	dst = append(dst, '"', ':')
	return jsonscan.AppendString(dst, v, metaEscapes)
}

// metaEscapes writes strings as encoding/json does with HTML escaping off
// (\b and \f short, U+2028/U+2029 escaped, U+FFFD for invalid UTF-8), and
// also escapes U+FFFE and U+FFFF, the only characters a valid Go string can
// hold that SQS refuses in a String attribute (it allows #x9, #xA, #xD, #x20
// to #xD7FF, #xE000 to #xFFFD and #x10000 to #x10FFFF): a task field
// decoded from "\uffff" must not make its own dead letter unsendable.
const metaEscapes = jsonscan.ShortBF | jsonscan.Nonchars

func appendFieldOmit(dst []byte, name, v string) []byte {
	if v == "" {
		return dst
	}
	return appendField(dst, name, v)
}

var errMetaTime = errors.New("a time in dlq_meta is outside years 0-9999")

// timeCache remembers where the last two times written in a document
// stand: a dead letter's failure, history and dead-letter times are mostly
// one clock reading (sent_at comes between them), formatted once.
type timeCache struct {
	t          [2]time.Time
	start, end [2]int // their text in dst, quotes excluded; end 0: none yet
	next       int    // the entry the next new time replaces
}

// appendTimeField writes t as time.Time's MarshalJSON does (RFC 3339 with
// nanoseconds), or nothing when omitZero and t is zero.
func (tc *timeCache) appendTimeField(dst []byte, name string, t time.Time, omitZero bool) ([]byte, error) {
	if omitZero && t.IsZero() {
		return dst, nil
	}
	if y := t.Year(); y < 0 || y > 9999 {
		return nil, errMetaTime
	}
	dst = append(dst, ',', '"')
	dst = append(dst, name...)
	dst = append(dst, '"', ':', '"')
	switch {
	// The same instant, location and clock reading: the same text.
	case tc.end[0] > 0 && t == tc.t[0]: //nolint:staticcheck // QF1009: ==, not Equal: the same location and clock reading too
		dst = append(dst, dst[tc.start[0]:tc.end[0]]...)
	case tc.end[1] > 0 && t == tc.t[1]: //nolint:staticcheck // QF1009: as above
		dst = append(dst, dst[tc.start[1]:tc.end[1]]...)
	default:
		start, k := len(dst), tc.next
		dst = t.AppendFormat(dst, time.RFC3339Nano)
		tc.t[k], tc.start[k], tc.end[k], tc.next = t, start, len(dst), 1-k
	}
	return append(dst, '"'), nil
}
