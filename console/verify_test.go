package console

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/agenttask"
	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/functions/sampleworker"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/local/esm"
	"github.com/agentdlq/agentdlq/local/workload"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
	"github.com/agentdlq/agentdlq/testkit/localtest"
	"github.com/agentdlq/agentdlq/testkit/sqsfake"
	"github.com/agentdlq/agentdlq/triage/store"
)

// TestVerifyInTheConsoleOnEmulators walks "Verify with the tools" on the
// emulators, as TestVerifyWalkOnEmulators walks `agentdlq ledger verify`:
// the real worker, with its local effect store, dead-letters two email.send
// tasks as effect_unknown, one whose call reached the relay and did nothing
// (timeout_after_effect), one whose call took effect and lost its reply
// (lost_reply); a third effect_unknown letter's call never reached this
// store. The form on the group's page proposes no_effect, confirmed and
// unknown and changes nothing; refusals change nothing; "Apply the definite
// ones" reconciles the two, with the verifiers' evidence, and leaves the
// third alone.
func TestVerifyInTheConsoleOnEmulators(t *testing.T) {
	cfg := localtest.AWS(t)
	ctx := context.Background()
	p := workload.Quick(testPipeline(t))
	client := sqs.NewFromConfig(cfg)
	q := localtest.Queues(t, cfg, p)
	led := ledger.NewDynamo(dynamodb.NewFromConfig(cfg), localtest.Table(t, cfg))
	effects := sampleworker.EffectDir{Dir: t.TempDir()}

	// The worker with its effect store, as Lambda's event source runs it,
	// until the two tasks are dead letters.
	w, err := sampleworker.New(sampleworker.Config{Pipeline: p, Queues: q, SQS: client, Ledger: led, WorkerVersion: "verify-test",
		Logger: quiet, Metrics: io.Discard, Effects: effects})
	require.NoError(t, err)
	mc := esm.FromPipeline(p, q, cfg.Region)
	mc.Logger, mc.WaitTime = quiet, time.Second
	m, err := esm.New(client, w.Handle, mc)
	require.NoError(t, err)
	wctx, stop := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() { defer close(stopped); _, _ = m.Run(wctx) }()
	defer func() { stop(); <-stopped }()
	prefix := localtest.Unique("vc")
	mk := func(n int, kind string) workload.Task {
		tk := workload.Make(prefix, n, workload.EffectUnknown, 0)
		tk.Body = strings.Replace(tk.Body, `"kind":"timeout_after_effect"`, `"kind":"`+kind+`"`, 1)
		return tk
	}
	none, done := mk(0, sampleworker.FaultTimeoutAfterEffect), mk(1, sampleworker.FaultLostReply)
	_, err = workload.Send(ctx, client, q.HotURL, p.FIFO, []workload.Task{none, done}, 1)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return depth(t, client, q.DLQURL) == 2 }, 90*time.Second, 250*time.Millisecond, "the worker dead-letters both")
	stop()
	<-stopped

	// The third: its call started elsewhere (a worker without this store).
	elsewhere := prefix + ":elsewhere"
	now := time.Now()
	_, err = led.Begin(ctx, elsewhere, "m-elsewhere", "", now.Add(-time.Hour), time.Minute)
	require.NoError(t, err)
	require.NoError(t, led.StartEffect(ctx, elsewhere, "m-elsewhere", now.Add(-time.Hour)))
	_, err = led.DeadLettered(ctx, elsewhere, deadletter.ReasonEffectUnknown, now.Add(-time.Hour))
	require.NoError(t, err)
	third := effectUnknownLetters(t, elsewhere)[0]
	_, err = client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.DLQURL), MessageBody: aws.String(third.Body),
		MessageAttributes: localtest.SQSAttributes(third.Attributes)})
	require.NoError(t, err)

	keys := []string{none.Key, done.Key, elsewhere}
	tenantOf := map[string]string{none.Key: none.Tenant, done.Key: done.Tenant}
	entries := func() map[string]ledger.Entry {
		t.Helper()
		out := map[string]ledger.Entry{}
		for _, k := range keys {
			// The worker's keys are scoped to the pipeline and the task's
			// tenant; elsewhere's entry is a bare key (written as before
			// scoping), which the scoped key falls back to.
			e, ok, err := led.Get(ctx, ledger.Key(p.Name, tenantOf[k], k))
			require.NoError(t, err)
			require.True(t, ok, k)
			out[k] = e
		}
		return out
	}
	before := entries()
	for k, e := range before {
		require.True(t, e.EffectUnknown(time.Now()), "%s: %+v", k, e)
	}

	log := &FileAudit{FileStore: audit.FileStore{Path: filepath.Join(t.TempDir(), "audit.jsonl")}}
	srv, err := New(ctx, Config{
		Pipelines: []*pipeline.Pipeline{p}, SQS: client, Ledger: led, Reports: store.Folder{Root: t.TempDir()}, Loopback: true, Logger: quiet,
		Catalog: sampleworker.Catalog(effects), // what agentdlq ui gives locally: the verifiers over the local store
		Audit:   func(string) AuditLog { return log },
		Resolve: func(context.Context, *pipeline.Pipeline) (pipeline.Queues, error) { return q, nil },
	})
	require.NoError(t, err)
	f := &fixture{s: srv, p: p}
	records := func() []audit.Entry {
		t.Helper()
		recs, err := log.Records(ctx)
		require.NoError(t, err)
		return recs
	}

	// Refresh, then the effect_unknown group's page carries the form beside its keys.
	w0 := f.post(t, "/refresh", url.Values{"p": {p.Name}})
	require.Equal(t, http.StatusSeeOther, w0.Code, w0.Body.String())
	job := w0.Header().Get("Location")
	require.Eventually(t, func() bool { return strings.Contains(f.get(t, job).Body.String(), "Open the pipeline") }, 60*time.Second, 250*time.Millisecond)
	pl := f.get(t, "/pipeline?p="+p.Name).Body.String()
	fp := regexp.MustCompile(`/group\?p=` + p.Name + `&amp;r=effect_unknown&amp;fp=([0-9a-f]+)`).FindStringSubmatch(pl)
	require.NotNil(t, fp, "the pipeline page links the effect_unknown group")
	group := f.get(t, "/group?p="+p.Name+"&r=effect_unknown&fp="+fp[1]).Body.String()
	assert.Contains(t, group, `<form method="post" action="/verify" class="form" id="verify-form">`)
	assert.Contains(t, group, `<input type="hidden" name="r" value="effect_unknown"><input type="hidden" name="fp" value="`+fp[1]+`">`)
	form := func(mode, owner, why string) url.Values {
		return url.Values{"p": {p.Name}, "r": {"effect_unknown"}, "fp": {fp[1]}, "owner": {owner}, "why": {why}, "mode": {mode}}
	}
	const why = "INC-77: check the mail relay"

	// Refusals: a stranger, no why; shown in words on the job's page,
	// audited, nothing changed.
	_, w1 := f.verifyRun(t, form("apply", "mallory", why))
	assert.Contains(t, w1, "Verify refused ("+string(redrivetype.CodeOwner)+")")
	assert.Contains(t, w1, "Nothing was verified or changed.")
	assert.NotContains(t, w1, `id="verify-table"`)
	assert.Contains(t, w1, `id="vf-owner" name="owner" value="mallory"`, "the form again, as filled")
	_, w1 = f.verifyRun(t, form("apply", p.Owner, " "))
	assert.Contains(t, w1, "Verify refused ("+string(redrivetype.CodeWhy)+")")
	assert.Equal(t, before, entries(), "a refusal changes nothing")
	recs := records()
	require.Len(t, recs, 2)
	for _, r := range recs {
		assert.Equal(t, audit.ActionReconcile, r.Action)
		assert.Equal(t, audit.OutcomeRefused, r.Outcome)
		assert.Equal(t, "apply", r.Detail["verify"])
	}

	// The proposal: one row a key, the verifier's evidence; nothing changed
	// but one dry-run record.
	proposal, page := f.verifyRun(t, form("propose", p.Owner, why))
	assert.Contains(t, page, "<b>Proposal:</b> nothing changed")
	assert.Contains(t, page, "apply the 2 definite one(s)")
	assert.Equal(t, 3, strings.Count(page, `<tr data-key="`), "one row a key")
	row := func(page, key string) string {
		t.Helper()
		i := strings.Index(page, `<tr data-key="`+key+`">`)
		require.GreaterOrEqual(t, i, 0, key)
		return page[i : i+strings.Index(page[i:], "</tr>")]
	}
	task, err := agenttask.DecodeTask([]byte(done.Body), nil)
	require.NoError(t, err)
	receipt := sampleworker.Receipt(task.Args)
	assert.Contains(t, row(page, none.Key), `<span class="badge yes">no_effect</span>`)
	assert.Contains(t, row(page, none.Key), "sample effect store: 1 call(s) of email.send reached it for the key, none took effect")
	assert.Contains(t, row(page, done.Key), `<span class="badge yes">confirmed</span>`)
	assert.Contains(t, row(page, done.Key), receipt)
	assert.Contains(t, row(page, elsewhere), `<span class="badge no">unknown</span>`)
	assert.Contains(t, row(page, elsewhere), "no call for the key reached it")
	assert.Contains(t, row(page, elsewhere), "Reconcile by hand…")
	assert.NotContains(t, page, "oncall@example.com", "no args on the page")
	assert.Contains(t, page, `<button class="primary" type="submit" name="mode" value="apply">Apply the definite ones</button>`)
	assert.Contains(t, page, `<input type="hidden" name="why" value="`+why+`">`)
	assert.Equal(t, before, entries(), "a proposal changes nothing")
	recs = records()
	require.Len(t, recs, 3)
	assert.Equal(t, audit.OutcomeDryRun, recs[2].Outcome)
	assert.Equal(t, "propose", recs[2].Detail["verify"])
	assert.Equal(t, map[string]int{"confirmed": 1, "no_effect": 1, "unknown": 1}, recs[2].Counts)
	assert.Equal(t, page, f.get(t, proposal).Body.String(), "a reload of the proposal shows it again")
	assert.Len(t, records(), 3, "and runs nothing")

	// Apply: the two definite verdicts are reconciled with the evidence; the
	// unknown one is left alone; the job's page shows the result.
	result, page := f.verifyRun(t, form("apply", p.Owner, why))
	assert.Contains(t, page, `<p class="sub" id="job-state">Apply: started`)
	assert.Contains(t, page, "<b>Applied:</b> 2 key(s) reconciled, 0 refused")
	assert.Contains(t, row(page, none.Key), `<td data-k="reconciled"><b>no_effect</b></td>`)
	assert.Contains(t, row(page, done.Key), `<td data-k="reconciled"><b>effect_confirmed</b></td>`)
	assert.Contains(t, row(page, elsewhere), `<td data-k="reconciled">-</td>`)
	assert.NotContains(t, page, `value="apply"`, "nothing left to apply")
	after := entries()
	assert.True(t, after[none.Key].NoEffect(), "%+v", after[none.Key])
	assert.True(t, after[done.Key].EffectConfirmed(), "%+v", after[done.Key])
	assert.Equal(t, receipt, after[done.Key].Receipt)
	assert.Equal(t, p.Owner, after[done.Key].ReconciledBy)
	assert.Equal(t, before[elsewhere], after[elsewhere], "unknown is left alone")
	recs = records()
	require.Len(t, recs, 6)
	for _, r := range recs[3:5] {
		assert.Equal(t, audit.ActionReconcile, r.Action)
		assert.Equal(t, audit.OutcomeOK, r.Outcome)
		assert.Equal(t, why, r.Why)
		assert.Contains(t, r.Detail["evidence"], "email.send verifier: sample effect store")
		assert.NotNil(t, r.Caller, "who ran the console")
	}
	assert.Equal(t, audit.OutcomeOK, recs[5].Outcome)
	assert.Equal(t, "apply", recs[5].Detail["verify"])

	// Reloading the result reads it again and records nothing.
	assert.Equal(t, page, f.get(t, result).Body.String())
	assert.Len(t, records(), 6)
	assert.Equal(t, after, entries())

	// The group's keys show the reconciliations; a second verify skips them.
	group = f.get(t, "/group?p="+p.Name+"&r=effect_unknown&fp="+fp[1]).Body.String()
	assert.Contains(t, group, "reconciled: no_effect")
	assert.Contains(t, group, "reconciled: effect_confirmed")
	_, page = f.verifyRun(t, form("propose", p.Owner, why))
	assert.Contains(t, row(page, none.Key), "skipped")
	assert.Contains(t, page, "No key has a definite verdict: nothing to apply.")
	assert.NotContains(t, page, `value="apply"`)
}

