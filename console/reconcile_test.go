package console

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/testkit/sqsfake"
	"github.com/agentdlq/agentdlq/triage"
)

// reconcileFixture is a console over 8 ordinary dead letters and one
// effect_unknown letter for each key, whose ledger entries are what the
// worker leaves (effect started, no receipt).
func reconcileFixture(t *testing.T, keys ...string) (*fixture, *triage.Group) {
	t.Helper()
	f := newFixtureOf(t, append(letters(t, 8), effectUnknownLetters(t, keys...)...))
	for _, k := range keys {
		effectUnknownKey(t, f.led, k)
	}
	for i := range f.r.Groups {
		if g := &f.r.Groups[i]; g.Reason == deadletter.ReasonEffectUnknown {
			require.Equal(t, keys, g.IdempotencyKeys, "triage lists the group's keys")
			return f, g
		}
	}
	t.Fatal("no effect_unknown group")
	return nil, nil
}

func reconcileValues(g *triage.Group, key, outcome, receipt, owner, why string) url.Values {
	return url.Values{"p": {"agent-tasks"}, "key": {key}, "r": {string(g.Reason)}, "fp": {g.Fingerprint},
		"outcome": {outcome}, "receipt": {receipt}, "owner": {owner}, "why": {why}}
}

func TestReconcileInTheConsole(t *testing.T) {
	t.Parallel()
	f, g := reconcileFixture(t, "eu-a", "eu-b", "eu-c")
	owner := f.p.Owner
	groupPath := "/group?p=agent-tasks&r=effect_unknown&fp=" + g.Fingerprint

	// The group lists its keys with their ledger state and a way to reconcile each.
	body := f.get(t, groupPath).Body.String()
	assert.Contains(t, body, `id="keys-table"`)
	for _, k := range []string{"eu-a", "eu-b", "eu-c"} {
		assert.Contains(t, body, `/reconcile?p=agent-tasks&amp;key=`+k+`&amp;tenant=tenant-1&amp;r=effect_unknown&amp;fp=`+g.Fingerprint)
	}
	assert.Equal(t, 3, strings.Count(body, `<span class="badge no">effect_unknown</span>`))
	assert.Contains(t, body, "0/3 keys reconciled")

	// The key's page and the letter's page carry the form.
	w := f.get(t, "/reconcile?p=agent-tasks&key=eu-a&r=effect_unknown&fp="+g.Fingerprint)
	require.Equal(t, http.StatusOK, w.Code)
	assert.Contains(t, w.Body.String(), `<form method="post" action="/reconcile"`)
	assert.Contains(t, w.Body.String(), `name="csrf" value="`+csrfToken(f.s.Token())+`"`)
	assert.Contains(t, w.Body.String(), "eu-eu-a", "the dead letter that carries the key")
	letter := f.get(t, "/letter?p=agent-tasks&id=eu-eu-a").Body.String()
	assert.Contains(t, letter, `action="/reconcile"`)
	assert.Contains(t, letter, `<input type="hidden" name="id" value="eu-eu-a">`)
	assert.Empty(t, f.audit.all(), "page views record nothing")

	// No effect: recorded in the ledger and the audit; the page says what changed.
	w = f.post(t, "/reconcile", reconcileValues(g, "eu-a", "no_effect", "", owner, "mail log: nothing sent (INC-77)"))
	require.Equal(t, http.StatusSeeOther, w.Code, w.Body.String())
	done := w.Header().Get("Location")
	assert.Regexp(t, `^/reconcile\?done=[0-9a-f]{16}&fp=[0-9a-f]+&key=eu-a&p=agent-tasks&r=effect_unknown&tenant=tenant-1$`, done)
	w = f.get(t, done)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	body = w.Body.String()
	assert.Contains(t, body, "<b>Recorded:</b> eu-a is reconciled as <b>no_effect</b> by "+owner)
	assert.Regexp(t, `effect started</td><td data-k="before">true</td><td data-k="after"><b>false</b>`, body)
	assert.Contains(t, body, `<td class="lead">state</td><td data-k="before">dead_lettered</td>`)
	assert.Contains(t, body, "Redrive effect_unknown")
	assert.Contains(t, body, `<span class="badge yes" id="key-state">reconciled: no_effect</span>`)
	e, found, err := f.led.Get(context.Background(), "eu-a")
	require.NoError(t, err)
	require.True(t, found)
	assert.True(t, e.NoEffect())
	assert.Equal(t, owner, e.ReconciledBy)

	// Effect confirmed, with its receipt.
	w = f.postFollow(t, "/reconcile", reconcileValues(g, "eu-b", "effect_confirmed", "msg-7731", owner, "mail log: sent as msg-7731"))
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.Contains(t, w.Body.String(), "the task never runs again")
	e, _, err = f.led.Get(context.Background(), "eu-b")
	require.NoError(t, err)
	assert.True(t, e.EffectConfirmed())
	assert.Equal(t, "msg-7731", e.Receipt)

	// The same again: a no-op, said so.
	w = f.postFollow(t, "/reconcile", reconcileValues(g, "eu-a", "no_effect", "", owner, "mail log: nothing sent (INC-77)"))
	require.Equal(t, http.StatusOK, w.Code)
	assert.Contains(t, w.Body.String(), "<b>Already recorded:</b>")

	// Reloading the first result reads it again and records nothing: the
	// POST redirected to a page (post/redirect/get).
	w = f.get(t, done)
	require.Equal(t, http.StatusOK, w.Code)
	assert.Contains(t, w.Body.String(), "<b>Recorded:</b> eu-a is reconciled as <b>no_effect</b> by "+owner, "the result as it was")
	assert.Contains(t, w.Body.String(), `<td class="lead">state</td><td data-k="before">dead_lettered</td>`)
	// An id the console does not keep (forgotten, or made up) shows the
	// key as it is, without a result.
	w = f.get(t, "/reconcile?p=agent-tasks&key=eu-a&done=0123456789abcdef")
	require.Equal(t, http.StatusOK, w.Code)
	assert.NotContains(t, w.Body.String(), `id="outcome"`)
	assert.Contains(t, w.Body.String(), `reconciled: no_effect`)

	recs := f.audit.all()
	require.Len(t, recs, 3)
	for _, rec := range recs {
		assert.Equal(t, audit.ActionReconcile, rec.Action)
		assert.Equal(t, audit.OutcomeOK, rec.Outcome)
		assert.Equal(t, owner, rec.Actor)
		assert.Equal(t, &audit.Caller{Check: audit.CallerLocal, OSUser: audit.OSUser()}, rec.Caller, "who ran the console")
	}
	// The audit names the key's scope (issue 28): its tenant, pipeline
	// and ledger key.
	scope := func(k string) map[string]string {
		return map[string]string{"idempotency_key": k, "tenant": "tenant-1", "pipeline": "agent-tasks", "ledger_key": ledger.Key("agent-tasks", "tenant-1", k)}
	}
	want := scope("eu-a")
	want["outcome"] = "no_effect"
	assert.Equal(t, want, recs[0].Detail)
	assert.Equal(t, "mail log: nothing sent (INC-77)", recs[0].Why)
	want = scope("eu-b")
	want["outcome"], want["receipt"] = "effect_confirmed", "msg-7731"
	assert.Equal(t, want, recs[1].Detail)
	assert.Equal(t, "eu-a", recs[2].Detail["idempotency_key"], "a repeat is audited too")

	// The group and the plan now show the decisions, and what comes next.
	body = f.get(t, groupPath).Body.String()
	assert.Contains(t, body, `<span class="badge yes">reconciled: no_effect</span>`)
	assert.Contains(t, body, `<span class="badge yes">reconciled: effect_confirmed</span>`)
	assert.Contains(t, body, "no_effect by "+owner)
	assert.Contains(t, body, "mail log: nothing sent (INC-77)", "the why, from the audit")
	assert.Equal(t, 1, strings.Count(body, `href="/reconcile?`), "only eu-c is left to reconcile")
	assert.Contains(t, body, "2/3 keys reconciled (1 effect_confirmed, 1 no_effect)")
	plan := f.get(t, "/redrive?p=agent-tasks&r=effect_unknown").Body.String()
	assert.Contains(t, plan, "2/3 keys reconciled (1 effect_confirmed, 1 no_effect)")
	assert.Contains(t, plan, "reconciled: 1 of 3 keys no effect (select moves them without an override), 1 effect confirmed (never moved), 1 not reconciled yet (left in the DLQ)")
	// The next step is data the console renders as a link to the form that takes it.
	assert.Contains(t, plan, `next: <a href="/redrive?fp=`+g.Fingerprint+`&amp;p=agent-tasks&amp;r=effect_unknown">Redrive, a canary of 1 first…</a>`)
	assert.Contains(t, plan, "reconcile each key first")
	assert.NotContains(t, plan, "needs an owner", "reconciled keys move without an override")
	// A key no longer effect_unknown has no form.
	assert.NotContains(t, f.get(t, "/letter?p=agent-tasks&id=eu-eu-a").Body.String(), `action="/reconcile"`)
	assert.Contains(t, f.get(t, "/reconcile?p=agent-tasks&key=eu-b").Body.String(), `id="closed"`)
}

