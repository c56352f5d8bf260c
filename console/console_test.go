package console

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
)

func TestTokenAndCSRF(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 40)
	tests := []struct {
		name     string
		method   string
		target   string
		host     string
		cookie   string
		form     url.Values
		origin   string
		want     int    // status
		location string // want: the redirect's target
	}{
		{name: "no token", method: "GET", target: "/", want: http.StatusUnauthorized},
		{name: "wrong token in the URL", method: "GET", target: "/?token=nope", want: http.StatusUnauthorized},
		{name: "wrong cookie", method: "GET", target: "/", cookie: "nope", want: http.StatusUnauthorized},
		{name: "first visit: cookie set, token cleaned from the URL", method: "GET", target: "/pipeline?p=agent-tasks&token=test-token", want: http.StatusSeeOther, location: "/pipeline?p=agent-tasks"},
		{name: "cookie", method: "GET", target: "/", cookie: "test-token", want: http.StatusOK},
		{name: "another host (DNS rebinding)", method: "GET", target: "/", host: "evil.example:8080", cookie: "test-token", want: http.StatusForbidden},
		{name: "a GET does not refresh", method: "GET", target: "/refresh?p=agent-tasks", cookie: "test-token", want: http.StatusMethodNotAllowed},
		{name: "POST without CSRF", method: "POST", target: "/refresh", cookie: "test-token", form: url.Values{"p": {"agent-tasks"}}, want: http.StatusForbidden},
		{name: "POST with a wrong CSRF", method: "POST", target: "/refresh", cookie: "test-token", form: url.Values{"p": {"agent-tasks"}, "csrf": {"x"}}, want: http.StatusForbidden},
		{name: "POST from another origin", method: "POST", target: "/letter/reveal", cookie: "test-token", origin: "http://evil.example",
			form: url.Values{"p": {"agent-tasks"}, "csrf": {csrfToken("test-token")}}, want: http.StatusForbidden},
		{name: "PUT", method: "PUT", target: "/refresh", cookie: "test-token", want: http.StatusMethodNotAllowed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var req *http.Request
			if tc.form != nil {
				req = httptest.NewRequest(tc.method, "http://127.0.0.1:8080"+tc.target, strings.NewReader(tc.form.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			} else {
				req = httptest.NewRequest(tc.method, "http://127.0.0.1:8080"+tc.target, nil)
			}
			if tc.host != "" {
				req.Host = tc.host
			}
			if tc.cookie != "" {
				req.AddCookie(&http.Cookie{Name: CookieName, Value: tc.cookie})
			}
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			w := httptest.NewRecorder()
			f.s.ServeHTTP(w, req)
			assert.Equal(t, tc.want, w.Code, w.Body.String())
			if tc.location != "" {
				assert.Equal(t, tc.location, w.Header().Get("Location"))
				c := w.Result().Cookies()
				require.Len(t, c, 1)
				assert.Equal(t, "test-token", c[0].Value)
				assert.True(t, c[0].HttpOnly)
				assert.Equal(t, http.SameSiteStrictMode, c[0].SameSite)
			}
			if w.Code != http.StatusMethodNotAllowed {
				assert.Contains(t, w.Header().Get("Content-Security-Policy"), "default-src 'none'")
			}
		})
	}
	assert.Empty(t, f.audit.recs, "nothing refused above reached an action")
}

func TestPages(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 40)
	g := f.r.Groups[0]
	tests := []struct {
		name string
		path string
		want []string // substrings of the page
		not  []string // must not appear
	}{
		{name: "overview", path: "/", want: []string{"agent-tasks", "platform-oncall", "<b>40</b>", "Refresh"}},
		{name: "pipeline", path: "/pipeline?p=agent-tasks",
			want: []string{"budget_exhausted", "schema_invalid", "<svg", "Dead letters by reason, last 2 triage runs", "/group?p=agent-tasks&amp;r=budget_exhausted&amp;fp=",
				"after the fix is deployed", "first seen", "tenants", "&lt;script&gt;alert("},
			not: []string{"<script>alert("}},
		{name: "group", path: "/group?p=agent-tasks&r=" + string(g.Reason) + "&fp=" + g.Fingerprint, want: []string{"/letter?p=agent-tasks&amp;id=m-000000", "tenants affected", "Redrive or reject this group"}},
		{name: "letter: metadata, history, ledger, redacted body", path: "/letter?p=agent-tasks&id=m-000000",
			want: []string{"Attempt history", "attempt 3", "search API 503", "key-000000", "redacted", "weather in Oslo", "until retention deletes it", "no ledger entry for key key-000000", "traceparent"},
			not:  []string{"sk-live-SECRET"}},
		{name: "unknown letter", path: "/letter?p=agent-tasks&id=nope", want: []string{"not loaded"}},
		{name: "redrive: plan and the policy's fields", path: "/redrive?p=agent-tasks&r=schema_invalid",
			want: []string{"Plan", "Fix deployed", "Dry run (preview)", "Reject", "agentdlq redrive select"}},
		{name: "redrive: yes needs no acknowledgement", path: "/redrive?p=agent-tasks&r=budget_exhausted", not: []string{"Fix deployed", "Reviewed"}},
		{name: "audit", path: "/audit?p=agent-tasks", want: []string{"No audit records"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := f.get(t, tc.path)
			body := w.Body.String()
			if tc.name == "unknown letter" {
				assert.Equal(t, http.StatusNotFound, w.Code)
			} else {
				require.Equal(t, http.StatusOK, w.Code, body)
			}
			for _, s := range tc.want {
				assert.Contains(t, body, s)
			}
			for _, s := range tc.not {
				assert.NotContains(t, body, s)
			}
			assert.NotContains(t, body, "<script", "the console runs no script")
			assert.NotContains(t, body, "style=", "no inline style (the CSP forbids it)")
		})
	}
	assert.Empty(t, f.audit.recs, "a page view records nothing")
}

