package redrive

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/dlq"
	"github.com/agentdlq/agentdlq/triage/report"
)

func TestBuildPlan(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	groups := []Group{
		{deadletter.ReasonPolicyLimit, "fp-pl", 1},
		{deadletter.ReasonSchemaInvalid, "fp-si", 4},
		{deadletter.ReasonBudgetExhausted, "fp-be", 7},
		{deadletter.ReasonEffectUnknown, "fp-eu", 2},
		{deadletter.ReasonReceiveLimit, "fp-rl", 3},
	}
	pl := buildPlan(p, groups)
	assert.Equal(t, 17, pl.Total)
	require.Len(t, pl.Groups, 5)
	// Taxonomy order.
	got := []deadletter.Reason{}
	for _, g := range pl.Groups {
		got = append(got, g.Reason)
	}
	assert.Equal(t, []deadletter.Reason{deadletter.ReasonBudgetExhausted, deadletter.ReasonSchemaInvalid, deadletter.ReasonEffectUnknown, deadletter.ReasonPolicyLimit, deadletter.ReasonReceiveLimit}, got)
	byReason := map[deadletter.Reason]redrivetype.PlanGroup{}
	for _, g := range pl.Groups {
		byReason[g.Reason] = g
	}
	be := byReason[deadletter.ReasonBudgetExhausted]
	assert.True(t, be.MayRedrive)
	assert.Equal(t, []redrivetype.Step{{Action: audit.ActionSelect, Reason: deadletter.ReasonBudgetExhausted, Fingerprint: "fp-be", Canary: 1}}, be.Next, "7 letters: one canary, never the whole group")
	assert.Contains(t, be.Why, "failed on every receive", "redrivable by policy is not a promise: canary first")
	si := byReason[deadletter.ReasonSchemaInvalid]
	assert.False(t, si.MayRedrive)
	assert.Contains(t, si.Why, "fix is deployed")
	assert.Equal(t, "Ack.FixDeployed", si.Needs)
	assert.Equal(t, []redrivetype.Step{{Action: audit.ActionSelect, Reason: deadletter.ReasonSchemaInvalid, Fingerprint: "fp-si", Canary: 1, Needs: []string{"Ack.FixDeployed"}}}, si.Next)
	eu := byReason[deadletter.ReasonEffectUnknown]
	assert.Equal(t, []redrivetype.Step{
		{Action: audit.ActionReconcile, Reason: deadletter.ReasonEffectUnknown, Fingerprint: "fp-eu", Needs: []string{"Key", "Outcome"}},
		{Action: audit.ActionSelect, Reason: deadletter.ReasonEffectUnknown, Fingerprint: "fp-eu", Canary: 1},
	}, eu.Next, "reconcile first; then a select that needs no made-up override")
	pll := byReason[deadletter.ReasonPolicyLimit]
	assert.Equal(t, []redrivetype.Step{{Action: audit.ActionReject, Reason: deadletter.ReasonPolicyLimit, Fingerprint: "fp-pl"}}, pll.Next)
	assert.Equal(t, []string{"Ack.Reviewed"}, byReason[deadletter.ReasonReceiveLimit].Next[0].Needs)
	assert.Nil(t, pl.Start)
	assert.True(t, strings.HasPrefix(pl.StartWhy, "not a move task"))

	onlyTransient := buildPlan(p, []Group{{deadletter.ReasonBudgetExhausted, "fp", 2}, {deadletter.ReasonDependencyOpen, "fp2", 1}})
	assert.Equal(t, &redrivetype.Step{Action: audit.ActionStart}, onlyTransient.Start)
	assert.Contains(t, buildPlan(p, nil).StartWhy, "empty")

	// Data, not words for a shell: no command line anywhere in the plan.
	b, err := json.Marshal(pl)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "agentdlq")
	assert.NotContains(t, string(b), "--")
}

