package redrive

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
	"github.com/agentdlq/agentdlq/triage/report"
)

// effectUnknownKey makes key what the worker leaves for an effect_unknown
// dead letter: its effect started, no receipt, dead-lettered.
func effectUnknownKey(t *testing.T, led ledger.Ledger, key string) {
	t.Helper()
	ctx := context.Background()
	t0 := time.Date(2026, 11, 29, 11, 0, 0, 0, time.UTC)
	_, err := led.Begin(ctx, key, "m-"+key, "", t0, time.Minute)
	require.NoError(t, err)
	require.NoError(t, led.StartEffect(ctx, key, "m-"+key, t0))
	_, err = led.DeadLettered(ctx, key, deadletter.ReasonEffectUnknown, t0)
	require.NoError(t, err)
}

func TestGateSpeaksOfTheAction(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	tags := map[string]string{pipeline.TagOwner: p.Owner}
	tests := []struct {
		action      audit.Action
		owner, why  string
		code        redrivetype.Code
		contains    string
		notContains string
	}{
		{"", p.Owner, "", redrivetype.CodeWhy, "why this redrive is safe now", "reject"},
		{audit.ActionSelect, p.Owner, " ", redrivetype.CodeWhy, "why this redrive is safe now", "reject"},
		{audit.ActionReject, p.Owner, "", redrivetype.CodeWhy, "why these dead letters are rejected, never redriven", "redrive is safe"},
		{audit.ActionReconcile, p.Owner, "", redrivetype.CodeWhy, "how the effect was reconciled", "redrive is safe"},
		{"", "mallory", "x", redrivetype.CodeOwner, `Owner "mallory" may not redrive pipeline "agent-tasks"`, ""},
		{"", "", "x", redrivetype.CodeOwnerMissing, `Owner is required: only the owner of pipeline "agent-tasks" ("platform-oncall") may redrive it`, "mismatch"},
		{audit.ActionPause, "", "", redrivetype.CodeOwnerMissing, "may pause the worker of it", "redrive"},
		{audit.ActionPause, p.Owner, "", redrivetype.CodeWhy, "Why is required: say why the worker must stop now", "redrive"},
		{audit.ActionResume, p.Owner, "", redrivetype.CodeWhy, "why the worker may run again", "redrive is safe"},
		{audit.ActionPause, "mallory", "x", redrivetype.CodeOwner, `may not pause the worker of pipeline "agent-tasks"`, "may not redrive"},
		{audit.ActionCancel, "mallory", "x", redrivetype.CodeOwner, `may not cancel the move task of pipeline "agent-tasks"`, "may not redrive"},
		{audit.ActionReject, "mallory", "x", redrivetype.CodeOwner, `may not reject the dead letters of pipeline "agent-tasks"`, "may not redrive"},
		{audit.ActionReconcile, "mallory", "x", redrivetype.CodeOwner, `may not reconcile the ledger keys of pipeline "agent-tasks"`, "may not redrive"},
	}
	for _, tt := range tests {
		t.Run(string(tt.action)+"/"+tt.owner+"/"+string(tt.code), func(t *testing.T) {
			t.Parallel()
			err := gate(gateInput{Action: tt.action, Pipeline: p, Owner: tt.owner, Why: tt.why, Rate: 1, QueueTags: tags, identity: identity{Local: true}})
			require.Error(t, err)
			assert.Equal(t, tt.code, RefusalCode(err))
			assert.Contains(t, err.Error(), tt.contains)
			var rf *Refusal
			require.ErrorAs(t, err, &rf)
			assert.NotEmpty(t, rf.Field, "the refusal names the input at fault")
			if tt.notContains != "" {
				assert.NotContains(t, err.Error(), tt.notContains)
			}
		})
	}
}

