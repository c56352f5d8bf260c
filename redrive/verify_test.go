package redrive

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/agenttask"
	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/functions/sampleworker"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
	"github.com/agentdlq/agentdlq/triage"
)

// fakeVerifier answers by key, with a behaviour per key: every way a
// verifier can answer or fail.
type fakeVerifier struct{ calls atomic.Int32 }

func (f *fakeVerifier) verify(ctx context.Context, c agenttask.Call) (agenttask.Verification, error) {
	f.calls.Add(1)
	switch c.Key {
	case "k-confirmed":
		return agenttask.Verification{Verdict: agenttask.VerdictConfirmed, Receipt: "msg-7731", Evidence: "relay log: 1 message for the key"}, nil
	case "k-none":
		return agenttask.Verification{Verdict: agenttask.VerdictNoEffect, Evidence: "relay log: the call was refused, nothing sent"}, nil
	case "k-unknown":
		return agenttask.Verification{Verdict: agenttask.VerdictUnknown, Evidence: "relay log has a gap"}, nil
	case "k-err":
		return agenttask.Verification{}, errors.New("relay API: 503")
	case "k-panic":
		panic("verifier bug")
	case "k-bad":
		return agenttask.Verification{Verdict: agenttask.VerdictConfirmed, Evidence: "seen"}, nil // no receipt
	case "k-bare":
		return agenttask.Verification{Verdict: agenttask.VerdictNoEffect}, nil // no evidence
	case "k-slow":
		<-ctx.Done()
		return agenttask.Verification{}, ctx.Err()
	case "k-stuck": // ignores its context
		time.Sleep(time.Second)
		return agenttask.Verification{Verdict: agenttask.VerdictNoEffect, Evidence: "too late"}, nil
	}
	return agenttask.Verification{}, errors.New("unexpected key " + c.Key)
}

// withVerifier is the sample catalog with verify as email.send's verifier.
func withVerifier(verify func(context.Context, agenttask.Call) (agenttask.Verification, error)) agenttask.Catalog {
	catalog := sampleworker.Catalog(nil)
	mail := catalog["email.send"]
	mail.Verify = verify
	catalog["email.send"] = mail
	return catalog
}

// newVerifyRig is a Redriver on the fake SQS whose DLQ holds an
// effect_unknown dead letter of email.send for each of keys, each key
// effect unknown in the ledger.
func newVerifyRig(t *testing.T, keys ...string) (*Redriver, *memStore, *ledger.Memory, *fakeSQS, pipeline.Queues) {
	t.Helper()
	p := testPipeline(t, "agent-tasks")
	f := newFakeSQS()
	q := f.addPair(p)
	r, store, led := newRedriver(t, p, f, q)
	for _, k := range keys {
		d := newDeadLetter(t, k, "email.send", deadletter.ReasonEffectUnknown, 0, "")
		f.put(q.DLQURL, d.body, d.attrs, "")
		effectUnknownKey(t, led, k)
	}
	return r, store, led, f, q
}

