package deadletter_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
)

// originals returns n original attributes with every kind of data type.
func originals(n int) map[string]deadletter.Attribute {
	kinds := []deadletter.Attribute{
		{DataType: "String", StringValue: "acme-corp"},
		{DataType: "Number", StringValue: "42"},
		{DataType: "Binary", BinaryValue: []byte{0x00, 0xff, 0x10, 0x80, '"', '\\'}},
		{DataType: "String.trace", StringValue: "Root=1-6749a3c0-5d1e8f2b9c4a7e6d3f0b1a2c"},
		{DataType: "Number.float", StringValue: "-1.5e3"},
		{DataType: "Binary.gzip", BinaryValue: []byte("\x1f\x8b\x08\x00")},
		{DataType: "String", StringValue: "naïve — “quoted” <tag> & \u2028 \x7f"},
	}
	out := make(map[string]deadletter.Attribute, n)
	for i := 0; i < n; i++ {
		out[fmt.Sprintf("attr_%02d", i)] = kinds[i%len(kinds)]
	}
	return out
}

func sampleMeta() deadletter.Meta {
	at := time.Date(2026, 11, 29, 12, 0, 0, 123456789, time.UTC)
	return deadletter.Meta{
		Reason: deadletter.ReasonBudgetExhausted, Attempts: 4,
		FirstFailureAt: at, LastFailureAt: at.Add(5 * time.Minute), DeadLetteredAt: at.Add(5 * time.Minute),
		ErrorCode: "ServiceUnavailable", Error: "upstream returned 503",
		SourceQueueARN: "arn:aws:sqs:us-east-1:123456789012:agent-tasks", MessageID: "m-1", SentAt: at.Add(-time.Minute),
		WorkerVersion: "v0.1.0", TaskID: "task-1", RunID: "run-1", Tenant: "acme", Tool: "web.search", ToolVersion: "2",
		SchemaVersion: 1, IdempotencyKey: "acme:run-1:task-1", TraceID: "1-abc", InputSHA256: strings.Repeat("0f", 32),
		Effect: deadletter.EffectReadOnly,
		History: []deadletter.Attempt{
			{Receive: 1, At: at, Class: deadletter.ClassTransient, ErrorCode: "ServiceUnavailable", Error: "upstream returned 503"},
			{Receive: 4, At: at.Add(5 * time.Minute), Class: deadletter.ClassTransient, ErrorCode: "ServiceUnavailable", Error: "upstream returned 503"},
		},
	}
}