func TestReconciledOnly(t *testing.T) {
	t.Parallel()
	eu := deadletter.ReasonEffectUnknown
	tests := []struct {
		name    string
		reasons []deadletter.Reason
		ack     Ack
		want    map[deadletter.Reason]bool
	}{
		{"effect_unknown alone: only reconciled keys", []deadletter.Reason{eu}, Ack{}, map[deadletter.Reason]bool{eu: true}},
		{"overridden: every key but the confirmed ones", []deadletter.Reason{eu}, Ack{Overrides: map[deadletter.Reason]string{eu: "checked by hand"}}, map[deadletter.Reason]bool{}},
		{"a fix does not settle an effect", []deadletter.Reason{eu, deadletter.ReasonSchemaInvalid}, Ack{FixDeployed: "v2"}, map[deadletter.Reason]bool{eu: true}},
		{"other reasons are the policy's", []deadletter.Reason{deadletter.ReasonBudgetExhausted, deadletter.ReasonGuardrailReject}, Ack{}, map[deadletter.Reason]bool{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, reconciledFor(tt.reasons, tt.ack))
		})
	}
}

func TestReconcileIsGatedConditionalAndAudited(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f := newFakeSQS()
	r, store, led := newRedriver(t, p, f, f.addPair(p))
	ctx := context.Background()
	effectUnknownKey(t, led, "k-none")
	effectUnknownKey(t, led, "k-done")
	_, err := led.DeadLettered(ctx, "k-poison", deadletter.ReasonSchemaInvalid, time.Now()) // no effect started
	require.NoError(t, err)
	who := Who{Owner: p.Owner, Why: "payments API shows no charge for the run"}
	none := ReconcileRequest{Who: who, Key: "k-none", Outcome: ledger.OutcomeNoEffect}
	done := ReconcileRequest{Who: who, Key: "k-done", Outcome: ledger.OutcomeEffectConfirmed, Receipt: "ch_123"}
	with := func(req ReconcileRequest, f func(*ReconcileRequest)) ReconcileRequest { f(&req); return req }

	steps := []struct {
		name string
		req  ReconcileRequest
		code redrivetype.Code // "" : done
	}{
		{"wrong owner", with(none, func(r *ReconcileRequest) { r.Owner = "mallory" }), redrivetype.CodeOwner},
		{"no why", with(none, func(r *ReconcileRequest) { r.Why = "" }), redrivetype.CodeWhy},
		{"no key", with(none, func(r *ReconcileRequest) { r.Key = " " }), redrivetype.CodeBadInput},
		{"confirmed without a receipt", with(done, func(r *ReconcileRequest) { r.Receipt = "" }), redrivetype.CodeBadInput},
		{"no effect with a receipt", with(none, func(r *ReconcileRequest) { r.Receipt = "x" }), redrivetype.CodeBadInput},
		{"no such outcome", with(none, func(r *ReconcileRequest) { r.Outcome = "maybe" }), redrivetype.CodeBadInput},
		{"a key the ledger does not hold", with(none, func(r *ReconcileRequest) { r.Key = "k-nowhere" }), redrivetype.CodeNotEffectUnknown},
		{"a key whose effect never started", with(none, func(r *ReconcileRequest) { r.Key = "k-poison" }), redrivetype.CodeNotEffectUnknown},
		{"no effect", none, ""},
		{"no effect again: a no-op", none, ""},
		{"then confirmed: refused", with(none, func(r *ReconcileRequest) { r.Outcome, r.Receipt = ledger.OutcomeEffectConfirmed, "ch_1" }), redrivetype.CodeReconciled},
		{"confirmed", done, ""},
		{"confirmed with another receipt: refused", with(done, func(r *ReconcileRequest) { r.Receipt = "ch_999" }), redrivetype.CodeReconciled},
	}
	for _, s := range steps {
		before, _, err := led.Get(ctx, s.req.Key)
		require.NoError(t, err)
		_, err = r.Reconcile(ctx, s.req)
		if s.code == "" {
			require.NoError(t, err, s.name)
		} else {
			require.ErrorIs(t, err, ErrRefused, s.name)
			assert.Equal(t, s.code, RefusalCode(err), "%s: %v", s.name, err)
			after, _, err := led.Get(ctx, s.req.Key)
			require.NoError(t, err)
			assert.Equal(t, before, after, "%s: a refusal changes nothing", s.name)
		}
	}
	e, _, err := led.Get(ctx, "k-none")
	require.NoError(t, err)
	assert.True(t, e.NoEffect())
	assert.Equal(t, p.Owner, e.ReconciledBy)
	e, _, err = led.Get(ctx, "k-done")
	require.NoError(t, err)
	assert.True(t, e.EffectConfirmed())
	assert.Equal(t, "ch_123", e.Receipt)

	recs := store.all()
	require.Len(t, recs, len(steps), "every attempt is audited, refusals too")
	for i, s := range steps {
		rec := recs[i]
		assert.Equal(t, audit.ActionReconcile, rec.Action, s.name)
		assert.Equal(t, s.req.Why, rec.Why, s.name)
		assert.Equal(t, s.req.Key, rec.Detail["idempotency_key"], s.name)
		if s.code == "" {
			assert.Equal(t, audit.OutcomeOK, rec.Outcome, s.name)
		} else {
			assert.Equal(t, audit.OutcomeRefused, rec.Outcome, s.name)
		}
	}
	assert.Equal(t, "true", recs[9].Detail["repeat"], "the repeat is marked")
	assert.Empty(t, recs[8].Detail["repeat"])
	assert.Equal(t, "ch_123", recs[11].Detail["receipt"])
}