// The one plan entry point: scanned (no report given), it is audited; over
// a report the caller holds, it neither scans nor audits.
func TestPlanIsAuditedWhenItScans(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f := newFakeSQS()
	r, store, _ := newRedriver(t, p, f, f.addPair(p))
	rep := &report.Report{Groups: []report.Group{{Reason: deadletter.ReasonBudgetExhausted, Fingerprint: "fp", Count: 2}}}
	r.cfg.Scan = func(context.Context) (*report.Report, error) { return rep, nil }
	held, err := r.Plan(context.Background(), PlanRequest{Actor: "alice", Report: rep})
	require.NoError(t, err)
	assert.Equal(t, 2, held.Total)
	assert.Empty(t, store.all(), "a plan over a held report audits nothing")

	// An empty window over a held report is refused, and audits nothing
	// either: a page view's refusal is the caller's to show.
	now := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	empty := dlq.Filter{Since: now, Until: now}
	for _, req := range []PlanRequest{{Actor: "alice", Report: rep, Filter: empty}, {Actor: "alice", Groups: []Group{{deadletter.ReasonBudgetExhausted, "fp", 2}}, Filter: empty}} {
		_, err = r.Plan(context.Background(), req)
		assert.Equal(t, redrivetype.CodeBadInput, RefusalCode(err))
		assert.Empty(t, store.all(), "a refused page view audits nothing")
	}

	_, err = r.Plan(context.Background(), PlanRequest{Actor: "alice"})
	require.NoError(t, err)
	recs := store.all()
	require.Len(t, recs, 1)
	assert.Equal(t, audit.ActionPlan, recs[0].Action)
	assert.Equal(t, audit.OutcomeShown, recs[0].Outcome)
	assert.Equal(t, 2, recs[0].Counts["total"])
	assert.Equal(t, "alice", recs[0].Actor)

	// The same empty window on a plan that scans is refused before the
	// scan, and audited, as every refusal of a command that reached a
	// pipeline is.
	scanned := 0
	r.cfg.Scan = func(context.Context) (*report.Report, error) { scanned++; return rep, nil }
	_, err = r.Plan(context.Background(), PlanRequest{Actor: "alice", Filter: empty})
	assert.Equal(t, redrivetype.CodeBadInput, RefusalCode(err))
	assert.Zero(t, scanned, "refused before the scan")
	recs = store.all()
	require.Len(t, recs, 2)
	assert.Equal(t, audit.ActionPlan, recs[1].Action)
	assert.Equal(t, audit.OutcomeRefused, recs[1].Outcome)
	assert.Equal(t, empty.String(), recs[1].Detail["filter"], "the refusal names the filter, as the plan shown does")
}

func TestRejectIsAuditedAndGated(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f := newFakeSQS()
	r, store, _ := newRedriver(t, p, f, f.addPair(p))
	groups := []Group{{deadletter.ReasonPolicyLimit, "fp-pl", 3}}
	ctx := context.Background()
	_, err := r.Reject(ctx, RejectRequest{Who: Who{Owner: p.Owner, Why: "cost cap is right; tenant told"}, Reasons: []deadletter.Reason{deadletter.ReasonPolicyLimit}, Groups: groups})
	require.NoError(t, err)
	_, err = r.Reject(ctx, RejectRequest{Who: Who{Owner: "mallory", Why: "x"}, Reasons: []deadletter.Reason{deadletter.ReasonPolicyLimit}, Groups: groups})
	assert.Equal(t, redrivetype.CodeOwner, RefusalCode(err))
	_, err = r.Reject(ctx, RejectRequest{Who: Who{Owner: p.Owner, Why: "x"}, Reasons: []deadletter.Reason{deadletter.ReasonPolicyLimit}, Fingerprints: []string{"fp-none"}, Groups: groups})
	assert.Equal(t, redrivetype.CodeUnknownGroup, RefusalCode(err))
	recs := store.all()
	require.Len(t, recs, 3)
	assert.Equal(t, audit.OutcomeOK, recs[0].Outcome)
	assert.Equal(t, 3, recs[0].Counts["policy_limit"])
	assert.Equal(t, audit.OutcomeRefused, recs[1].Outcome)
	assert.Equal(t, audit.OutcomeRefused, recs[2].Outcome)
}

// A plan over a partial scan is shown (with what was seen) but its outcome
// is a partial scan, so the caller exits non-zero and says when to retry;
// the audit says partial, not shown.
func TestPlanOnAPartialScan(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f := newFakeSQS()
	r, store, _ := newRedriver(t, p, f, f.addPair(p))
	r.cfg.Scan = func(context.Context) (*report.Report, error) {
		rep := &report.Report{Partial: true, PartialReasons: []string{"scan: saw 0 of about 3 messages"}}
		rep.Scan = report.ScanStats{Unique: 0, ApproxDepth: 0, ApproxInFlight: 3, VisibilityTimeoutSeconds: 30,
			Partial: true, PartialReason: "3 messages in flight elsewhere when the scan started could not be read"}
		return rep, nil
	}
	pl, err := r.Plan(context.Background(), PlanRequest{Actor: "alice"})
	require.ErrorIs(t, err, triage.ErrScanPartial)
	require.NotNil(t, pl, "what was seen is still shown")
	assert.Equal(t, []string{"scan: saw 0 of about 3 messages"}, pl.Partial)
	var pe *redrivetype.PartialError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 3, pe.Depth)
	assert.Equal(t, 30*time.Second, pe.RetryAfter)
	assert.Contains(t, err.Error(), "saw 0 of about 3 dead letters")
	assert.Contains(t, err.Error(), "retry after 30s")
	recs := store.all()
	require.Len(t, recs, 1)
	assert.Equal(t, audit.OutcomePartial, recs[0].Outcome)
}

// The suggested canary is a sample, never the whole group: a tenth, at
// least one, at most maxSuggestedCanary, fewer than n when n > 1 (the plan
// once suggested --canary 4 for a group of 4).
func TestSuggestedCanary(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]int{0: 1, 1: 1, 2: 1, 4: 1, 19: 1, 20: 2, 35: 3, 100: 10, 5000: 10} {
		assert.Equal(t, want, SuggestedCanary(n), "n=%d", n)
		if n > 1 {
			assert.Less(t, SuggestedCanary(n), n)
		}
	}
}