func TestVerifyProposesThenApplies(t *testing.T) {
	t.Parallel()
	verifiable := []string{"k-confirmed", "k-none", "k-unknown", "k-err", "k-panic", "k-bad", "k-bare", "k-slow", "k-stuck"}
	r, store, led, f, q := newVerifyRig(t, verifiable...)
	p := r.cfg.Pipeline
	ctx := context.Background()
	eu := deadletter.ReasonEffectUnknown
	d := newDeadLetter(t, "k-confirmed", "email.send", eu, 0, "") // a second letter of a key
	f.put(q.DLQURL, d.body, d.attrs, "")
	for _, k := range []string{"k-noverifier", "k-reconciled", "k-nostart", "k-noentry"} {
		tool := "email.send"
		if k == "k-noverifier" {
			tool = "file.write"
		}
		d := newDeadLetter(t, k, tool, eu, 0, "")
		f.put(q.DLQURL, d.body, d.attrs, "")
	}
	effectUnknownKey(t, led, "k-noverifier")
	effectUnknownKey(t, led, "k-reconciled")
	_, err := led.Reconcile(ctx, "k-reconciled", ledger.Reconciliation{Outcome: ledger.OutcomeNoEffect, By: p.Owner}, time.Date(2026, 11, 29, 11, 30, 0, 0, time.UTC))
	require.NoError(t, err)
	_, err = led.DeadLettered(ctx, "k-nostart", eu, time.Date(2026, 11, 29, 11, 0, 0, 0, time.UTC))
	require.NoError(t, err)
	other := newDeadLetter(t, "k-budget", "web.search", deadletter.ReasonBudgetExhausted, 0, "")
	f.put(q.DLQURL, other.body, other.attrs, "")

	fv := &fakeVerifier{}
	catalog := withVerifier(fv.verify)
	who := Who{Owner: p.Owner, Why: "INC-77: check the mail relay"}
	keys := func() map[string]ledger.Entry {
		out := map[string]ledger.Entry{}
		for _, k := range append(verifiable, "k-noverifier", "k-reconciled", "k-nostart") {
			e, _, err := led.Get(ctx, k)
			require.NoError(t, err)
			out[k] = e
		}
		return out
	}
	before := keys()

	// Refusals: nothing runs, nothing changes, each is audited.
	for _, tt := range []struct {
		name    string
		catalog agenttask.Catalog
		req     VerifyRequest
		code    redrivetype.Code
	}{
		{"a stranger", catalog, VerifyRequest{Who: Who{Owner: "mallory", Why: "x"}}, redrivetype.CodeOwner},
		{"no why", catalog, VerifyRequest{Who: Who{Owner: p.Owner}}, redrivetype.CodeWhy},
		{"no such reason", catalog, VerifyRequest{Who: who, Reason: "maybe"}, redrivetype.CodeUnknownReason},
		{"no tools", nil, VerifyRequest{Who: who}, redrivetype.CodeBadInput},
		{"a negative timeout", catalog, VerifyRequest{Who: who, Timeout: -time.Second}, redrivetype.CodeBadInput},
	} {
		r.cfg.Catalog = tt.catalog
		_, err := r.Verify(ctx, tt.req)
		require.ErrorIs(t, err, ErrRefused, tt.name)
		assert.Equal(t, tt.code, RefusalCode(err), "%s: %v", tt.name, err)
	}
	assert.Zero(t, fv.calls.Load(), "a refusal runs no verifier")
	assert.Equal(t, before, keys(), "a refusal changes nothing")
	recs := store.all()
	require.Len(t, recs, 5)
	for _, rec := range recs {
		assert.Equal(t, audit.ActionReconcile, rec.Action)
		assert.Equal(t, audit.OutcomeRefused, rec.Outcome)
	}

	// The proposal: a verdict a key, nothing written but its audit record.
	r.cfg.Catalog = catalog
	var turns [][2]int
	req := VerifyRequest{Who: who, Timeout: 50 * time.Millisecond, OnKey: func(n, keys int) { turns = append(turns, [2]int{n, keys}) }}
	res, err := r.Verify(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, before, keys(), "a proposal changes nothing")
	require.Len(t, turns, 13, "OnKey once a key, skipped ones too")
	for i, turn := range turns {
		assert.Equal(t, [2]int{i + 1, 13}, turn)
	}
	assert.False(t, res.Applied)
	assert.Equal(t, eu, res.Reason)
	assert.Equal(t, 15, res.Seen)
	got := map[string]redrivetype.Verified{}
	for _, k := range res.Keys {
		got[k.Key] = k
	}
	require.Len(t, got, 13, "one row a key of the reason; the budget_exhausted letter is not one")
	verdicts := map[string]agenttask.Verdict{
		"k-confirmed": agenttask.VerdictConfirmed, "k-none": agenttask.VerdictNoEffect,
		"k-unknown": agenttask.VerdictUnknown, "k-err": agenttask.VerdictUnknown, "k-panic": agenttask.VerdictUnknown,
		"k-bad": agenttask.VerdictUnknown, "k-bare": agenttask.VerdictUnknown, "k-slow": agenttask.VerdictUnknown,
		"k-stuck": agenttask.VerdictUnknown, "k-noverifier": agenttask.VerdictUnknown,
	}
	for k, v := range verdicts {
		assert.Equal(t, v, got[k].Verdict, "%s: %+v", k, got[k])
		assert.Empty(t, got[k].Skipped, k)
		assert.NotEmpty(t, got[k].Evidence, k)
		assert.Empty(t, got[k].Reconciled, "%s: proposed only", k)
	}
	assert.Equal(t, 2, got["k-confirmed"].Letters)
	assert.Equal(t, "msg-7731", got["k-confirmed"].Receipt)
	assert.Equal(t, "email.send", got["k-confirmed"].Tool)
	assert.Contains(t, got["k-err"].Evidence, "relay API: 503")
	assert.Contains(t, got["k-panic"].Evidence, "panicked: verifier bug")
	assert.Contains(t, got["k-bad"].Evidence, "without the effect's receipt")
	assert.Contains(t, got["k-bare"].Evidence, "without evidence")
	assert.Contains(t, got["k-slow"].Evidence, "deadline exceeded")
	assert.Contains(t, got["k-stuck"].Evidence, "did not answer within 50ms")
	assert.Contains(t, got["k-noverifier"].Evidence, "no verifier is registered for file.write")
	assert.Contains(t, got["k-reconciled"].Skipped, "reconciled as no_effect by platform-oncall")
	assert.Contains(t, got["k-nostart"].Skipped, "no mutating call was started")
	assert.Contains(t, got["k-noentry"].Skipped, "the ledger holds no entry")
	assert.Equal(t, map[string]int{"confirmed": 1, "no_effect": 1, "unknown": 8, "skipped": 3}, res.Counts)
	recs = store.all()
	require.Len(t, recs, 6)
	last := recs[5]
	assert.Equal(t, audit.ActionReconcile, last.Action)
	assert.Equal(t, audit.OutcomeDryRun, last.Outcome)
	assert.Equal(t, "propose", last.Detail["verify"])
	assert.Empty(t, last.Detail["idempotency_key"], "not a decision on a key")
	assert.Equal(t, 1, last.Counts["confirmed"])

	// Apply: the definite verdicts are reconciled, with their evidence; the
	// unknown ones are left alone.
	req.Apply = true
	res, err = r.Verify(ctx, req)
	require.NoError(t, err)
	after := keys()
	assert.True(t, after["k-confirmed"].EffectConfirmed())
	assert.Equal(t, "msg-7731", after["k-confirmed"].Receipt)
	assert.True(t, after["k-none"].NoEffect())
	for _, k := range []string{"k-unknown", "k-err", "k-panic", "k-bad", "k-bare", "k-slow", "k-stuck", "k-noverifier", "k-reconciled", "k-nostart"} {
		assert.Equal(t, before[k], after[k], "%s is left alone", k)
	}
	assert.Equal(t, 2, res.Counts["reconciled"])
	recs = store.all()[6:]
	require.Len(t, recs, 3, "a reconcile record a reconciled key, then the summary")
	for _, rec := range recs[:2] {
		assert.Equal(t, audit.ActionReconcile, rec.Action)
		assert.Equal(t, audit.OutcomeOK, rec.Outcome)
		assert.Equal(t, who.Why, rec.Why)
		assert.Contains(t, rec.Detail["evidence"], "email.send verifier: relay log")
	}
	assert.Equal(t, "k-confirmed", recs[0].Detail["idempotency_key"])
	assert.Equal(t, "msg-7731", recs[0].Detail["receipt"])
	assert.Equal(t, string(ledger.OutcomeNoEffect), recs[1].Detail["outcome"])
	assert.Equal(t, "apply", recs[2].Detail["verify"])
	assert.Equal(t, audit.OutcomeOK, recs[2].Outcome)
	assert.Len(t, decisionsFrom(store.all()).Reconciled, 2, "the plan reads the two as the owner's decisions, and the summary as none")

	// Again: both are reconciled now, skipped; nothing more is written.
	res, err = r.Verify(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, 5, res.Counts["skipped"])
	assert.Zero(t, res.Counts["reconciled"])
	assert.Len(t, store.all(), 10, "the summary only")
	assert.Len(t, f.snapshot(q.DLQURL), 15, "verify moves no letter")
}

