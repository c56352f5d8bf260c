package triage

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/triage/dlq"
	"github.com/agentdlq/agentdlq/triage/report"
)

func TestTag(t *testing.T) {
	t.Parallel()
	sent := t0.Add(-2 * time.Hour)
	body := task("t1", "acme", "web.search", "2", `{"q":"x"}`)
	withMeta := deadLetter(t, "m1", body, poisonMeta(deadletter.ReasonToolVersionUnsupported, "web.search", "9", "acme", "key-t1", "tool web.search has no version 9"), sent)
	str := func(s string) deadletter.Attribute { return deadletter.Attribute{DataType: "String", StringValue: s} }
	raw := func(attrs map[string]deadletter.Attribute) dlq.Message {
		return dlq.Message{MessageID: "m", Body: body, Attributes: attrs, SentTimestamp: sent}
	}
	tests := []struct {
		name string
		msg  dlq.Message
		// want
		reason    deadletter.Reason
		inferred  bool
		metaErr   error // errors.Is target, nil for none
		tool      string
		version   string
		signature string
		bodyErr   bool
	}{
		{name: "worker metadata", msg: withMeta, reason: deadletter.ReasonToolVersionUnsupported,
			tool: "web.search", version: "9", signature: "tool web.search has no version <n>"},
		{name: "no metadata: broker move, tool read from the body", msg: brokerMoved("m2", body, sent),
			reason: deadletter.ReasonReceiveLimit, inferred: true, tool: "web.search", version: "2"},
		{name: "no metadata, body not JSON", msg: brokerMoved("m3", "not json {", sent),
			reason: deadletter.ReasonReceiveLimit, inferred: true},
		{name: "metadata not JSON", msg: raw(map[string]deadletter.Attribute{deadletter.AttrReason: str("json_invalid"), deadletter.AttrMeta: str("{not json")}),
			reason: deadletter.ReasonJSONInvalid, inferred: false, metaErr: deadletter.ErrMetaInvalid, tool: "web.search", version: "2",
			signature: "dlq_meta unreadable: not valid metadata"},
		{name: "metadata of an unknown version", msg: raw(map[string]deadletter.Attribute{deadletter.AttrReason: str("json_invalid"), deadletter.AttrMeta: str(`{"v":7,"reason":"json_invalid"}`)}),
			reason: deadletter.ReasonJSONInvalid, inferred: false, metaErr: deadletter.ErrMetaVersion, tool: "web.search", version: "2",
			signature: "dlq_meta unreadable: unknown version"},
		{name: "oversized metadata", msg: raw(map[string]deadletter.Attribute{deadletter.AttrMeta: str(`{"v":1,"error":"` + strings.Repeat("x", deadletter.MaxMetaBytes) + `"}`)}),
			reason: deadletter.ReasonUnclassified, inferred: true, metaErr: deadletter.ErrMetaTooLarge, tool: "web.search",
			version: "2", signature: "dlq_meta unreadable: oversized"},
		{name: "dlq_reason without dlq_meta: the attribute's reason, reported unreadable", msg: raw(map[string]deadletter.Attribute{deadletter.AttrReason: str("json_invalid")}),
			reason: deadletter.ReasonJSONInvalid, inferred: false, metaErr: deadletter.ErrMetaInvalid, tool: "web.search", version: "2",
			signature: "dlq_meta unreadable: not valid metadata"},
		{name: "dlq_reason disagrees with dlq_meta: metadata kept for its tool", msg: func() dlq.Message {
			m := withMeta
			m.Attributes = map[string]deadletter.Attribute{deadletter.AttrReason: str("json_invalid"), deadletter.AttrMeta: withMeta.Attributes[deadletter.AttrMeta]}
			return m
		}(), reason: deadletter.ReasonJSONInvalid, inferred: false, metaErr: deadletter.ErrMetaMismatch, tool: "web.search", version: "9",
			signature: "dlq_meta unreadable: dlq_reason and dlq_meta disagree"},
		{name: "body not UTF-8: tagged from attributes", msg: brokerMoved("m4", "{\"tool\":\"a\xff\"}", sent),
			reason: deadletter.ReasonReceiveLimit, inferred: true, bodyErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Tag(tt.msg)
			assert.Equal(t, tt.reason, got.Reason)
			assert.Equal(t, tt.inferred, got.Inferred)
			if tt.metaErr == nil {
				assert.NoError(t, got.MetaErr)
			} else {
				assert.ErrorIs(t, got.MetaErr, tt.metaErr)
			}
			assert.Equal(t, tt.tool, got.Hints.Tool)
			assert.Equal(t, tt.version, got.Hints.ToolVersion)
			assert.Equal(t, tt.signature, got.Signature)
			assert.Equal(t, tt.bodyErr, errors.Is(got.BodyErr, errBodyNotUTF8))
			assert.Len(t, got.Fingerprint, 16)
			assert.Equal(t, tt.msg.Body, got.Body, "the body is never changed")
		})
	}
}

