package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/triage/store"
)

// A defined pipeline whose queues were never created (the demo creates
// agent-tasks' only) is shown as not created, with what to run, and not as
// an error; an error that is one is still shown.
func TestOverviewSaysWhatIsNotCreated(t *testing.T) {
	t.Parallel()
	f, err := pipeline.Load("../" + pipeline.DefaultFile)
	require.NoError(t, err)
	var ps []*pipeline.Pipeline
	for i := range f.Pipelines {
		ps = append(ps, &f.Pipelines[i])
	}
	require.Len(t, ps, 2)
	for _, tc := range []struct {
		name  string
		local bool
		err   error // Resolve's for agent-steps
		want  []string
		not   []string
	}{
		{name: "locally", local: true, err: fmt.Errorf("%w: pipeline %q: queue %q: not found", ErrQueuesNotFound, "agent-steps", "agent-steps.fifo"),
			want: []string{`id="not-created-agent-steps"`, "not created locally (run <code>make local-up</code> / <code>agentdlq local init</code>)"},
			not:  []string{"queues: ", `id="not-created-agent-tasks"`}},
		{name: "in AWS", err: ErrQueuesNotFound,
			want: []string{"no queues in this account and region: not deployed here"}, not: []string{"queues: ", "make local-up"}},
		{name: "an error", local: true, err: errors.New("throttled"),
			want: []string{"queues: throttled"}, not: []string{"not created"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := New(context.Background(), Config{
				Pipelines: ps, SQS: inAWS(newFakeSQS(t, "7", nil), !tc.local), STS: nil,
				Reports: store.Folder{Root: t.TempDir()}, Audit: func(string) AuditLog { return &memAudit{} },
				Resolve: func(_ context.Context, p *pipeline.Pipeline) (pipeline.Queues, error) {
					if p.Name == "agent-steps" {
						return pipeline.Queues{}, tc.err
					}
					return pipeline.Queues{HotURL: "http://q/hot", DLQURL: "http://q/dlq"}, nil
				},
				Token: "test-token", Loopback: true, Now: func() time.Time { return t0 }, Logger: quiet,
			})
			require.NoError(t, err)
			w := (&fixture{s: s}).get(t, "/")
			require.Equal(t, http.StatusOK, w.Code)
			body := w.Body.String()
			for _, s := range tc.want {
				assert.Contains(t, body, s)
			}
			for _, s := range tc.not {
				assert.NotContains(t, body, s)
			}
			assert.Contains(t, body, "<b>7</b>", "the pipeline that has queues shows its depth")
			steps := body[strings.Index(body, "<b>agent-steps</b>"):]
			assert.Contains(t, steps[:strings.Index(steps, "</tr>")], `data-k="DLQ"><b>-</b>`, "no depth for queues that do not exist")
		})
	}
}

// The effect_unknown badge says what the policy does: reconcile each key;
// the keys reconciled as no effect then move without an override. It used
// to say "reconcile, then override" beside a line saying the opposite.
func TestEffectUnknownBadgeAgreesWithThePolicy(t *testing.T) {
	t.Parallel()
	f := newFixtureOf(t, effectUnknownLetters(t, "k1", "k2"))
	g := f.r.Groups[0]
	require.Equal(t, "effect_unknown", string(g.Reason))
	body := f.get(t, "/group?p=agent-tasks&r=effect_unknown&fp="+g.Fingerprint).Body.String()
	assert.Contains(t, body, "never blindly: reconcile each key first</span>")
	assert.NotContains(t, body, "then override")
	assert.NotContains(t, f.get(t, "/pipeline?p=agent-tasks").Body.String(), "then override")
}

// A refused dry run says so once, in words that name what is at fault,
// shows no "0 of 0 would move" after it, and links back to the form with
// what was entered (it showed "Refused (owner_mismatch): refused
// (owner_mismatch): …", then "Dry run: 0 of 0 …", and no way back).
func TestRefusedDryRunPage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 8)
	w := f.post(t, "/redrive", url.Values{"p": {"agent-tasks"}, "r": {"budget_exhausted"}, "owner": {"mallory"}, "why": {"search API back (INC-7)"},
		"rate": {"25"}, "canary": {"2"}, "mode": {"dry_run"}})
	require.Equal(t, http.StatusSeeOther, w.Code, w.Body.String())
	jobURL := w.Header().Get("Location")
	id := strings.TrimPrefix(jobURL, "/job?id=")
	j := f.s.job(id)
	require.NotNil(t, j)
	require.Eventually(t, func() bool { return j.view().Done }, time.Minute, 10*time.Millisecond, "the job ends")

	body := f.get(t, jobURL).Body.String()
	assert.Contains(t, body, "<b>Refused</b> (owner_mismatch): ")
	assert.Equal(t, 1, strings.Count(body, "owner_mismatch"), "the code once: %s", body)
	assert.NotContains(t, body, "refused (owner_mismatch)")
	assert.NotContains(t, body, "would move")
	assert.NotContains(t, body, "0 of 0")
	back := "/redrive?job=" + id + "&amp;p=agent-tasks&amp;r=budget_exhausted"
	assert.Contains(t, body, `id="back" href="`+back+`">Back to the form (values kept)</a>`)
	assert.Equal(t, 1, strings.Count(body, `href="`+back+`"`), "one way back")

	form := f.get(t, strings.ReplaceAll(back, "&amp;", "&")).Body.String()
	assert.Contains(t, form, `name="owner" value="mallory"`, "the values are kept")
	assert.Contains(t, form, `name="why" value="search API back (INC-7)"`)
	assert.Contains(t, form, `name="rate" type="number" min="1" max="500" value="25"`)
	assert.Contains(t, form, `name="canary" type="number" min="0" value="2"`)

	// Another pipeline's job, or none, gives the defaults.
	form = f.get(t, "/redrive?p=agent-tasks&r=budget_exhausted&job=nope").Body.String()
	assert.Contains(t, form, `name="owner" value=""`)
}