// A letter whose args are not those the ledger began the key with is
// unknown: its verifier is not asked, nothing is reconciled.
func TestVerifyRefusesALetterOfOtherArgs(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f := newFakeSQS()
	q := f.addPair(p)
	r, _, led := newRedriver(t, p, f, q)
	ctx := context.Background()
	t0 := time.Date(2026, 11, 29, 11, 0, 0, 0, time.UTC)
	for _, k := range []string{"k-confirmed", "k-none"} {
		d := newDeadLetter(t, k, "email.send", deadletter.ReasonEffectUnknown, 0, "")
		f.put(q.DLQURL, d.body, d.attrs, "")
		task, err := agenttask.DecodeTask([]byte(d.body), nil)
		require.NoError(t, err)
		digest, err := agenttask.ArgsDigest(task.Args)
		require.NoError(t, err)
		if k == "k-confirmed" {
			digest, err = agenttask.ArgsDigest([]byte(`{"q":"another task"}`))
			require.NoError(t, err)
		}
		_, err = led.Begin(ctx, k, "m-"+k, digest, t0, time.Minute)
		require.NoError(t, err)
		require.NoError(t, led.StartEffect(ctx, k, "m-"+k, t0))
		_, err = led.DeadLettered(ctx, k, deadletter.ReasonEffectUnknown, t0)
		require.NoError(t, err)
	}
	fv := &fakeVerifier{}
	r.cfg.Catalog = withVerifier(fv.verify)
	res, err := r.Verify(ctx, VerifyRequest{Who: Who{Owner: p.Owner, Why: "x"}, Apply: true})
	require.NoError(t, err)
	require.Len(t, res.Keys, 2)
	assert.Equal(t, agenttask.VerdictUnknown, res.Keys[0].Verdict)
	assert.Contains(t, res.Keys[0].Evidence, "args digest differs")
	assert.Empty(t, res.Keys[0].Reconciled)
	assert.Equal(t, ledger.OutcomeNoEffect, res.Keys[1].Reconciled, "the digest matches: verified")
	assert.Equal(t, int32(1), fv.calls.Load(), "the mismatched key's verifier is not asked")
}