// TestSelectEffectUnknownBySettlement: without an override only the keys
// reconciled as no effect move; with one, every key but the confirmed ones;
// a confirmed key never moves.
func TestSelectEffectUnknownBySettlement(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	eu := deadletter.ReasonEffectUnknown
	tests := []struct {
		name                        string
		ack                         Ack
		dryRun                      bool
		moved                       []string
		confirmedLeft, unreconciled int
	}{
		{"no override: the no-effect key only", Ack{}, false, []string{"effect_unknown-a"}, 1, 1},
		{"no override, dry run", Ack{}, true, []string{"effect_unknown-a"}, 1, 1},
		{"override: all but the confirmed key", Ack{Overrides: map[deadletter.Reason]string{eu: "checked by hand"}}, false, []string{"effect_unknown-a", "effect_unknown-c"}, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeSQS()
			q := f.addPair(p)
			seed(t, f, q, 3, eu, deadletter.ReasonBudgetExhausted)
			r, store, led := newRedriver(t, p, f, q)
			ctx := context.Background()
			for _, k := range []string{"effect_unknown-a", "effect_unknown-b", "effect_unknown-c"} {
				effectUnknownKey(t, led, k)
			}
			who := Who{Owner: p.Owner, Why: "checked the mail provider"}
			_, err := r.Reconcile(ctx, ReconcileRequest{Who: who, Key: "effect_unknown-a", Outcome: ledger.OutcomeNoEffect})
			require.NoError(t, err)
			_, err = r.Reconcile(ctx, ReconcileRequest{Who: who, Key: "effect_unknown-b", Outcome: ledger.OutcomeEffectConfirmed, Receipt: "msg-77"})
			require.NoError(t, err)

			req := selReq(p, eu)
			req.Ack, req.DryRun = tt.ack, tt.dryRun
			res, err := r.Select(ctx, req)
			require.NoError(t, err)
			var keys []string
			for _, l := range res.Letters {
				keys = append(keys, l.IdempotencyKey)
			}
			assert.ElementsMatch(t, tt.moved, keys)
			assert.Equal(t, tt.confirmedLeft, res.EffectConfirmed)
			assert.Equal(t, tt.unreconciled, res.NotReconciled)
			hot := f.snapshot(q.HotURL)
			if tt.dryRun {
				assert.Empty(t, hot)
				assert.Len(t, f.snapshot(q.DLQURL), 6, "nothing moved")
			} else {
				assert.Len(t, hot, len(tt.moved))
				assert.Len(t, f.snapshot(q.DLQURL), 6-len(tt.moved), "the others stay, counted: nothing is lost")
				for _, m := range hot {
					assert.NotEqual(t, "effect_unknown-b", keyOf(t, m.body), "a confirmed effect never moves")
				}
			}
			recs := store.all()
			last := recs[len(recs)-1]
			assert.Equal(t, audit.ActionSelect, last.Action)
			assert.Equal(t, tt.confirmedLeft, last.Counts["skipped_effect_confirmed"])
			if len(tt.ack.Overrides) == 0 {
				assert.Equal(t, "effect_unknown", last.Detail["reconciled_only"])
			}
		})
	}
}