func TestReconcileRefusals(t *testing.T) {
	t.Parallel()
	f, g := reconcileFixture(t, "eu-a", "eu-b")
	owner := f.p.Owner
	ctx := context.Background()
	// eu-leased: a delivery holds it now, its call started.
	_, err := f.led.Begin(ctx, "eu-leased", "m-live", "", t0, 10*time.Minute)
	require.NoError(t, err)
	require.NoError(t, f.led.StartEffect(ctx, "eu-leased", "m-live", t0))
	// eu-a was reconciled as no effect.
	require.Equal(t, http.StatusSeeOther, f.post(t, "/reconcile", reconcileValues(g, "eu-a", "no_effect", "", owner, "mail log: nothing sent")).Code)

	raw := func(form url.Values, origin string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:8080/reconcile", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(&http.Cookie{Name: CookieName, Value: f.s.Token()})
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		w := httptest.NewRecorder()
		f.s.ServeHTTP(w, req)
		return w
	}
	withCSRF := func(v url.Values) url.Values { v.Set("csrf", csrfToken(f.s.Token())); return v }

	tests := []struct {
		name    string
		send    func() *httptest.ResponseRecorder
		code    int
		want    []string
		refusal redrive.Code // "": not audited (refused before redrive)
	}{
		{name: "no CSRF token", code: http.StatusForbidden, want: []string{"CSRF token is missing or wrong"},
			send: func() *httptest.ResponseRecorder {
				return raw(reconcileValues(g, "eu-b", "no_effect", "", owner, "x"), "")
			}},
		{name: "another origin", code: http.StatusForbidden, want: []string{"another origin"},
			send: func() *httptest.ResponseRecorder {
				return raw(withCSRF(reconcileValues(g, "eu-b", "no_effect", "", owner, "x")), "http://evil.example")
			}},
		{name: "wrong owner", code: http.StatusUnprocessableEntity, refusal: redrive.CodeOwner,
			want: []string{`Owner &#34;mallory&#34; may not reconcile the ledger keys of pipeline &#34;agent-tasks&#34;`},
			send: func() *httptest.ResponseRecorder {
				return f.post(t, "/reconcile", reconcileValues(g, "eu-b", "no_effect", "", "mallory", "x"))
			}},
		{name: "no why", code: http.StatusUnprocessableEntity, refusal: redrive.CodeWhy, want: []string{"say how the effect was reconciled"},
			send: func() *httptest.ResponseRecorder {
				return f.post(t, "/reconcile", reconcileValues(g, "eu-b", "no_effect", "", owner, " "))
			}},
		{name: "confirmed without a receipt", code: http.StatusUnprocessableEntity, refusal: redrive.CodeBadInput, want: []string{"needs the effect&#39;s receipt"},
			send: func() *httptest.ResponseRecorder {
				return f.post(t, "/reconcile", reconcileValues(g, "eu-b", "effect_confirmed", "", owner, "x"))
			}},
		{name: "conflicting outcome", code: http.StatusUnprocessableEntity, refusal: redrive.CodeReconciled,
			want: []string{"another outcome was recorded for this key before: ", "a reconciliation is not changed", "was reconciled as no_effect by " + owner, "reconciled: no_effect"},
			send: func() *httptest.ResponseRecorder {
				return f.post(t, "/reconcile", reconcileValues(g, "eu-a", "effect_confirmed", "msg-1", owner, "x"))
			}},
		{name: "live lease", code: http.StatusUnprocessableEntity, refusal: redrive.CodeNotEffectUnknown,
			want: []string{"there is nothing to reconcile for this key now", "a delivery holds &#34;eu-leased&#34; until", "in progress (a delivery holds it)"},
			send: func() *httptest.ResponseRecorder {
				return f.post(t, "/reconcile", reconcileValues(g, "eu-leased", "no_effect", "", owner, "x"))
			}},
		{name: "unknown key", code: http.StatusUnprocessableEntity, refusal: redrive.CodeNotEffectUnknown,
			want: []string{"the ledger holds no entry for &#34;scope:11:agent-tasks:0::nope&#34;", "no ledger entry"},
			send: func() *httptest.ResponseRecorder {
				return f.post(t, "/reconcile", reconcileValues(g, "nope", "no_effect", "", owner, "x"))
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := len(f.audit.all())
			w := tc.send()
			require.Equal(t, tc.code, w.Code, w.Body.String())
			for _, s := range tc.want {
				assert.Contains(t, w.Body.String(), s)
			}
			assert.NotContains(t, w.Body.String(), "<script")
			recs := f.audit.all()
			if tc.refusal == "" {
				assert.Len(t, recs, before, "refused before it reached an action: nothing to audit")
				return
			}
			assert.Contains(t, w.Body.String(), "Reconcile refused ("+string(tc.refusal)+")")
			require.Len(t, recs, before+1)
			rec := recs[before]
			assert.Equal(t, audit.ActionReconcile, rec.Action)
			assert.Equal(t, audit.OutcomeRefused, rec.Outcome)
			assert.Contains(t, rec.Error, string(tc.refusal))
			assert.NotNil(t, rec.Caller)
		})
	}
	// Nothing refused changed the ledger.
	e, _, err := f.led.Get(ctx, "eu-b")
	require.NoError(t, err)
	assert.True(t, e.EffectUnknown(t0), "eu-b untouched")
	e, _, err = f.led.Get(ctx, "eu-a")
	require.NoError(t, err)
	assert.True(t, e.NoEffect(), "eu-a keeps its reconciliation")
	e, _, err = f.led.Get(ctx, "eu-leased")
	require.NoError(t, err)
	assert.Equal(t, ledger.StateInProgress, e.State)

	// A console started without a ledger: refused in words, not a 500.
	f.s.cfg.Ledger = nil
	w := f.post(t, "/reconcile", reconcileValues(g, "eu-b", "no_effect", "", owner, "x"))
	assert.Equal(t, http.StatusUnprocessableEntity, w.Code)
	assert.Contains(t, w.Body.String(), "no ledger: the ledger counts every redrive")
	assert.Contains(t, w.Body.String(), "no ledger configured")
}