// A refusal of one key's reconciliation is on its row; the others go on.
func TestVerifyApplyRecordsARefusalOnItsRow(t *testing.T) {
	t.Parallel()
	r, _, led, _, _ := newVerifyRig(t, "k-confirmed", "k-none")
	ctx := context.Background()
	// Between the verifier's answer and the write, someone reconciles
	// k-confirmed otherwise: the conditional write refuses.
	fv := &fakeVerifier{}
	r.cfg.Catalog = withVerifier(func(ctx context.Context, c agenttask.Call) (agenttask.Verification, error) {
		if c.Key == "k-confirmed" {
			_, err := led.Reconcile(ctx, c.Key, ledger.Reconciliation{Outcome: ledger.OutcomeNoEffect, By: "someone"}, time.Date(2026, 11, 29, 11, 30, 0, 0, time.UTC))
			require.NoError(t, err)
		}
		return fv.verify(ctx, c)
	})
	res, err := r.Verify(ctx, VerifyRequest{Who: Who{Owner: r.cfg.Pipeline.Owner, Why: "x"}, Apply: true})
	require.NoError(t, err)
	require.Len(t, res.Keys, 2)
	assert.Equal(t, "k-confirmed", res.Keys[0].Key)
	assert.Contains(t, res.Keys[0].Refused, "already_reconciled")
	assert.Empty(t, res.Keys[0].Reconciled)
	assert.Equal(t, ledger.OutcomeNoEffect, res.Keys[1].Reconciled)
	assert.Equal(t, 1, res.Counts["refused"])
}

// A letter held by another reader: the scan is partial. What was seen is
// verified (and applied) and stands; the outcome says when to rerun.
func TestVerifyOnAPartialScan(t *testing.T) {
	t.Parallel()
	r, store, _, f, q := newVerifyRig(t, "k-confirmed", "k-none")
	ctx := context.Background()
	// Another reader holds one letter.
	out, err := f.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &q.DLQURL, MaxNumberOfMessages: 1, VisibilityTimeout: 300})
	require.NoError(t, err)
	require.Len(t, out.Messages, 1)

	r.cfg.Catalog = withVerifier((&fakeVerifier{}).verify)
	res, err := r.Verify(ctx, VerifyRequest{Who: Who{Owner: r.cfg.Pipeline.Owner, Why: "x"}, Apply: true})
	require.ErrorIs(t, err, triage.ErrScanPartial)
	assert.NotErrorIs(t, err, ErrRefused)
	var pe *redrivetype.PartialError
	require.ErrorAs(t, err, &pe)
	require.NotNil(t, res)
	require.Len(t, res.Keys, 1, "the letter seen")
	assert.NotEmpty(t, res.Keys[0].Reconciled, "what was seen is applied and stands")
	recs := store.all()
	last := recs[len(recs)-1]
	assert.Equal(t, audit.OutcomePartial, last.Outcome)
	assert.Equal(t, "apply", last.Detail["verify"])
}