func TestSelectRefusesWhenNoEffectUnknownKeyIsSettled(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f := newFakeSQS()
	q := f.addPair(p)
	seed(t, f, q, 2, deadletter.ReasonEffectUnknown)
	r, _, led := newRedriver(t, p, f, q)
	ctx := context.Background()
	effectUnknownKey(t, led, "effect_unknown-a")
	effectUnknownKey(t, led, "effect_unknown-b")
	_, err := r.Reconcile(ctx, ReconcileRequest{Who: Who{Owner: p.Owner, Why: "sent, per the provider"}, Key: "effect_unknown-a",
		Outcome: ledger.OutcomeEffectConfirmed, Receipt: "msg-1"})
	require.NoError(t, err)
	res, err := r.Select(ctx, selReq(p, deadletter.ReasonEffectUnknown))
	assert.Equal(t, redrivetype.CodeForbidden, RefusalCode(err), err)
	assert.Contains(t, err.Error(), "1 not reconciled as no effect")
	assert.Contains(t, err.Error(), "1 with their effect confirmed")
	var rf *Refusal
	require.ErrorAs(t, err, &rf)
	assert.Equal(t, []redrivetype.Step{{Action: audit.ActionReconcile, Reason: deadletter.ReasonEffectUnknown, Needs: []string{"Key", "Outcome"}},
		{Action: audit.ActionReject, Reason: deadletter.ReasonEffectUnknown}}, rf.Next, "the ways out, as data")
	assert.Equal(t, 0, res.Moved)
	assert.Empty(t, f.snapshot(q.HotURL))
	assert.Len(t, f.snapshot(q.DLQURL), 2)
}

func TestStartRefusesEffectUnknownEvenOverridden(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f := newFakeSQS()
	q := f.addPair(p)
	r, _, _ := newRedriver(t, p, f, q)
	_, err := r.Start(context.Background(), StartRequest{Who: Who{Owner: p.Owner, Why: "all checked"}, Rate: 10,
		Ack:    Ack{Overrides: map[deadletter.Reason]string{deadletter.ReasonEffectUnknown: "checked"}},
		Groups: []Group{{deadletter.ReasonEffectUnknown, "fp", 2}, {deadletter.ReasonBudgetExhausted, "fp2", 1}}})
	assert.Equal(t, redrivetype.CodeForbidden, RefusalCode(err), err)
	assert.Contains(t, err.Error(), "effect_unknown 2 (never by a move task: reconcile each key")
}