// The form is on the effect_unknown group's page only; a console without
// the tools' catalog refuses verify in words, audited, and changes nothing;
// a POST without the CSRF token is refused before it.
func TestVerifyFormAndRefusals(t *testing.T) {
	t.Parallel()
	f, g := reconcileFixture(t, "eu-a", "eu-b")
	body := f.get(t, "/group?p=agent-tasks&r=effect_unknown&fp="+g.Fingerprint).Body.String()
	assert.Contains(t, body, `<h2 id="verify">Verify with the tools</h2>`)
	assert.Contains(t, body, `<form method="post" action="/verify" class="form" id="verify-form"><input type="hidden" name="csrf" value="`+csrfToken(f.s.Token())+`">`)
	for _, other := range f.r.Groups {
		if other.Reason != deadletter.ReasonEffectUnknown {
			assert.NotContains(t, f.get(t, "/group?p=agent-tasks&r="+string(other.Reason)+"&fp="+other.Fingerprint).Body.String(), `action="/verify"`, other.Reason)
			break
		}
	}
	w := f.get(t, "/verify?p=agent-tasks&r=effect_unknown&fp="+g.Fingerprint)
	require.Equal(t, http.StatusOK, w.Code)
	assert.Contains(t, w.Body.String(), `id="verify-form"`)
	assert.Empty(t, f.audit.all(), "page views record nothing")

	form := url.Values{"p": {"agent-tasks"}, "r": {"effect_unknown"}, "owner": {f.p.Owner}, "why": {"INC-77"}, "mode": {"apply"}}
	req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:8080/verify", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: CookieName, Value: f.s.Token()})
	rec := httptest.NewRecorder()
	f.s.ServeHTTP(rec, req)
	assert.Equal(t, http.StatusForbidden, rec.Code, "no CSRF token")
	assert.Empty(t, f.audit.all())

	form.Set("mode", "delete")
	w = f.post(t, "/verify", form)
	require.Equal(t, http.StatusBadRequest, w.Code, "a mode that is neither propose nor apply: %s", w.Body.String())
	assert.Contains(t, w.Body.String(), `mode is &#34;delete&#34;, not propose or apply`)
	assert.Contains(t, w.Body.String(), `id="verify-form"`, "the form again")
	assert.Empty(t, f.audit.all(), "nothing ran")

	form.Set("mode", "apply")
	job, body := f.verifyRun(t, form) // the fixture's console has no Catalog
	assert.Contains(t, body, "Verify refused ("+string(redrivetype.CodeBadInput)+") no tools to verify with")
	assert.Contains(t, body, `id="verify-form"`, "the form again")
	recs := f.audit.all()
	require.Len(t, recs, 1)
	assert.Equal(t, audit.OutcomeRefused, recs[0].Outcome)
	assert.Equal(t, body, f.get(t, job).Body.String(), "a reload shows the refusal again")
	assert.Len(t, f.audit.all(), 1, "and runs nothing")
	for _, k := range []string{"eu-a", "eu-b"} {
		e, _, err := f.led.Get(context.Background(), k)
		require.NoError(t, err)
		assert.True(t, e.EffectUnknown(t0), k)
	}
}

