package redrive

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/triage"
)

func TestSelectByFilterMovesOnlyWhatItChoosesAndAuditsIt(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f := newFakeSQS()
	q := f.addPair(p)
	seed(t, f, q, 3, deadletter.ReasonBudgetExhausted)
	for _, k := range []string{"sql-1", "sql-2"} {
		d := newDeadLetter(t, k, "sql.query", deadletter.ReasonBudgetExhausted, 1, "")
		f.put(q.DLQURL, d.body, d.attrs, "")
	}
	r, store, _ := newRedriver(t, p, f, q)

	// A filter that chooses none of the reason's letters: refused, nothing moves.
	req := selReq(p, deadletter.ReasonBudgetExhausted)
	req.Filter = triage.Filter{Tool: "email.send"}
	res, err := r.Select(context.Background(), req)
	var rf *Refusal
	require.ErrorAs(t, err, &rf)
	assert.Equal(t, CodeNothingSelected, rf.Code)
	assert.Equal(t, "Filter", rf.Field)
	assert.Contains(t, err.Error(), "tool=email.send")
	assert.Contains(t, err.Error(), "5 of the reason seen")
	assert.Equal(t, 0, res.Moved)
	assert.Len(t, f.snapshot(q.DLQURL), 5, "nothing moved")

	// An empty window: refused before anything is received.
	req.Filter = triage.Filter{Since: f.Now(), Until: f.Now()}
	_, err = r.Select(context.Background(), req)
	require.ErrorAs(t, err, &rf)
	assert.Equal(t, CodeBadInput, rf.Code)
	assert.Len(t, f.snapshot(q.DLQURL), 5, "nothing moved")

	req.Filter = triage.Filter{Tool: "sql.query", Tenant: "acme"}
	res, err = r.Select(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, 2, res.Moved)
	assert.Equal(t, 5, res.Seen)
	assert.Len(t, f.snapshot(q.DLQURL), 3)
	for _, m := range f.snapshot(q.HotURL) {
		assert.Contains(t, m.body, `"tool":"sql.query"`)
	}
	recs := store.all()
	last := recs[len(recs)-1]
	assert.Equal(t, audit.ActionSelect, last.Action)
	assert.Equal(t, audit.OutcomeOK, last.Outcome)
	assert.Equal(t, "tool=sql.query tenant="+triage.HashValue("acme"), last.Detail["filter"], "the filter is named, its tenant hashed as the pipeline hashes tenants")
	for _, rec := range recs {
		if rec.Action == audit.ActionSelect {
			assert.NotEmpty(t, rec.Detail["filter"], "every select record names the filter, refusals included: %+v", rec)
		}
	}
}

func TestPlanWithAFilter(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f := newFakeSQS()
	q := f.addPair(p)
	seed(t, f, q, 2, deadletter.ReasonBudgetExhausted, deadletter.ReasonSchemaInvalid)
	d := newDeadLetter(t, "sql-1", "sql.query", deadletter.ReasonBudgetExhausted, 1, "")
	f.put(q.DLQURL, d.body, d.attrs, "")
	r, store, _ := newRedriver(t, p, f, q)

	pl, err := r.Plan(context.Background(), PlanRequest{Actor: "alice", Filter: triage.Filter{Tool: "sql.query"}})
	require.NoError(t, err)
	require.NotNil(t, pl.Filter)
	assert.Equal(t, 1, pl.Total)
	assert.Equal(t, 5, pl.Filter.Scanned)
	assert.Nil(t, pl.Start, "never a move task of the whole DLQ for a filtered plan")
	require.Len(t, pl.Groups, 1)
	assert.Equal(t, deadletter.ReasonBudgetExhausted, pl.Groups[0].Reason)
	recs := store.all()
	assert.Equal(t, "tool=sql.query", recs[len(recs)-1].Detail["filter"])
	assert.Equal(t, 1, recs[len(recs)-1].Counts["total"])

	all, err := r.Plan(context.Background(), PlanRequest{Actor: "alice"})
	require.NoError(t, err)
	assert.Nil(t, all.Filter)
	assert.Equal(t, 5, all.Total)

	none, err := r.Plan(context.Background(), PlanRequest{Actor: "alice", Filter: triage.Filter{Contains: "no such error"}})
	require.NoError(t, err)
	assert.Equal(t, 0, none.Total)
	assert.Equal(t, "no dead letter the filter chooses", none.StartWhy)
}

// A letter is matched on the tag its pass made, once: the filter reads the
// letter's own hints, never a tag of its own.
func TestMatchFilterOnTheTagTheSelectionMade(t *testing.T) {
	t.Parallel()
	d := newDeadLetter(t, "k1", "sql.query", deadletter.ReasonBudgetExhausted, 0, "")
	l := &letter{Tagged: triage.Tag(triage.Message{MessageID: "m1", Body: d.body, Attributes: d.attrs})}
	assert.Equal(t, deadletter.ReasonBudgetExhausted, l.Reason)
	for _, tt := range []struct {
		f    triage.Filter
		want bool
	}{
		{triage.Filter{}, true},
		{triage.Filter{Tool: "sql.query"}, true},
		{triage.Filter{Tool: "email.send"}, false},
	} {
		assert.Equal(t, tt.want, matchFilter(tt.f, l), "triage's tag: %s", tt.f)
	}
	l.Hints.Tool = "email.send" // as if the pass had tagged it so
	assert.True(t, matchFilter(triage.Filter{Tool: "email.send"}, l), "the letter's tag, not a new one")
	assert.False(t, matchFilter(triage.Filter{Tool: "sql.query"}, l))
}