// TestPlanShowsDecisions: plan reads the audit (a real FileStore) and shows
// the groups already rejected or reconciled.
func TestPlanShowsDecisions(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f := newFakeSQS()
	q := f.addPair(p)
	r, _, led := newRedriver(t, p, f, q)
	r.cfg.Audit.Store = &audit.FileStore{Path: filepath.Join(t.TempDir(), "audit.jsonl")}
	ctx := context.Background()
	eu := deadletter.ReasonEffectUnknown
	for _, k := range []string{"a1", "a2", "b1", "b2", "c1"} {
		effectUnknownKey(t, led, k)
	}
	who := Who{Owner: p.Owner, Why: "checked the provider"}
	for _, rc := range []ReconcileRequest{
		{Who: who, Key: "a1", Outcome: ledger.OutcomeEffectConfirmed, Receipt: "r-a1"},
		{Who: who, Key: "a2", Outcome: ledger.OutcomeEffectConfirmed, Receipt: "r-a2"},
		{Who: who, Key: "b1", Outcome: ledger.OutcomeNoEffect},
		{Who: who, Key: "b2", Outcome: ledger.OutcomeEffectConfirmed, Receipt: "r-b2"},
		{Who: Who{Owner: "mallory", Why: "x"}, Key: "c1", Outcome: ledger.OutcomeNoEffect}, // refused: not a redrivetype.Decision
	} {
		_, _ = r.Reconcile(ctx, rc)
	}
	groups := []Group{{eu, "fp-all-confirmed", 2}, {eu, "fp-some-none", 2}, {eu, "fp-open", 1}, {deadletter.ReasonPolicyLimit, "fp-pl", 3}, {deadletter.ReasonGuardrailReject, "fp-gr", 1}}
	_, err := r.Reject(ctx, RejectRequest{Who: Who{Owner: p.Owner, Why: "cost cap is right"}, Reasons: []deadletter.Reason{deadletter.ReasonPolicyLimit}, Groups: groups})
	require.NoError(t, err)

	d, err := r.Decisions(ctx)
	require.NoError(t, err)
	assert.Len(t, d.Rejections, 1)
	assert.Len(t, d.Reconciled, 4, "refused reconciliations are not decisions")
	pl := buildPlan(p, groups)
	rejectedAt := d.Rejections[0].Time
	markDecisions(pl, d, map[string]groupInfo{
		groupID(eu, "fp-all-confirmed"): {Keys: []string{"a1", "a2"}}, groupID(eu, "fp-some-none"): {Keys: []string{"b1", "b2"}},
		groupID(eu, "fp-open"): {Keys: []string{"c1"}}, groupID(deadletter.ReasonPolicyLimit, "fp-pl"): {LastSeen: rejectedAt.Add(-time.Hour)},
	})
	by := map[string]redrivetype.PlanGroup{}
	for _, g := range pl.Groups {
		by[g.Fingerprint] = g
	}
	require.NotNil(t, by["fp-pl"].Rejected)
	assert.Equal(t, "cost cap is right", by["fp-pl"].Rejected.Why)
	assert.Empty(t, by["fp-pl"].Next, "already rejected: nothing to do")
	assert.Nil(t, by["fp-gr"].Rejected, "another reason's group is not rejected")

	all := by["fp-all-confirmed"]
	assert.Equal(t, "reconciled: effect confirmed, reject or let retention drop it (select never moves these)", all.Why)
	assert.Equal(t, []redrivetype.Step{{Action: audit.ActionReject, Reason: eu, Fingerprint: "fp-all-confirmed"}}, all.Next)
	assert.Equal(t, map[ledger.Outcome]int{ledger.OutcomeEffectConfirmed: 2}, all.Reconciled)

	some := by["fp-some-none"]
	assert.Equal(t, "reconciled: 1 of 2 keys no effect (select moves them without an override), 1 effect confirmed (never moved)", some.Why)
	assert.Equal(t, []redrivetype.Step{{Action: audit.ActionSelect, Reason: eu, Fingerprint: "fp-some-none", Canary: 1}}, some.Next)

	open := by["fp-open"]
	assert.Nil(t, open.Reconciled)
	require.NotEmpty(t, open.Next)
	assert.Equal(t, audit.ActionReconcile, open.Next[0].Action)

	// Every listed key confirmed, but the report left keys out: no reject of
	// the whole group, whose other keys nobody has looked at.
	capped := buildPlan(p, groups)
	markDecisions(capped, d, map[string]groupInfo{groupID(eu, "fp-all-confirmed"): {Keys: []string{"a1", "a2"}, Omitted: 3}})
	for _, g := range capped.Groups {
		if g.Fingerprint == "fp-all-confirmed" {
			assert.Equal(t, 5, g.Keys)
			assert.Equal(t, "reconciled: 2 of 5 keys effect confirmed (never moved); reconcile the other 3 first", g.Why)
			assert.NotContains(t, g.Next, redrivetype.Step{Action: audit.ActionReject, Reason: eu, Fingerprint: "fp-all-confirmed"})
		}
	}

	// Dead letters of a rejected group that arrived after the rejection: decide again.
	again := buildPlan(p, groups)
	markDecisions(again, d, map[string]groupInfo{groupID(deadletter.ReasonPolicyLimit, "fp-pl"): {LastSeen: rejectedAt.Add(time.Minute)}})
	for _, g := range again.Groups {
		if g.Fingerprint == "fp-pl" {
			require.NotNil(t, g.Rejected)
			assert.Contains(t, g.Why, "but dead letters arrived since")
			assert.Equal(t, []redrivetype.Step{{Action: audit.ActionReject, Reason: deadletter.ReasonPolicyLimit, Fingerprint: "fp-pl"}}, g.Next)
		}
	}

}