// A verify whose scan saw part of the DLQ says so above its rows: they are
// never presented as every key.
func TestVerifyPartialIsSaid(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 4)
	res := &redrivetype.VerifyResult{Pipeline: "agent-tasks", Reason: deadletter.ReasonEffectUnknown, Seen: 3,
		Keys:   []redrivetype.Verified{{Key: "eu-a", Tool: "email.send", Letters: 1, Verdict: agenttask.VerdictNoEffect, Evidence: "relay log: nothing sent"}},
		Counts: map[string]int{"no_effect": 1}}
	pe := &redrivetype.PartialError{Seen: 3, Depth: 9}
	for _, applied := range []bool{false, true} {
		res.Applied = applied
		req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8080/verify?p=agent-tasks", nil)
		w := httptest.NewRecorder()
		f.s.render(w, req, http.StatusOK, "verify", page{P: f.p, Data: verifyData{Form: verifyForm{Pipeline: "agent-tasks", Reason: "effect_unknown"},
			Result: res, Partial: pe.Error(), Definite: 1}})
		body := w.Body.String()
		assert.Contains(t, body, `<div class="notice bad" id="partial"><b>Partial:</b> partial scan: saw 3 of about 9 dead letters`)
		assert.Contains(t, body, "not every key")
		assert.Contains(t, body, `<tr data-key="eu-a">`)
		if applied {
			assert.Contains(t, body, "(what was reconciled stands)")
		}
	}
}

