package triage

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
)

// copiesFixture is a DLQ holding one dead letter three times (the worker's
// send retried twice after SQS took it), once more dead-lettered again on
// another receive (its metadata differs), a near-copy of it (same original
// message, another body), and a letter of another task.
func copiesFixture(t *testing.T) []Tagged {
	t.Helper()
	body := task("t1", "acme", "web.search", "2.1.0", `{"query":"q"}`)
	meta := poisonMeta(deadletter.ReasonSchemaInvalid, "web.search", "2.1.0", "acme", "key-t1", "args.query: wrong type")
	meta.MessageID, meta.InputSHA256 = "orig-1", HashValue(body)
	sent := t0.Add(-2 * time.Hour)
	meta.DeadLetteredAt = sent
	near := task("t1", "acme", "web.search", "2.1.0", `{"query":"other"}`)
	nearMeta := meta
	nearMeta.InputSHA256 = HashValue(near)
	other := task("t2", "acme", "web.search", "2.1.0", `{"query":"q"}`)
	otherMeta := poisonMeta(deadletter.ReasonSchemaInvalid, "web.search", "2.1.0", "acme", "key-t2", "args.query: wrong type")
	otherMeta.MessageID, otherMeta.InputSHA256 = "orig-2", HashValue(other)
	again := meta
	again.Attempts++
	// The copies arrive out of order; the earliest SentTimestamp is counted.
	msgs := []Message{
		deadLetter(t, "dlq-d", body, again, sent.Add(time.Minute)),
		deadLetter(t, "dlq-c", body, meta, sent.Add(2*time.Second)),
		deadLetter(t, "dlq-a", body, meta, sent),
		deadLetter(t, "dlq-b", body, meta, sent.Add(time.Second)),
		deadLetter(t, "dlq-near", near, nearMeta, sent),
		deadLetter(t, "dlq-other", other, otherMeta, sent),
	}
	return tagAll(msgs, nil)
}

func TestBuildCountsCopiesOnce(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, false)
	r := Build(copiesFixture(t), p, t0)

	assert.Equal(t, 3, r.Totals.Messages, "three messages: the copied one, its near-copy, the other")
	assert.Equal(t, 3, r.Totals.Copies)
	assert.Equal(t, 1, r.Totals.CopiedLetters)
	assert.Equal(t, 1, r.Totals.CopiesDiffering)
	require.Len(t, r.Totals.ByReason, 1)
	assert.Equal(t, 3, r.Totals.ByReason[0].Count)
	require.Len(t, r.Groups, 1)
	g := r.Groups[0]
	assert.Equal(t, 3, g.Count)
	assert.Len(t, g.Letters(), 3, "the eval export's candidates hold the counted copy only")
	assert.True(t, g.Recurring, "three messages reach the eval threshold of 3")
	assert.NotContains(t, g.SampleMessageIDs, "dlq-b")
	assert.NotContains(t, g.SampleMessageIDs, "dlq-c")
	assert.Contains(t, g.SampleMessageIDs, "dlq-a")
	// The copies' key is not a repeat key: it was dead-lettered once.
	assert.Equal(t, 1, r.Totals.RepeatKeys, "key-t1 of the near-copy is still seen twice")

	require.Equal(t, []CopySet{{OriginalMessageID: "orig-1", MessageID: "dlq-a", CopyMessageIDs: []string{"dlq-b", "dlq-c", "dlq-d"}, DifferingMessageIDs: []string{"dlq-d"}}}, r.Copies)
	var line string
	for _, a := range r.Attention {
		if strings.Contains(a, "held more than once") {
			line = a
		}
	}
	assert.Contains(t, line, "1 dead letter held more than once (3 extra copies")
	assert.Contains(t, line, "1 of the copies differ")
	assert.Contains(t, line, "orig-1")

	data, err := json.Marshal(r)
	require.NoError(t, err)
	assert.NoError(t, validate(t, compileReportSchema(t), data))
}

func TestBuildCopiesNeedReadableMeta(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, false)
	body := task("t1", "acme", "web.search", "2.1.0", `{}`)
	// Two broker moves of equal bodies are two messages: nothing names
	// their original message.
	r := Build(tagAll([]Message{brokerMoved("m1", body, t0), brokerMoved("m2", body, t0)}, nil), p, t0)
	assert.Equal(t, 2, r.Totals.Messages)
	assert.Zero(t, r.Totals.Copies)
	assert.Empty(t, r.Copies)
}

func TestNarrowKeepsCopies(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, false)
	r := Build(copiesFixture(t), p, t0)
	n, err := Narrow(r, p, Filter{Tool: "web.search"})
	require.NoError(t, err)
	assert.Equal(t, 3, n.Totals.Messages)
	assert.Equal(t, 3, n.Totals.Copies)
	assert.Equal(t, 6, n.Filter.Scanned)
}