func TestRejectWarns(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f := newFakeSQS()
	r, store, _ := newRedriver(t, p, f, f.addPair(p))
	r.cfg.Audit.Store = &audit.FileStore{Path: filepath.Join(t.TempDir(), "audit.jsonl")}
	ctx := context.Background()
	groups := []Group{{deadletter.ReasonPolicyLimit, "fp-policy", 3}, {deadletter.ReasonBudgetExhausted, "fp-be", 2}, {deadletter.ReasonSchemaInvalid, "fp-si", 1}}
	who := Who{Owner: p.Owner, Why: "tenant told"}
	pl := []deadletter.Reason{deadletter.ReasonPolicyLimit}

	res, err := r.Reject(ctx, RejectRequest{Who: who, Reasons: pl, Groups: groups})
	require.NoError(t, err)
	assert.Empty(t, res.Warnings, "a first rejection of a reason that is never redriven")
	res, err = r.Reject(ctx, RejectRequest{Who: who, Reasons: pl, Fingerprints: []string{"fp-policy"}, Groups: groups})
	require.NoError(t, err)
	require.Len(t, res.Warnings, 1)
	assert.Contains(t, res.Warnings[0], "policy_limit fp-policy was already rejected by platform-oncall")

	res, err = r.Reject(ctx, RejectRequest{Who: who, Reasons: []deadletter.Reason{deadletter.ReasonBudgetExhausted, deadletter.ReasonSchemaInvalid}, Groups: groups})
	require.NoError(t, err)
	require.Len(t, res.Warnings, 2)
	assert.Contains(t, res.Warnings[0], "budget_exhausted may be redriven by policy")
	assert.Contains(t, res.Warnings[1], "schema_invalid may be redriven once the fix is deployed")
	_ = store
	es, err := r.cfg.Audit.Entries(ctx, p.Name, audit.ActionReject)
	require.NoError(t, err)
	require.Len(t, es, 3)
	assert.Contains(t, es[1].Detail["warnings"], "already rejected", "the warnings are audited")

	// A refused rejection gives no warning and reads no audit.
	res, err = r.Reject(ctx, RejectRequest{Who: Who{Owner: p.Owner}, Reasons: pl, Groups: groups})
	assert.Equal(t, redrivetype.CodeWhy, RefusalCode(err))
	assert.Contains(t, err.Error(), "rejected, never redriven")
	assert.Empty(t, res.Warnings)
}

func TestFileStoreReadsBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := &audit.FileStore{Path: filepath.Join(t.TempDir(), "a", "audit.jsonl")}
	es, err := s.Entries(ctx, "p1")
	require.NoError(t, err)
	assert.Empty(t, es, "no file: no record")
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for i, e := range []audit.Entry{
		{Time: t0.Add(2 * time.Second), Pipeline: "p1", Action: audit.ActionReject, Outcome: audit.OutcomeOK},
		{Time: t0, Pipeline: "p1", Action: audit.ActionPlan, Outcome: audit.OutcomeShown},
		{Time: t0.Add(time.Second), Pipeline: "p1", Action: audit.ActionReconcile, Outcome: audit.OutcomeOK, Detail: map[string]string{"idempotency_key": "k"}},
		{Time: t0, Pipeline: "p2", Action: audit.ActionReject, Outcome: audit.OutcomeOK},
	} {
		require.NoError(t, s.Append(ctx, e), i)
	}
	es, err = s.Entries(ctx, "p1", decisionActions()...)
	require.NoError(t, err)
	require.Len(t, es, 2, "p1's decisions only")
	assert.Equal(t, audit.ActionReconcile, es[0].Action, "oldest first")
	es, err = s.Entries(ctx, "p1")
	require.NoError(t, err)
	assert.Len(t, es, 3)
}