func TestPastDecisionsShown(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 8)
	owner := f.p.Owner
	// A rejection through the console, and an older one that dead letters
	// arrived after.
	w := f.post(t, "/reject", url.Values{"p": {"agent-tasks"}, "r": {"schema_invalid"}, "owner": {owner}, "why": {"producer bug, tenant told (INC-9)"}})
	require.Equal(t, http.StatusSeeOther, w.Code, w.Body.String())
	require.NoError(t, f.audit.Append(context.Background(), audit.Entry{Time: t0.Add(-24 * time.Hour), Actor: owner, Pipeline: "agent-tasks",
		Action: audit.ActionReject, Reasons: []string{"budget_exhausted"}, Why: "quota is final", Outcome: audit.OutcomeOK}))

	plan := f.get(t, "/redrive?p=agent-tasks&r=schema_invalid").Body.String()
	assert.Contains(t, plan, "<b>rejected</b> by "+owner+" at "+t0.Format("2006-01-02 15:04:05Z"))
	assert.Contains(t, plan, "why: producer bug, tenant told (INC-9)")
	assert.Contains(t, plan, "nothing to do")
	again := f.get(t, "/redrive?p=agent-tasks&r=budget_exhausted").Body.String()
	assert.Contains(t, again, "why: quota is final")
	assert.Contains(t, again, "but dead letters arrived since")
	assert.Contains(t, again, "decide again")
	assert.NotContains(t, again, "nothing to do")

	for _, g := range f.r.Groups {
		if g.Reason == deadletter.ReasonSchemaInvalid {
			body := f.get(t, "/group?p=agent-tasks&r=schema_invalid&fp="+g.Fingerprint).Body.String()
			assert.Contains(t, body, `<dd id="decision"><b>rejected</b> by `+owner)
			assert.Contains(t, body, "nothing to do")
		}
	}
	assert.Len(t, f.audit.all(), 2, "page views record nothing")

	// An audit that cannot be read back: the pages say so and stand.
	f.s.cfg.Audit = func(string) AuditLog { return struct{ AuditLog }{f.audit} }
	w = f.get(t, "/redrive?p=agent-tasks&r=schema_invalid")
	require.Equal(t, http.StatusOK, w.Code)
	assert.Contains(t, w.Body.String(), "Past decisions not shown: the audit could not be read ("+audit.ErrUnreadable.Error())
	assert.NotContains(t, w.Body.String(), "<b>rejected</b>")
}

