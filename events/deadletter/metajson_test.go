package deadletter

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stdMeta is what encoding/json writes for m with HTML escaping off: the
// reference appendMeta must match byte for byte, once U+FFFE and U+FFFF are
// escaped as appendString does.
func stdMeta(t testing.TB, m *Meta) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(m))
	out := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	out = bytes.ReplaceAll(out, []byte("\uFFFE"), []byte(`\ufffe`))
	return bytes.ReplaceAll(out, []byte("\uFFFF"), []byte(`\uffff`))
}

// sqsAllowed reports whether SQS accepts every character of s in a String
// message attribute.
func sqsAllowed(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !(r == 0x9 || r == 0xA || r == 0xD || (r >= 0x20 && r <= 0xD7FF) || (r >= 0xE000 && r <= 0xFFFD) || (r >= 0x10000 && r <= 0x10FFFF)) {
			return false
		}
	}
	return true
}

var trickyStrings = []string{
	"", "plain", `quote " and \ backslash`, "ctl \x00\x01\x1f\x7f \b\f\n\r\t", "<html> & </html>",
	"naïve — “quoted” 日本語 😀", "bad \xff\xfe utf-8 \xc3", "sep \u2028 \u2029 end", "\ufffd", "nonchars \ufffe \uffff \U0010FFFF",
}

func metaWith(s string) *Meta {
	at := time.Date(2026, 11, 29, 12, 0, 0, 123456789, time.FixedZone("X", 3600))
	return &Meta{
		Version: 1, Class: ClassTransient, Reason: ReasonBudgetExhausted, NextAction: NextRetry, Attempts: -3,
		FirstFailureAt: at, LastFailureAt: at.Add(time.Second), ErrorCode: s, Error: s,
		History:        []Attempt{{Receive: 1, At: at, Class: ClassTransient, ErrorCode: s, Error: s}, {Receive: 2, Class: ClassUnknown}},
		SourceQueueARN: s, MessageID: s, SentAt: at.Add(-time.Hour), DeadLetteredAt: at, WorkerVersion: s, MessageGroupID: s,
		TaskID: s, RunID: s, Tenant: s, Tool: s, ToolVersion: s, SchemaVersion: 1, IdempotencyKey: s, TraceID: s, InputSHA256: s,
		Effect: EffectState(s), RedriveCount: 7,
		Folded: map[string]Attribute{
			s + "b":   {DataType: "Binary", BinaryValue: []byte(s + "\x00\xff")},
			s + "a":   {DataType: "String." + s, StringValue: s},
			"empty":   {DataType: "String"},
			"z_empty": {DataType: "Binary", BinaryValue: []byte{}},
		},
		Reduced:  []Reduction{ReducedHistory, Reduction(s)},
		Evidence: s,
	}
}

func TestAppendMetaMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	metas := []*Meta{{}, {Version: 1, Reason: ReasonJSONInvalid}}
	for _, s := range trickyStrings {
		metas = append(metas, metaWith(s))
	}
	// The worker's times: first receive, then now (the last failure, the
	// attempt, the dead letter), the send time between them.
	first, now, sent := time.Date(2026, 11, 29, 12, 0, 1, 5e8, time.UTC), time.Date(2026, 11, 29, 12, 3, 0, 0, time.UTC), time.Date(2026, 11, 29, 11, 59, 0, 123e6, time.UTC)
	for _, times := range [][5]time.Time{{first, now, now, sent, now}, {now, now, now, sent, now}, {now, first, sent, now, first}} {
		m := metaWith("x")
		m.FirstFailureAt, m.LastFailureAt, m.History[0].At, m.SentAt, m.DeadLetteredAt = times[0], times[1], times[2], times[3], times[4]
		metas = append(metas, m)
	}
	for i, m := range metas {
		got, err := appendMeta(nil, m)
		require.NoError(t, err)
		assert.Equal(t, string(stdMeta(t, m)), string(got), "meta %d", i)
		assert.True(t, sqsAllowed(string(got)), "meta %d: SQS accepts every character", i)
		var back Meta
		require.NoError(t, json.Unmarshal(got, &back), "meta %d", i)
	}
}

func TestAppendMetaRefusesOutOfRangeTimes(t *testing.T) {
	t.Parallel()
	m := &Meta{Reason: ReasonJSONInvalid, DeadLetteredAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}
	_, err := appendMeta(nil, m)
	assert.Error(t, err)
	_, err = json.Marshal(m)
	assert.Error(t, err, "encoding/json refuses it too")
}

func FuzzAppendMeta(f *testing.F) {
	for _, s := range trickyStrings {
		f.Add(s, []byte(s), int64(0))
	}
	f.Add(strings.Repeat("x", 300), []byte{0}, int64(-1))
	f.Fuzz(func(t *testing.T, s string, b []byte, nanos int64) {
		m := metaWith(s)
		m.Folded["fz"] = Attribute{DataType: s, BinaryValue: b}
		m.DeadLetteredAt = time.Unix(0, nanos).UTC()
		got, err := appendMeta(nil, m)
		require.NoError(t, err)
		if want := stdMeta(t, m); !bytes.Equal(want, got) {
			t.Fatalf("appendMeta\n%s\nencoding/json\n%s", got, want)
		}
		if !sqsAllowed(string(got)) {
			t.Fatalf("SQS refuses a character of %q", got)
		}
	})
}

// TestEncodeDeadLetterSQSSafe: whatever a task held, its dead letter's
// dlq_meta is a String attribute SQS accepts.
func TestEncodeDeadLetterSQSSafe(t *testing.T) {
	t.Parallel()
	// What the agent-task decoder makes of `"task_id":"\uffff\ufffe\u0000\u001f","run_id":"r\ud800","tenant":"t\u2028"`.
	task := struct{ TaskID, RunID, Tenant string }{"\uffff\ufffe\x00\x1f", "r\ufffd", "t\u2028"}
	m := Meta{Reason: ReasonUnclassified, TaskID: task.TaskID, RunID: task.RunID, Tenant: task.Tenant, Error: "boom \uffff \x01 \xff"}
	out, err := EncodeDeadLetter(m, map[string]Attribute{"dlq_x": {DataType: "String", StringValue: "\ufffe"}})
	require.NoError(t, err)
	raw := out[AttrMeta].StringValue
	assert.True(t, sqsAllowed(raw), "%q", raw)
	back, err := ParseMeta([]byte(raw))
	require.NoError(t, err)
	assert.Equal(t, task.TaskID, back.TaskID, "escaped, not lost")
	assert.Equal(t, "\ufffe", back.Folded["dlq_x"].StringValue)
}
