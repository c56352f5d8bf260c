package deadletter_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
)

func TestFitDeadLetter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	meta := func() deadletter.Meta {
		return deadletter.Meta{
			Reason: deadletter.ReasonSchemaInvalid, Attempts: 1, Error: "args must be an object; password=hunter2",
			History:   []deadletter.Attempt{{Receive: 1, At: now, Class: deadletter.ClassPoison, Error: strings.Repeat("e", 100)}},
			MessageID: "m-1", DeadLetteredAt: now, SentAt: now, TaskID: "t-1", IdempotencyKey: "k-1", InputSHA256: strings.Repeat("a", 64),
		}
	}
	attrs := func(n, size int) map[string]deadletter.Attribute {
		out := map[string]deadletter.Attribute{}
		for i := range n {
			out[fmt.Sprintf("a%02d", i)] = deadletter.Attribute{DataType: "String", StringValue: strings.Repeat("v", size)}
		}
		return out
	}
	const ref = "s3://evals/agent-tasks/evidence/2026-11-29/m-1.json"
	const max = 256 * 1024
	tests := []struct {
		name     string
		mutate   func(*deadletter.Meta)
		original map[string]deadletter.Attribute
		body     int
		// wantReduced is what was given up; wantEvidence whether a claim
		// check is returned; wantKept the original attributes left on the message.
		wantReduced  []deadletter.Reduction
		wantEvidence bool
		wantKept     int
		wantErr      error
	}{
		{name: "fits as it is", original: attrs(3, 10), body: 1000, wantKept: 3},
		{name: "folded attributes too large for dlq_meta (the 18607-byte case)", original: attrs(10, 9000), body: 1000,
			wantReduced: []deadletter.Reduction{deadletter.ReducedHistory, deadletter.ReducedFolded}, wantEvidence: true, wantKept: 8},
		{name: "history too large for the room the body leaves", mutate: func(m *deadletter.Meta) {
			m.History = make([]deadletter.Attempt, 10)
			for i := range m.History {
				m.History[i] = deadletter.Attempt{Receive: i + 1, At: now, Class: deadletter.ClassTransient, Error: strings.Repeat("x", 128)}
			}
		}, original: attrs(2, 10), body: max - 1500, wantReduced: []deadletter.Reduction{deadletter.ReducedHistory}, wantKept: 2},
		{name: "the kept attributes do not fit beside the body", original: attrs(8, 2000), body: max - 4000,
			wantReduced: []deadletter.Reduction{deadletter.ReducedHistory, deadletter.ReducedFolded, deadletter.ReducedAttributes}, wantEvidence: true},
		{name: "only the identity fields fit", mutate: func(m *deadletter.Meta) { m.SourceQueueARN = strings.Repeat("q", 1500) },
			original: attrs(1, 10), body: max - 900,
			wantReduced: []deadletter.Reduction{deadletter.ReducedHistory, deadletter.ReducedFolded, deadletter.ReducedAttributes, deadletter.ReducedMeta}, wantEvidence: true},
		{name: "a time JSON cannot hold", mutate: func(m *deadletter.Meta) { m.SentAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) },
			original: attrs(1, 10), body: 100, wantReduced: []deadletter.Reduction{deadletter.ReducedTimes, deadletter.ReducedHistory}, wantKept: 1},
		{name: "the body alone leaves no room", original: attrs(1, 10), body: max - 100, wantErr: deadletter.ErrBodyTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := meta()
			if tt.mutate != nil {
				tt.mutate(&m)
			}
			out, ev, err := deadletter.FitDeadLetter(m, tt.original, tt.body, max, ref)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.LessOrEqual(t, deadletter.MessageSize(tt.body, out), max, "the dead letter fits")
			assert.LessOrEqual(t, len(out), deadletter.MaxAttributes)
			back, originals, err := deadletter.DecodeDeadLetter(out)
			require.NoError(t, err)
			assert.Equal(t, tt.wantReduced, back.Reduced)
			assert.Len(t, originals, tt.wantKept)
			assert.Equal(t, m.Reason, back.Reason)
			assert.Equal(t, "m-1", back.MessageID)
			assert.Equal(t, "k-1", back.IdempotencyKey, "identity survives every reduction")
			assert.NotContains(t, out[deadletter.AttrMeta].StringValue, "hunter2")
			if !tt.wantEvidence {
				assert.Nil(t, ev)
				assert.Empty(t, back.Evidence)
				return
			}
			require.NotNil(t, ev)
			assert.Equal(t, ref, back.Evidence, "dlq_meta points to the claim check")
			assert.Equal(t, tt.original, ev.Attributes, "the claim check holds every original attribute")
			assert.Equal(t, m.History[0].Receive, ev.Meta.History[0].Receive, "and the whole metadata")
			data, err := deadletter.MarshalEvidence(ev)
			require.NoError(t, err)
			assert.NotContains(t, string(data), "hunter2", "redacted as dlq_meta is")
		})
	}
}

// TestFitDeadLetterWithinReserve: whatever the metadata and the original
// attributes hold, the dead letter of a body that leaves Reserve bytes under
// the limit fits, at the 1 MiB and the 256 KiB limits: fields at and past
// their bounds, every byte one that JSON escapes as six, a long claim
// check address, the largest attributes.
func TestFitDeadLetterWithinReserve(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	escaped := func(n int) string { return strings.Repeat("\x01", n) } // \u0001 in JSON
	worst := deadletter.Meta{
		Reason: deadletter.ReasonToolVersionUnsupported, Attempts: 1000, Error: escaped(5000), ErrorCode: escaped(5000),
		History:   []deadletter.Attempt{{Receive: 1, At: now, Class: deadletter.ClassPoison, Error: escaped(5000)}},
		MessageID: escaped(5000), DeadLetteredAt: now, SentAt: now, FirstFailureAt: now, LastFailureAt: now,
		SourceQueueARN: escaped(5000), WorkerVersion: escaped(5000), MessageGroupID: escaped(5000),
		TaskID: escaped(5000), RunID: escaped(5000), Tenant: escaped(5000), Tool: escaped(5000), ToolVersion: escaped(5000),
		IdempotencyKey: escaped(5000), TraceID: escaped(5000), InputSHA256: escaped(5000), Effect: deadletter.EffectState(escaped(5000)),
	}
	original := map[string]deadletter.Attribute{}
	for i := range 10 {
		original[fmt.Sprintf("a%02d", i)] = deadletter.Attribute{DataType: "String", StringValue: strings.Repeat("v", 100000)}
	}
	for _, limit := range []int{1 << 20, 256 << 10} {
		for _, ref := range []string{"", "s3://" + escaped(deadletter.Reserve)} {
			body := limit - deadletter.Reserve
			attrs, _, err := deadletter.FitDeadLetter(worst, original, body, limit, ref)
			require.NoError(t, err, "limit %d, ref of %d bytes", limit, len(ref))
			assert.LessOrEqual(t, deadletter.MessageSize(body, attrs), limit)
			meta, _, err := deadletter.DecodeDeadLetter(attrs)
			require.NoError(t, err)
			assert.Equal(t, deadletter.ReasonToolVersionUnsupported, meta.Reason)
			assert.Contains(t, meta.Reduced, deadletter.ReducedMeta)
		}
	}
}