// TestPlanCountsOnlyReconciliationsTheLedgerHolds: a key reconciled as no
// effect, redriven, and dead-lettered again after its call started is
// effect_unknown anew. select refuses to move it until it is reconciled
// again, so plan must not count the old reconciliation nor offer a select
// for it (found walking the runbook on make demo's email.send letter).
func TestPlanCountsOnlyReconciliationsTheLedgerHolds(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f := newFakeSQS()
	q := f.addPair(p)
	seed(t, f, q, 2, deadletter.ReasonEffectUnknown)
	r, _, led := newRedriver(t, p, f, q)
	r.cfg.Audit.Store = &audit.FileStore{Path: filepath.Join(t.TempDir(), "audit.jsonl")}
	ctx := context.Background()
	a, b := "effect_unknown-a", "effect_unknown-b"
	for _, k := range []string{a, b} {
		effectUnknownKey(t, led, k)
		_, err := r.Reconcile(ctx, ReconcileRequest{Who: Who{Owner: p.Owner, Why: "nothing sent"}, Key: k, Outcome: ledger.OutcomeNoEffect})
		require.NoError(t, err)
	}
	eu := func(pl *redrivetype.Plan) redrivetype.PlanGroup {
		for _, g := range pl.Groups {
			if g.Reason == deadletter.ReasonEffectUnknown {
				return g
			}
		}
		t.Fatalf("no effect_unknown group in %+v", pl.Groups)
		return redrivetype.PlanGroup{}
	}
	pl, err := r.Plan(ctx, PlanRequest{Actor: "viewer"})
	require.NoError(t, err)
	assert.Equal(t, map[ledger.Outcome]int{ledger.OutcomeNoEffect: 2}, eu(pl).Reconciled)

	// Key a runs again after its redrive and its call starts: unknown again.
	t1 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	_, err = led.Begin(ctx, a, "m2-"+a, "", t1, time.Minute)
	require.NoError(t, err)
	require.NoError(t, led.StartEffect(ctx, a, "m2-"+a, t1))
	_, err = led.DeadLettered(ctx, a, deadletter.ReasonEffectUnknown, t1)
	require.NoError(t, err)

	pl, err = r.Plan(ctx, PlanRequest{Actor: "viewer"})
	require.NoError(t, err)
	g := eu(pl)
	assert.Equal(t, map[ledger.Outcome]int{ledger.OutcomeNoEffect: 1}, g.Reconciled, "a's old reconciliation no longer holds")
	assert.Equal(t, "reconciled: 1 of 2 keys no effect (select moves them without an override), 1 not reconciled yet (left in the DLQ)", g.Why)

	// What plan says is what select does: it moves b and leaves a.
	res, err := r.Select(ctx, selReq(p, deadletter.ReasonEffectUnknown))
	require.NoError(t, err)
	assert.Equal(t, 1, res.Moved)
	require.Len(t, f.snapshot(q.HotURL), 1)
	assert.Equal(t, b, keyOf(t, f.snapshot(q.HotURL)[0].body))
	assert.Len(t, f.snapshot(q.DLQURL), 1)
}

