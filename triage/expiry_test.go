package triage

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/triage/dlq"
	"github.com/agentdlq/agentdlq/triage/report"
)

func TestExpiryOf(t *testing.T) {
	t.Parallel()
	const retention = 336 * time.Hour
	meta := poisonMeta(deadletter.ReasonSchemaInvalid, "web.search", "1", "acme", "k1", "bad")
	tests := []struct {
		name string
		msg  dlq.Message
		fifo bool
		// want
		basis     report.ClockBasis
		deletesAt time.Time
	}{
		{
			// A standard broker move keeps the original enqueue time: sent 3 days
			// ago in the hot queue, the DLQ deletes it 11 days from now.
			name: "standard, broker move: original enqueue time", msg: brokerMoved("a", "{}", t0.Add(-72*time.Hour)),
			basis: report.ClockOriginalSend, deletesAt: t0.Add(-72 * time.Hour).Add(retention),
		},
		{
			// The worker's own send is a new message: its SentTimestamp is the DLQ send.
			name: "standard, worker send: new clock", msg: deadLetter(t, "b", "{}", meta, t0.Add(-time.Hour)),
			basis: report.ClockWorkerSend, deletesAt: t0.Add(-time.Hour).Add(retention),
		},
		{
			name: "FIFO, broker move: reset enqueue time", msg: brokerMoved("c", "{}", t0.Add(-5*time.Hour)), fifo: true,
			basis: report.ClockFIFOReset, deletesAt: t0.Add(-5 * time.Hour).Add(retention),
		},
		{
			name: "FIFO, worker send", msg: deadLetter(t, "d", "{}", meta, t0.Add(-2*time.Hour)), fifo: true,
			basis: report.ClockWorkerSend, deletesAt: t0.Add(-2 * time.Hour).Add(retention),
		},
		{
			name: "unreadable metadata still means a worker send",
			msg: dlq.Message{MessageID: "e", SentTimestamp: t0.Add(-time.Hour), Attributes: map[string]deadletter.Attribute{
				deadletter.AttrMeta: {DataType: "String", StringValue: "nope"}}},
			basis: report.ClockWorkerSend, deletesAt: t0.Add(-time.Hour).Add(retention),
		},
		{
			name: "no SentTimestamp: now stands in", msg: brokerMoved("f", "{}", time.Time{}),
			basis: report.ClockUnknown, deletesAt: t0.Add(retention),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tg := Tag(tt.msg)
			got := ExpiryOf(&tg, tt.fifo, retention, t0)
			assert.Equal(t, tt.basis, got.Basis)
			assert.Equal(t, tt.deletesAt, got.DeletesAt)
		})
	}
}

func TestBuildExpiryWindow(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, false) // retention 336 h, window 48 h
	// Deletion at sent+336h; "within 48h" means sent before now-288h.
	msgs := []dlq.Message{
		brokerMoved("old-1", "{}", t0.Add(-330*time.Hour)),   // 6 h left
		brokerMoved("old-2", "{}", t0.Add(-300*time.Hour)),   // 36 h left
		brokerMoved("edge", "{}", t0.Add(-288*time.Hour)),    // exactly 48 h left: inside
		brokerMoved("outside", "{}", t0.Add(-287*time.Hour)), // 49 h left
		brokerMoved("fresh", "{}", t0.Add(-time.Hour)),       // 335 h left
		brokerMoved("overdue", "{}", t0.Add(-340*time.Hour)), // due: SQS deletes it any moment
	}
	r := Build(tagAll(msgs, nil), p, t0)
	assert.Equal(t, 4, r.Expiry.ExpiringSoon)
	assert.Equal(t, "overdue", r.Expiry.SoonestMessageID)
	assert.Equal(t, t0.Add(-4*time.Hour), r.Expiry.SoonestExpiry)
	require.NotNil(t, r.Expiry.HoursToSoonest)
	assert.InDelta(t, -4.0, *r.Expiry.HoursToSoonest, 1e-9)
	var ids []string
	for _, e := range r.Expiry.Expiring {
		ids = append(ids, e.MessageID)
	}
	assert.Equal(t, []string{"overdue", "old-1", "old-2", "edge"}, ids, "soonest first")
	assert.Equal(t, int64(340*3600), r.Expiry.OldestAgeSeconds)
	assert.Equal(t, map[report.ClockBasis]int{report.ClockOriginalSend: 6}, r.Expiry.ByBasis)
}

func TestBuildEmpty(t *testing.T) {
	t.Parallel()
	r := Build(nil, testPipeline(t, false), t0)
	assert.Equal(t, 0, r.Totals.Messages)
	assert.Nil(t, r.Expiry.HoursToSoonest)
	assert.True(t, r.Expiry.SoonestExpiry.IsZero())
	assert.Empty(t, r.Groups)
	assert.NotNil(t, r.Groups, "empty lists encode as [] not null")
}