// downAudit is an audit store that cannot be written.
type downAudit struct{ *memAudit }

func (downAudit) Append(context.Context, audit.Entry) error { return errors.New("audit store down") }

// A verify whose scan was partial and whose audit record could not be
// written says both: the page said only "Partial" (an apply even
// redirected to "Applied"), and the failed audit went unsaid.
func TestVerifyPartialWithTheAuditDownSaysTheAudit(t *testing.T) {
	t.Parallel()
	p := testPipeline(t)
	tags := map[string]string{pipeline.TagOwner: p.Owner, pipeline.TagPipeline: p.Name}
	dlq := scanning(newFakeSQS(t, "5", tags)) // says five letters, gives none: a verify's scan of it is partial
	s, err := New(context.Background(), Config{
		Pipelines: []*pipeline.Pipeline{p}, SQS: dlq, Ledger: ledger.NewMemory(),
		Reports: store.Folder{Root: t.TempDir()}, Audit: func(string) AuditLog { return downAudit{&memAudit{}} },
		Catalog: sampleworker.Catalog(nil),
		Resolve: func(context.Context, *pipeline.Pipeline) (pipeline.Queues, error) {
			return pipeline.Queues{HotURL: "http://q/hot", HotARN: "arn:aws:sqs:us-east-1:000000000000:hot", DLQURL: "http://q/dlq", DLQARN: "arn:aws:sqs:us-east-1:000000000000:dlq"}, nil
		},
		Token: "test-token", Loopback: true, Now: func() time.Time { return t0 }, Logger: quiet,
	})
	require.NoError(t, err)
	f := &fixture{s: s, p: p}
	for _, mode := range []string{"propose", "apply"} {
		_, body := f.verifyRun(t, url.Values{"p": {p.Name}, "r": {"effect_unknown"}, "owner": {p.Owner}, "why": {"INC-77"}, "mode": {mode}})
		assert.Contains(t, body, "Verify failed: ", mode)
		assert.Contains(t, body, "audit store down", mode)
		assert.Contains(t, body, `id="partial"`, mode)
	}
}

