package pipeline

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
)

// TestReserveFitsTheWorstDeadLetter holds deadletter.Reserve to
// deadletter.FitDeadLetter: the dead letter of any message the hot queue
// accepts (body and attributes at most max_message_bytes) fits the DLQ
// (DLQMaxMessageBytes), whatever the producer put into the identity fields,
// and without the reserve the largest bodies would not.
func TestReserveFitsTheWorstDeadLetter(t *testing.T) {
	t.Parallel()
	const uuid = "0f8fad5b-d9cb-469f-a165-70867728950e"
	long := func(s string) string { return strings.Repeat(s, 300) } // cut to 256 bytes by FitDeadLetter
	// meta is the worst metadata of a message: every identity field at its
	// longest, each of its bytes escaped to six in JSON.
	meta := func(id, fill string) deadletter.Meta {
		at := time.Date(2026, 12, 31, 23, 59, 59, 999_999_999, time.FixedZone("", -(23*3600+59*60)))
		hist := make([]deadletter.Attempt, deadletter.MaxHistory)
		for i := range hist {
			hist[i] = deadletter.Attempt{Receive: i + 1, At: at, Class: deadletter.ClassTransient, ErrorCode: long("E"), Error: long(fill)}
		}
		return deadletter.Meta{
			Reason: deadletter.ReasonToolVersionUnsupported, Attempts: -1 << 63, MessageID: id,
			FirstFailureAt: at, LastFailureAt: at, SentAt: at, DeadLetteredAt: at,
			ErrorCode: long("E"), Error: long(fill), History: hist, SourceQueueARN: long(fill), WorkerVersion: long(fill),
			MessageGroupID: long(fill), TaskID: long(fill), RunID: long(fill), Tenant: long(fill), Tool: long(fill),
			ToolVersion: long(fill), SchemaVersion: -1 << 63, IdempotencyKey: long(fill), TraceID: long(fill),
			InputSHA256: strings.Repeat("f", 64), Effect: deadletter.EffectReadOnly, RedriveCount: -1 << 63,
		}
	}
	// attrs are n attributes of the hot queue's message, together size bytes
	// as SQS counts them (with dlq_ names, which are always folded).
	attrs := func(n, size int) map[string]deadletter.Attribute {
		out := map[string]deadletter.Attribute{}
		for i := range n {
			name := string(rune('a'+i)) + "-attr"
			if i%3 == 0 {
				name = "dlq_" + name
			}
			a := deadletter.Attribute{DataType: "String"}
			a.StringValue = strings.Repeat("v", size/n-deadletter.AttributeSize(name, &a))
			out[name] = a
		}
		return out
	}
	// ref is the claim check's reference as the processor builds it.
	ref := func(id string) string {
		return "s3://" + strings.Repeat("b", 63) + "/" + strings.Repeat("p", 40) + "/evidence/2026-12-31/" + id + ".json"
	}
	tests := []struct {
		name     string
		hotMax   int
		meta     deadletter.Meta
		attrs    map[string]deadletter.Attribute
		ref      string
		needsAll bool // the body alone is the hot queue's maximum: no reserve, no dead letter
	}{
		{name: "control characters", hotMax: DefaultMaxMessageBytes, meta: meta(uuid, "\x01"), ref: ref(uuid), needsAll: true},
		{name: "invalid UTF-8", hotMax: DefaultMaxMessageBytes, meta: meta(uuid, "\xff"), ref: ref(uuid), needsAll: true},
		{name: "HTML characters", hotMax: DefaultMaxMessageBytes, meta: meta(uuid, "<"), ref: ref(uuid), needsAll: true},
		{name: "four-byte runes", hotMax: DefaultMaxMessageBytes, meta: meta(uuid, "😀"), ref: ref(uuid), needsAll: true},
		{name: "no claim check", hotMax: DefaultMaxMessageBytes, meta: meta(uuid, "\x01"), needsAll: true},
		{name: "a 128-byte message id of control characters", hotMax: DefaultMaxMessageBytes,
			meta: meta(strings.Repeat("\x01", 128), "\x01"), ref: ref(strings.Repeat("\x01", 128)), needsAll: true},
		{name: "ten attributes", hotMax: DefaultMaxMessageBytes, meta: meta(uuid, "\x01"), attrs: attrs(10, 100_000), ref: ref(uuid)},
		{name: "attributes of 16 KiB", hotMax: DefaultMaxMessageBytes, meta: meta(uuid, "\x01"), attrs: attrs(10, 16*1024), ref: ref(uuid)},
		{name: "SQS's least hot queue", hotMax: SQSMinMessageBytes, meta: meta(uuid, "\x01"), ref: ref(uuid), needsAll: true},
		{name: "a small hot queue with attributes", hotMax: 64 * 1024, meta: meta(uuid, "\x01"), attrs: attrs(9, 4000), ref: ref(uuid)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := valid()
			p.MaxMessageBytes = tt.hotMax
			p.ApplyDefaults()
			require.NoError(t, p.Validate())
			body := tt.hotMax - deadletter.MessageSize(0, tt.attrs) // the largest the hot queue accepts
			require.Positive(t, body)

			got, _, err := deadletter.FitDeadLetter(tt.meta, tt.attrs, body, p.DLQMaxMessageBytes(), tt.ref)
			require.NoError(t, err)
			size := deadletter.MessageSize(body, got)
			assert.LessOrEqual(t, size, p.DLQMaxMessageBytes())
			t.Logf("dead letter %d bytes: body %d + dead-letter attributes %d of the %d reserved", size, body, size-body, deadletter.Reserve)

			if tt.needsAll {
				_, _, err = deadletter.FitDeadLetter(tt.meta, tt.attrs, body, tt.hotMax, tt.ref)
				assert.ErrorIs(t, err, deadletter.ErrBodyTooLarge, "without the reserve the dead letter of a body at the maximum cannot be sent")
			}
		})
	}
}