// fakeSTS answers GetCallerIdentity with a fixed ARN.
type fakeSTS struct{ arn string }

func (s fakeSTS) GetCallerIdentity(context.Context, *sts.GetCallerIdentityInput, ...func(*sts.Options)) (*sts.GetCallerIdentityOutput, error) {
	return &sts.GetCallerIdentityOutput{Arn: aws.String(s.arn), Account: aws.String("123456789012")}, nil
}

// In AWS the console's reconcile is gated on the caller's role too, and
// every record names the STS caller, the refusals of the owner check
// included, as a reveal's does (and a reject's).
func TestReconcileInAWSRecordsTheCaller(t *testing.T) {
	t.Parallel()
	f, g := reconcileFixture(t, "eu-a")
	const arn = "arn:aws:sts::123456789012:assumed-role/AgentTasksRedrive/alice"
	fake := f.s.cfg.SQS.(*sqsfake.Fake)
	fake.InAWS, f.s.cfg.STS = true, fakeSTS{arn: arn}
	fake.Queue("http://q/dlq").Tags[pipeline.TagRedriveRole] = "AgentTasksRedrive"
	want := &audit.Caller{Check: audit.CallerSTS, ARN: arn, Account: "123456789012", OSUser: audit.OSUser()}

	w := f.post(t, "/reconcile", reconcileValues(g, "eu-a", "no_effect", "", "mallory", "x"))
	require.Equal(t, http.StatusUnprocessableEntity, w.Code)
	w = f.post(t, "/reconcile", reconcileValues(g, "eu-a", "no_effect", "", f.p.Owner, "mail log: nothing sent"))
	require.Equal(t, http.StatusSeeOther, w.Code, w.Body.String())
	recs := f.audit.all()
	require.Len(t, recs, 2)
	assert.Equal(t, []audit.Outcome{audit.OutcomeRefused, audit.OutcomeOK}, []audit.Outcome{recs[0].Outcome, recs[1].Outcome})
	for _, rec := range recs {
		assert.Equal(t, want, rec.Caller, rec.Outcome)
	}

	// Another role: refused by the identity check, the ledger untouched.
	f.s.cfg.STS = fakeSTS{arn: "arn:aws:sts::123456789012:assumed-role/PowerUser/mallory"}
	effectUnknownKey(t, f.led, "eu-b")
	w = f.post(t, "/reconcile", reconcileValues(g, "eu-b", "no_effect", "", f.p.Owner, "x"))
	require.Equal(t, http.StatusUnprocessableEntity, w.Code)
	assert.Contains(t, w.Body.String(), "Reconcile refused ("+string(redrive.CodeIdentity)+")")
	e, _, err := f.led.Get(context.Background(), "eu-b")
	require.NoError(t, err)
	assert.True(t, e.EffectUnknown(t0))

	// A reject refused by the owner check names the STS caller too.
	f.s.cfg.STS = fakeSTS{arn: arn}
	w = f.post(t, "/reject", url.Values{"p": {"agent-tasks"}, "r": {"schema_invalid"}, "owner": {"mallory"}, "why": {"x"}})
	require.Equal(t, http.StatusUnprocessableEntity, w.Code)
	recs = f.audit.all()
	assert.Equal(t, audit.ActionReject, recs[len(recs)-1].Action)
	assert.Equal(t, want, recs[len(recs)-1].Caller)
}