func TestTagHintsFromMetaWin(t *testing.T) {
	t.Parallel()
	// The metadata names the tool; the body (here a different tool) is not read.
	m := deadLetter(t, "m1", task("t1", "acme", "http.fetch", "1", `{}`),
		poisonMeta(deadletter.ReasonSchemaInvalid, "web.search", "1", "globex", "key-x", "args: required"), t0)
	got := Tag(m)
	require.NotNil(t, got.Meta)
	assert.Equal(t, dlq.Hints{Tool: "web.search", ToolVersion: "1", SchemaVersion: 1, Tenant: "globex", IdempotencyKey: "key-x"}, got.Hints)
	assert.Equal(t, t0, got.DeadLetteredAt)
}

func TestBodyHintsIgnoresWrongTypes(t *testing.T) {
	t.Parallel()
	got := bodyHints(`{"tool":7,"tool_version":"1","schema_version":"one","tenant":["a"],"idempotency_key":"k"}`, dlq.Hints{})
	assert.Equal(t, dlq.Hints{ToolVersion: "1", IdempotencyKey: "k"}, got)
	got = bodyHints(`{"schema_version":2.5}`, dlq.Hints{})
	assert.Equal(t, 0, got.SchemaVersion)
}

// TestTagStaleMeta: a dead letter redriven with its attributes (a native move
// task keeps them) that the broker moved back carries the earlier dlq_meta.
// Its reason stays the metadata's; it is flagged, and its retention clock is
// the broker move's.
func TestTagStaleMeta(t *testing.T) {
	t.Parallel()
	meta := poisonMeta(deadletter.ReasonBudgetExhausted, "http.fetch", "1", "acme", "key-1", "HTTP 503")
	meta.DeadLetteredAt = t0.Add(-48 * time.Hour)
	moved := deadLetter(t, "m1", "{}", meta, t0.Add(-2*time.Hour)) // re-enqueued 46 h after the dead-lettering
	got := Tag(moved)
	assert.Equal(t, deadletter.ReasonBudgetExhausted, got.Reason)
	assert.True(t, got.StaleMeta)
	assert.Equal(t, report.ClockOriginalSend, ExpiryOf(&got, false, 336*time.Hour, t0).Basis)
	r := Build([]dlq.Tagged{got}, testPipeline(t, false), t0)
	assert.Equal(t, 1, r.Totals.StaleMeta)
	assert.Contains(t, r.Attention[0], "1 message enqueued well after")

	// The worker's own send lands within seconds of dead_lettered_at: not stale.
	fresh := deadLetter(t, "m2", "{}", meta, meta.DeadLetteredAt.Add(3*time.Second))
	got = Tag(fresh)
	assert.False(t, got.StaleMeta)
	assert.Equal(t, report.ClockWorkerSend, ExpiryOf(&got, false, 336*time.Hour, t0).Basis)
}