func names(m map[string]deadletter.Attribute) []string {
	out := make([]string, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func TestDeadLetterRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		original map[string]deadletter.Attribute
		kept     int // want: originals kept as attributes
		folded   int // want: originals folded into dlq_meta
	}{
		{"0 attributes", originals(0), 0, 0},
		{"3 attributes", originals(3), 3, 0},
		{"8 attributes", originals(8), 8, 0},
		{"10 attributes", originals(10), 8, 2},
		{"12 attributes", originals(12), 8, 4},
		{"nil attributes", nil, 0, 0},
		{"reserved dlq_ names are folded", map[string]deadletter.Attribute{
			"dlq_reason": {DataType: "String", StringValue: "the producer's own"},
			"dlq_meta":   {DataType: "Binary", BinaryValue: []byte{1, 2, 3}},
			"tenant":     {DataType: "String", StringValue: "acme"},
		}, 1, 2},
		{"reserved names beside 8 others", func() map[string]deadletter.Attribute {
			m := originals(8)
			m["dlq_x"] = deadletter.Attribute{DataType: "String.custom", StringValue: "x"}
			return m
		}(), 8, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before := cmp.Diff(map[string]deadletter.Attribute{}, tt.original)
			out, err := deadletter.EncodeDeadLetter(sampleMeta(), tt.original)
			require.NoError(t, err)
			assert.Equal(t, before, cmp.Diff(map[string]deadletter.Attribute{}, tt.original), "original not modified")
			assert.LessOrEqual(t, len(out), deadletter.MaxAttributes)
			assert.Len(t, out, tt.kept+2)
			assert.Equal(t, deadletter.Attribute{DataType: "String", StringValue: "budget_exhausted"}, out[deadletter.AttrReason])
			for _, n := range names(out) {
				if n != deadletter.AttrReason && n != deadletter.AttrMeta {
					assert.Equal(t, tt.original[n], out[n], "kept %s as it was", n)
					assert.False(t, strings.HasPrefix(n, deadletter.AttrPrefix))
				}
			}
			meta, restored, err := deadletter.DecodeDeadLetter(out)
			require.NoError(t, err)
			assert.Len(t, meta.Folded, tt.folded)
			want := tt.original
			if want == nil {
				want = map[string]deadletter.Attribute{}
			}
			if diff := cmp.Diff(want, restored); diff != "" {
				t.Errorf("restored attributes differ (-want +got):\n%s", diff)
			}
			assert.Equal(t, deadletter.MetaVersion, meta.Version)
			assert.Equal(t, deadletter.ClassTransient, meta.Class, "class from the reason")
			assert.Equal(t, deadletter.NextRetry, meta.NextAction, "next action from the reason")
			want0 := sampleMeta()
			want0.Version, want0.Class, want0.NextAction, want0.Folded = meta.Version, meta.Class, meta.NextAction, meta.Folded
			if diff := cmp.Diff(want0, *meta); diff != "" {
				t.Errorf("meta differs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEncodeDeadLetterKeepsByNameOrder(t *testing.T) {
	t.Parallel()
	out, err := deadletter.EncodeDeadLetter(sampleMeta(), originals(10))
	require.NoError(t, err)
	assert.Equal(t, []string{"attr_00", "attr_01", "attr_02", "attr_03", "attr_04", "attr_05", "attr_06", "attr_07", "dlq_meta", "dlq_reason"}, names(out))
	meta, err := deadletter.ParseMeta([]byte(out[deadletter.AttrMeta].StringValue))
	require.NoError(t, err)
	assert.Equal(t, []string{"attr_08", "attr_09"}, names(meta.Folded))
}

func TestEncodeDeadLetterRedactsAndBounds(t *testing.T) {
	t.Parallel()
	m := sampleMeta()
	m.Reason = deadletter.ReasonUnclassified
	m.Error = "call failed: Authorization: Bearer abcdefghijklmnop123 for bob@example.com; " + strings.Repeat("x ", 300)
	m.History = nil
	for i := 1; i <= 12; i++ {
		m.History = append(m.History, deadletter.Attempt{Receive: i, Class: deadletter.ClassUnknown, Error: fmt.Sprintf("try %d: password=hunter%d", i, i)})
	}
	callerHistory := append([]deadletter.Attempt(nil), m.History...)
	out, err := deadletter.EncodeDeadLetter(m, nil)
	require.NoError(t, err)
	assert.Equal(t, callerHistory, m.History, "the caller's history is not modified")
	raw := out[deadletter.AttrMeta].StringValue
	for _, secret := range []string{"abcdefghijklmnop123", "bob@example.com", "hunter"} {
		assert.NotContains(t, raw, secret)
	}
	got, err := deadletter.ParseMeta([]byte(raw))
	require.NoError(t, err)
	assert.LessOrEqual(t, len([]rune(got.Error)), deadletter.MaxErrorRunes)
	assert.True(t, strings.HasSuffix(got.Error, "…"))
	require.Len(t, got.History, deadletter.MaxHistory, "the last MaxHistory attempts")
	assert.Equal(t, 3, got.History[0].Receive)
	assert.Equal(t, 12, got.History[9].Receive)
	assert.Equal(t, "try 12: password=[REDACTED]", got.History[9].Error)
	assert.Equal(t, deadletter.ClassUnknown, got.Class)
	assert.Equal(t, deadletter.NextFixProducer, got.NextAction)
}

func TestEncodeDeadLetterTooLarge(t *testing.T) {
	t.Parallel()
	big := func(n int) map[string]deadletter.Attribute {
		m := originals(8)
		m["zz_big"] = deadletter.Attribute{DataType: "String", StringValue: strings.Repeat("a", n)}
		return m
	}
	withHistory := sampleMeta()
	for i := 3; i <= deadletter.MaxHistory; i++ {
		withHistory.History = append(withHistory.History, deadletter.Attempt{Receive: i, Class: deadletter.ClassTransient, ErrorCode: "ServiceUnavailable", Error: strings.Repeat("upstream returned 503 ", 6)})
	}
	base, err := deadletter.EncodeDeadLetter(withHistory, big(0))
	require.NoError(t, err)
	noHist := withHistory
	noHist.History = nil
	baseNoHist, err := deadletter.EncodeDeadLetter(noHist, big(0))
	require.NoError(t, err)
	histBytes := len(base[deadletter.AttrMeta].StringValue) - len(baseNoHist[deadletter.AttrMeta].StringValue)
	require.Greater(t, histBytes, 500)

	t.Run("history dropped first", func(t *testing.T) {
		// Fits without the history, not with it.
		n := deadletter.MaxMetaBytes - len(baseNoHist[deadletter.AttrMeta].StringValue) - histBytes/2
		out, err := deadletter.EncodeDeadLetter(withHistory, big(n))
		require.NoError(t, err)
		raw := out[deadletter.AttrMeta].StringValue
		assert.LessOrEqual(t, len(raw), deadletter.MaxMetaBytes)
		meta, restored, err := deadletter.DecodeDeadLetter(out)
		require.NoError(t, err)
		assert.Empty(t, meta.History)
		assert.Equal(t, n, len(restored["zz_big"].StringValue), "the folded attribute survives")
	})
	t.Run("too large even without history", func(t *testing.T) {
		_, err := deadletter.EncodeDeadLetter(withHistory, big(deadletter.MaxMetaBytes))
		require.Error(t, err)
		assert.ErrorIs(t, err, deadletter.ErrMetaTooLarge)
	})
}

func TestEncodeDeadLetterUnknownReason(t *testing.T) {
	t.Parallel()
	m := sampleMeta()
	m.Reason = "flaky"
	_, err := deadletter.EncodeDeadLetter(m, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown reason "flaky"`)
}

func TestDecodeDeadLetterBadMetadata(t *testing.T) {
	t.Parallel()
	good, err := deadletter.EncodeDeadLetter(sampleMeta(), originals(10))
	require.NoError(t, err)
	meta := func(s string) map[string]deadletter.Attribute {
		m := map[string]deadletter.Attribute{"tenant": {DataType: "String", StringValue: "acme"}}
		m[deadletter.AttrReason] = deadletter.Attribute{DataType: "String", StringValue: "schema_invalid"}
		m[deadletter.AttrMeta] = deadletter.Attribute{DataType: "String", StringValue: s}
		return m
	}
	tests := []struct {
		name     string
		attrs    map[string]deadletter.Attribute
		wantErr  error // nil: no error
		wantMeta bool  // a Meta is returned
		restored []string
	}{
		{"no metadata at all", map[string]deadletter.Attribute{"tenant": {DataType: "String", StringValue: "acme"}}, nil, false, []string{"tenant"}},
		{"reason without meta", map[string]deadletter.Attribute{"dlq_reason": {DataType: "String", StringValue: "json_invalid"}, "tenant": {DataType: "String", StringValue: "acme"}}, deadletter.ErrMetaInvalid, false, []string{"tenant"}},
		{"not JSON", meta(`{"v":1,`), deadletter.ErrMetaInvalid, false, []string{"tenant"}},
		{"JSON but not an object", meta(`[1]`), deadletter.ErrMetaInvalid, false, []string{"tenant"}},
		{"no version", meta(`{"reason":"schema_invalid"}`), deadletter.ErrMetaInvalid, false, []string{"tenant"}},
		{"version as a string", meta(`{"v":"1","reason":"schema_invalid"}`), deadletter.ErrMetaInvalid, false, []string{"tenant"}},
		{"unknown version", meta(`{"v":2,"reason":"schema_invalid"}`), deadletter.ErrMetaVersion, false, []string{"tenant"}},
		{"unknown reason", meta(`{"v":1,"reason":"flaky"}`), deadletter.ErrMetaInvalid, false, []string{"tenant"}},
		{"too large", meta(`{"v":1,"reason":"schema_invalid","error":"` + strings.Repeat("x", deadletter.MaxMetaBytes) + `"}`), deadletter.ErrMetaTooLarge, false, []string{"tenant"}},
		{"reason mismatch keeps meta and folded", func() map[string]deadletter.Attribute {
			m := map[string]deadletter.Attribute{}
			for k, v := range good {
				m[k] = v
			}
			m[deadletter.AttrReason] = deadletter.Attribute{DataType: "String", StringValue: "json_invalid"}
			return m
		}(), deadletter.ErrMetaMismatch, true, names(originals(10))},
		{"good", good, nil, true, names(originals(10))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, restored, err := deadletter.DecodeDeadLetter(tt.attrs)
			if tt.wantErr == nil {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
				assert.True(t, errors.Is(err, tt.wantErr), "%v is %v", err, tt.wantErr)
			}
			assert.Equal(t, tt.wantMeta, m != nil)
			assert.Equal(t, tt.restored, names(restored), "dlq_* removed, folded restored")
		})
	}
}

func TestMetaJSONIsCompact(t *testing.T) {
	t.Parallel()
	m := deadletter.Meta{Reason: deadletter.ReasonJSONInvalid, DeadLetteredAt: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	out, err := deadletter.EncodeDeadLetter(m, nil)
	require.NoError(t, err)
	raw := out[deadletter.AttrMeta].StringValue
	assert.Equal(t, `{"v":1,"class":"poison","reason":"json_invalid","next_action":"fix_producer","attempts":0,"dead_lettered_at":"2026-11-29T12:00:00Z"}`, raw)
	assert.True(t, json.Valid([]byte(raw)))
}

func ExampleEncodeDeadLetter() {
	original := map[string]deadletter.Attribute{
		"tenant": {DataType: "String", StringValue: "acme-corp"},
		"trace":  {DataType: "String.trace", StringValue: "Root=1-6749a3c0-5d1e8f2b"},
	}
	meta := deadletter.Meta{
		Reason:         deadletter.ReasonSchemaInvalid,
		Attempts:       1,
		Error:          `schema_invalid: args: must be an object; token=s3cr3t`,
		MessageID:      "0b4c6f9e-2f51-4c1a-9d2e-6a7b8c9d0e1f",
		DeadLetteredAt: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC),
	}
	attrs, err := deadletter.EncodeDeadLetter(meta, original)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(names(attrs))
	fmt.Println(attrs["dlq_reason"].StringValue)
	fmt.Println(attrs["dlq_meta"].StringValue)
	// Output:
	// [dlq_meta dlq_reason tenant trace]
	// schema_invalid
	// {"v":1,"class":"poison","reason":"schema_invalid","next_action":"patch_and_redrive","attempts":1,"error":"schema_invalid: args: must be an object; token=[REDACTED]","message_id":"0b4c6f9e-2f51-4c1a-9d2e-6a7b8c9d0e1f","dead_lettered_at":"2026-11-29T12:00:00Z"}
}

func ExampleDecodeDeadLetter() {
	original := originals(10) // two more than fit beside dlq_reason and dlq_meta
	attrs, _ := deadletter.EncodeDeadLetter(deadletter.Meta{Reason: deadletter.ReasonBudgetExhausted, Attempts: 4}, original)
	fmt.Println(len(attrs), "attributes on the dead letter")

	meta, restored, err := deadletter.DecodeDeadLetter(attrs)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(meta.Reason, meta.Class, meta.NextAction, meta.Reason.Redrivable())
	fmt.Println(len(meta.Folded), "folded;", len(restored), "restored, the same:", cmp.Equal(original, restored))
	// Output:
	// 10 attributes on the dead letter
	// budget_exhausted transient retry yes
	// 2 folded; 10 restored, the same: true
}

// AppendMeta writes the bytes of EncodeDeadLetter's dlq_meta for every
// message whose attributes are all kept, after what dst already holds, and
// leaves the redacted error text in m.
func TestAppendMetaIsEncodeDeadLettersDocument(t *testing.T) {
	t.Parallel()
	secret := "call failed: Authorization: Bearer abcdefghijklmnop123 for bob@example.com"
	big := sampleMeta()
	big.Error = strings.Repeat("é", 400)
	for i := range 12 {
		big.History = append(big.History, deadletter.Attempt{Receive: i, Class: deadletter.ClassTransient, Error: strings.Repeat("y", 2000)})
	}
	cases := map[string]struct {
		m     func() deadletter.Meta
		attrs map[string]deadletter.Attribute
	}{
		"sample, no attributes":          {sampleMeta, nil},
		"sample, eight attributes":       {sampleMeta, originals(8)},
		"secret in the error":            {func() deadletter.Meta { m := sampleMeta(); m.Error = secret; return m }, originals(3)},
		"history dropped, over 16 KiB":   {func() deadletter.Meta { return big }, originals(1)},
		"no class, no next action, bare": {func() deadletter.Meta { return deadletter.Meta{Reason: deadletter.ReasonSchemaInvalid} }, nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			require.True(t, deadletter.KeepsAll(tc.attrs))
			want, err := deadletter.EncodeDeadLetter(tc.m(), tc.attrs)
			require.NoError(t, err)
			m := tc.m()
			callerHistory := append([]deadletter.Attempt(nil), m.History...)
			dst := []byte("prefix")
			got, err := deadletter.AppendMeta(dst, &m)
			require.NoError(t, err)
			assert.Equal(t, "prefix", string(got[:6]))
			assert.Equal(t, want[deadletter.AttrMeta].StringValue, string(got[6:]))
			assert.Equal(t, deadletter.Redact(tc.m().Error, deadletter.MaxErrorRunes), m.Error)
			assert.NotContains(t, string(got), "abcdefghijklmnop123")
			if len(callerHistory) > 0 && len(callerHistory) <= deadletter.MaxHistory {
				assert.Equal(t, callerHistory, tc.m().History)
			}
		})
	}
	t.Run("not kept", func(t *testing.T) {
		t.Parallel()
		assert.False(t, deadletter.KeepsAll(originals(9)))
		assert.False(t, deadletter.KeepsAll(map[string]int{"dlq_x": 1}))
	})
	t.Run("unknown reason", func(t *testing.T) {
		t.Parallel()
		m := deadletter.Meta{Reason: "nope"}
		got, err := deadletter.AppendMeta([]byte("x"), &m)
		require.Error(t, err)
		assert.Equal(t, "x", string(got))
	})
}