// verifyRun submits the verify form, which starts a job and redirects to
// its page, waits until the job is done and returns the page's address and
// the finished page.
func (f *fixture) verifyRun(t *testing.T, form url.Values) (string, string) {
	t.Helper()
	w := f.post(t, "/verify", form)
	require.Equal(t, http.StatusSeeOther, w.Code, w.Body.String())
	job := w.Header().Get("Location")
	require.Regexp(t, `^/job\?id=[0-9a-f]{16}$`, job)
	return f.verifyRunDone(t, job)
}

// verifyRunDone waits until the verify job at job is done and returns its
// page.
func (f *fixture) verifyRunDone(t *testing.T, job string) (string, string) {
	t.Helper()
	var body string
	require.Eventually(t, func() bool {
		r := f.get(t, job)
		body = r.Body.String()
		return r.Code == http.StatusOK && strings.Contains(body, `id="job-state"`) && !strings.Contains(body, "running (this page reloads every second)")
	}, 60*time.Second, 50*time.Millisecond, "the verify job finishes")
	assert.NotContains(t, body, `<meta http-equiv="refresh"`, "a finished job's page stays")
	return job, body
}

// While the verify job runs (a verifier that waits), its page says so,
// reloads itself, says which key of how many is being verified, shows no form
// and no rows; when it is done, the proposal.
func TestVerifyJobShowsProgress(t *testing.T) {
	t.Parallel()
	f, g := reconcileFixture(t, "eu-a", "eu-b")
	dlq := scanning(newFakeSQS(t, "2", map[string]string{pipeline.TagOwner: f.p.Owner, pipeline.TagPipeline: f.p.Name}))
	for _, m := range effectUnknownLetters(t, "eu-a", "eu-b") {
		dlq.Put("http://q/dlq", sqsfake.Message{ID: m.MessageID, Body: m.Body, Sent: m.SentTimestamp, Attributes: sqsfake.Attributes(m.Attributes)})
	}
	f.s.cfg.SQS = dlq
	release := make(chan struct{})
	cat := agenttask.Catalog{}
	for name, tool := range sampleworker.Catalog(nil) {
		if name == "email.send" {
			tool.Verify = func(ctx context.Context, c agenttask.Call) (agenttask.Verification, error) {
				select {
				case <-release:
				case <-ctx.Done():
				}
				return agenttask.Verification{Verdict: agenttask.VerdictNoEffect, Evidence: "relay log: nothing sent"}, nil
			}
		}
		cat[name] = tool
	}
	f.s.cfg.Catalog = cat
	w := f.post(t, "/verify", url.Values{"p": {"agent-tasks"}, "r": {"effect_unknown"}, "fp": {g.Fingerprint}, "owner": {f.p.Owner}, "why": {"INC-77"}, "mode": {"propose"}})
	require.Equal(t, http.StatusSeeOther, w.Code, w.Body.String())
	job := w.Header().Get("Location")
	var body string
	if !assert.Eventually(t, func() bool {
		body = f.get(t, job).Body.String()
		return strings.Contains(body, "Verifying key 1 of 2")
	}, 10*time.Second, 20*time.Millisecond, "the first key waits in its verifier") {
		t.Fatal(body)
	}
	assert.Contains(t, body, "running (this page reloads every second)")
	assert.Contains(t, body, `<meta http-equiv="refresh" content="1">`)
	assert.Contains(t, body, `id="progress"`)
	assert.NotContains(t, body, `id="verify-form"`, "no form while it runs")
	assert.NotContains(t, body, `id="verify-table"`)
	assert.Empty(t, f.audit.all(), "nothing recorded yet")
	close(release)
	_, body = f.verifyRunDone(t, job)
	assert.Contains(t, body, "<b>Proposal:</b> nothing changed")
	assert.Equal(t, 2, strings.Count(body, `<tr data-key="`), body)
	recs := f.audit.all()
	require.Len(t, recs, 1)
	assert.Equal(t, audit.OutcomeDryRun, recs[0].Outcome)
}