// TestAnnotatePlanFromAHeldReport: a caller that holds the triage report
// (the console) gets the plan's past decisions as Plan gives them, without a
// scan and without an audit record: a no-effect reconciliation the ledger no
// longer holds (the key's call started again) is not counted.
func TestAnnotatePlanFromAHeldReport(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f := newFakeSQS()
	r, _, led := newRedriver(t, p, f, f.addPair(p))
	store := &audit.FileStore{Path: filepath.Join(t.TempDir(), "audit.jsonl")}
	r.cfg.Audit.Store = store
	r.cfg.Scan = func(context.Context) (*report.Report, error) {
		t.Error("a plan over a held report must not scan the DLQ")
		return nil, nil
	}
	ctx := context.Background()
	eu := deadletter.ReasonEffectUnknown
	for _, k := range []string{"k-again", "k-none", "k-open"} {
		effectUnknownKey(t, led, k)
	}
	who := Who{Owner: p.Owner, Why: "mail log: nothing sent"}
	for _, k := range []string{"k-again", "k-none"} {
		_, err := r.Reconcile(ctx, ReconcileRequest{Who: who, Key: k, Outcome: ledger.OutcomeNoEffect})
		require.NoError(t, err)
	}
	// k-again was redriven and its call started again: effect unknown anew.
	at := time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)
	_, err := led.Begin(ctx, "k-again", "m-2", "", at, time.Minute)
	require.NoError(t, err)
	require.NoError(t, led.StartEffect(ctx, "k-again", "m-2", at))
	_, err = led.DeadLettered(ctx, "k-again", eu, at)
	require.NoError(t, err)
	groups := []Group{{eu, "fp-eu", 3}, {deadletter.ReasonPolicyLimit, "fp-pl", 2}}
	_, err = r.Reject(ctx, RejectRequest{Who: Who{Owner: p.Owner, Why: "cost cap is right"}, Reasons: []deadletter.Reason{deadletter.ReasonPolicyLimit}, Groups: groups})
	require.NoError(t, err)
	before, err := store.Entries(ctx, p.Name)
	require.NoError(t, err)

	rep := &report.Report{Groups: []report.Group{
		{Reason: eu, Fingerprint: "fp-eu", Count: 3, IdempotencyKeys: []string{"k-again", "k-none", "k-open"}},
		{Reason: deadletter.ReasonPolicyLimit, Fingerprint: "fp-pl", Count: 2, LastSeen: time.Date(2026, 11, 29, 11, 0, 0, 0, time.UTC)},
	}}
	pl, err := r.Plan(ctx, PlanRequest{Actor: "viewer", Report: rep})
	require.NoError(t, err)
	assert.Empty(t, pl.DecisionsUnread)
	d, err := r.Decisions(ctx)
	require.NoError(t, err)
	assert.Len(t, d.Reconciled, 2, "the decisions as the audit holds them")
	assert.Equal(t, "mail log: nothing sent", d.Reconciled["k-none"].Why)
	by := map[string]redrivetype.PlanGroup{}
	for _, g := range pl.Groups {
		by[g.Fingerprint] = g
	}
	assert.Equal(t, 3, by["fp-eu"].Keys)
	assert.Equal(t, map[ledger.Outcome]int{ledger.OutcomeNoEffect: 1}, by["fp-eu"].Reconciled, "k-again is effect unknown anew")
	assert.Equal(t, "reconciled: 1 of 3 keys no effect (select moves them without an override), 2 not reconciled yet (left in the DLQ)", by["fp-eu"].Why)
	require.NotNil(t, by["fp-pl"].Rejected)
	assert.Equal(t, "cost cap is right", by["fp-pl"].Rejected.Why)
	assert.Empty(t, by["fp-pl"].Next, "nothing to do: already rejected")
	after, err := store.Entries(ctx, p.Name)
	require.NoError(t, err)
	assert.Equal(t, before, after, "a plan over a held report audits nothing")

	// An audit that cannot be read back: the plan says so and stands.
	r.cfg.Audit.Store = &memStore{}
	pl, err = r.Plan(ctx, PlanRequest{Actor: "viewer", Report: rep})
	require.NoError(t, err)
	assert.Contains(t, pl.DecisionsUnread, audit.ErrUnreadable.Error())
	for _, g := range pl.Groups {
		assert.Nil(t, g.Rejected)
	}
}