func TestReveal(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 8)
	form := url.Values{"p": {"agent-tasks"}, "id": {"m-000001"}}

	w := f.post(t, "/letter/reveal", form)
	require.Equal(t, http.StatusOK, w.Code)
	assert.Contains(t, w.Body.String(), "who and why are required")
	assert.NotContains(t, w.Body.String(), "sk-live-SECRET", "refused: still redacted")

	form.Set("actor", "ana")
	form.Set("why", "INC-41: check the args")
	w = f.post(t, "/letter/reveal", form)
	require.Equal(t, http.StatusOK, w.Code)
	assert.Contains(t, w.Body.String(), "sk-live-SECRET-key-000001")
	assert.Contains(t, w.Body.String(), "revealed")

	require.Len(t, f.audit.recs, 2)
	assert.Equal(t, []audit.Outcome{audit.OutcomeRefused, audit.OutcomeOK}, []audit.Outcome{f.audit.recs[0].Outcome, f.audit.recs[1].Outcome})
	rec := f.audit.recs[1]
	assert.Equal(t, ActionReveal, rec.Action)
	assert.Equal(t, "ana", rec.Actor)
	assert.Equal(t, "INC-41: check the args", rec.Why)
	assert.Equal(t, "m-000001", rec.Detail["message_id"])
	for _, r := range f.audit.recs {
		assert.Equal(t, &audit.Caller{Check: audit.CallerLocal, OSUser: audit.OSUser()}, r.Caller, "who ran the console, refusals included")
	}

	// The audit page lists them newest first, filterable.
	body := f.get(t, "/audit?p=agent-tasks").Body.String()
	assert.Contains(t, body, "local: "+audit.OSUser(), "the caller beside the actor")
	assert.Less(t, strings.Index(body, "INC-41"), strings.Index(body, "who and why are required"), "newest first")
	body = f.get(t, "/audit?p=agent-tasks&outcome=refused").Body.String()
	assert.NotContains(t, body, "INC-41")
	assert.Contains(t, body, "who and why are required")
	// A GET of the letter shows the redacted body again.
	assert.NotContains(t, f.get(t, "/letter?p=agent-tasks&id=m-000001").Body.String(), "sk-live-SECRET")
}

func TestRedriveRefusedIsShownAndAudited(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 8)
	// Rejecting as someone who is not the owner: refused by redrive's gate, audited.
	w := f.post(t, "/reject", url.Values{"p": {"agent-tasks"}, "r": {"schema_invalid"}, "owner": {"mallory"}, "why": {"spam"}})
	assert.Equal(t, http.StatusUnprocessableEntity, w.Code)
	assert.Contains(t, w.Body.String(), "Reject refused")
	assert.Contains(t, w.Body.String(), redrivetype.CodeOwner)
	require.Len(t, f.audit.recs, 1)
	assert.Equal(t, audit.ActionReject, f.audit.recs[0].Action)
	assert.Equal(t, audit.OutcomeRefused, f.audit.recs[0].Outcome)

	// A rate that is not a number never reaches redrive.
	w = f.post(t, "/redrive", url.Values{"p": {"agent-tasks"}, "r": {"budget_exhausted"}, "owner": {"platform-oncall"}, "why": {"x"}, "rate": {"fast"}})
	assert.Equal(t, http.StatusBadRequest, w.Code)
	assert.Contains(t, w.Body.String(), "rate must be a whole number")
}

func TestCountdown(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string // duration from t0
		want string
	}{
		{"days", "50h30m", "2d 2h 30m"},
		{"hours", "3h5m", "3h 5m"},
		{"minutes", "90s", "1m"},
		{"past", "-1h", "due now"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := parseDuration(tc.in)
			require.NoError(t, err)
			assert.Equal(t, tc.want, countdown(t0.Add(d), t0))
		})
	}
}
