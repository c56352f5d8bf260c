package redrive

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/triage"
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
	pl := BuildPlan(p, groups)
	assert.Equal(t, 17, pl.Total)
	require.Len(t, pl.Groups, 5)
	// Taxonomy order.
	got := []deadletter.Reason{}
	for _, g := range pl.Groups {
		got = append(got, g.Reason)
	}
	assert.Equal(t, []deadletter.Reason{deadletter.ReasonBudgetExhausted, deadletter.ReasonSchemaInvalid, deadletter.ReasonEffectUnknown, deadletter.ReasonPolicyLimit, deadletter.ReasonReceiveLimit}, got)
	byReason := map[deadletter.Reason]PlanGroup{}
	for _, g := range pl.Groups {
		byReason[g.Reason] = g
	}
	be := byReason[deadletter.ReasonBudgetExhausted]
	assert.True(t, be.MayRedrive)
	assert.Equal(t, "agentdlq redrive select --pipeline agent-tasks --reason budget_exhausted --fingerprint fp-be --owner platform-oncall --why '<why>' --rate 10 --canary 5", be.Command)
	si := byReason[deadletter.ReasonSchemaInvalid]
	assert.False(t, si.MayRedrive)
	assert.Contains(t, si.Why, "fix is deployed")
	assert.Contains(t, si.Command, "--fix-deployed '<deployed fix ref>' --canary 4")
	eu := byReason[deadletter.ReasonEffectUnknown]
	assert.Contains(t, eu.Command, "agentdlq triage --pipeline agent-tasks --keys")
	assert.Contains(t, eu.Command, "agentdlq ledger reconcile --pipeline agent-tasks --key K --no-effect|--effect-confirmed RECEIPT --owner platform-oncall")
	assert.NotContains(t, eu.Command, "--override", "reconciled keys need no made-up override")
	pll := byReason[deadletter.ReasonPolicyLimit]
	assert.Equal(t, "agentdlq redrive reject --pipeline agent-tasks --reason policy_limit --fingerprint fp-pl --owner platform-oncall --why '<why>'", pll.Command)
	assert.Contains(t, byReason[deadletter.ReasonReceiveLimit].Command, "--reviewed")
	assert.True(t, strings.HasPrefix(pl.Start, "not a move task"))

	onlyTransient := BuildPlan(p, []Group{{deadletter.ReasonBudgetExhausted, "fp", 2}, {deadletter.ReasonDependencyOpen, "fp2", 1}})
	assert.Equal(t, "agentdlq redrive start --pipeline agent-tasks --owner platform-oncall --why '<why>' --rate 10", onlyTransient.Start)
	assert.Contains(t, BuildPlan(p, nil).Start, "empty")

	var buf bytes.Buffer
	require.NoError(t, pl.WriteText(&buf))
	out := buf.String()
	assert.Contains(t, out, "Redrive plan for agent-tasks (owner platform-oncall): 17 dead letters in 5 groups")
	assert.Contains(t, out, "after --fix-deployed REF")
	assert.Contains(t, out, be.Command)
}

func TestShowPlanIsAudited(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f := newFakeSQS()
	r, store, _ := newRedriver(t, p, f, f.addPair(p))
	_, err := r.ShowPlan(context.Background(), "alice", []Group{{deadletter.ReasonBudgetExhausted, "fp", 2}})
	require.NoError(t, err)
	recs := store.all()
	require.Len(t, recs, 1)
	assert.Equal(t, ActionPlan, recs[0].Action)
	assert.Equal(t, OutcomeShown, recs[0].Outcome)
	assert.Equal(t, 2, recs[0].Counts["total"])
	assert.Equal(t, "alice", recs[0].Actor)
}

func TestRejectIsAuditedAndGated(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f := newFakeSQS()
	r, store, _ := newRedriver(t, p, f, f.addPair(p))
	groups := []Group{{deadletter.ReasonPolicyLimit, "fp-pl", 3}}
	ctx := context.Background()
	require.NoError(t, r.Reject(ctx, Who{Owner: p.Owner, Why: "cost cap is right; tenant told"}, []deadletter.Reason{deadletter.ReasonPolicyLimit}, nil, groups))
	err := r.Reject(ctx, Who{Owner: "mallory", Why: "x"}, []deadletter.Reason{deadletter.ReasonPolicyLimit}, nil, groups)
	assert.Equal(t, CodeOwner, RefusalCode(err))
	err = r.Reject(ctx, Who{Owner: p.Owner, Why: "x"}, []deadletter.Reason{deadletter.ReasonPolicyLimit}, []string{"fp-none"}, groups)
	assert.Equal(t, CodeUnknownGroup, RefusalCode(err))
	recs := store.all()
	require.Len(t, recs, 3)
	assert.Equal(t, OutcomeOK, recs[0].Outcome)
	assert.Equal(t, 3, recs[0].Counts["policy_limit"])
	assert.Equal(t, OutcomeRefused, recs[1].Outcome)
	assert.Equal(t, OutcomeRefused, recs[2].Outcome)
}

// A plan over a partial scan is shown (with what was seen) but its outcome
// is a partial scan, so the caller exits non-zero and says when to retry;
// the audit says partial, not shown.
func TestPlanOnAPartialScan(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f := newFakeSQS()
	r, store, _ := newRedriver(t, p, f, f.addPair(p))
	r.cfg.Scan = func(context.Context) (*triage.Report, error) {
		rep := &triage.Report{Partial: true, PartialReasons: []string{"scan: saw 0 of about 3 messages"}}
		rep.Scan = triage.ScanStats{Unique: 0, ApproxDepth: 0, ApproxInFlight: 3, VisibilityTimeoutSeconds: 30,
			Partial: true, PartialReason: "3 messages in flight elsewhere when the scan started could not be read"}
		return rep, nil
	}
	pl, err := r.Plan(context.Background(), "alice")
	require.ErrorIs(t, err, ErrScanPartial)
	require.NotNil(t, pl, "what was seen is still shown")
	assert.Equal(t, []string{"scan: saw 0 of about 3 messages"}, pl.Partial)
	var pe *PartialError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 3, pe.Depth)
	assert.Equal(t, 30*time.Second, pe.RetryAfter)
	assert.Contains(t, err.Error(), "saw 0 of about 3 dead letters")
	assert.Contains(t, err.Error(), "retry after 30s")
	recs := store.all()
	require.Len(t, recs, 1)
	assert.Equal(t, OutcomePartial, recs[0].Outcome)
}
