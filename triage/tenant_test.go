package triage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/triage/dlq"
	"github.com/agentdlq/agentdlq/triage/report"
)

// letters makes n tagged dead letters of tenant and reason, dead-lettered
// (and sent to the DLQ) ago before t0, one second apart.
func letters(prefix, tenant string, reason deadletter.Reason, n int, ago time.Duration) []dlq.Tagged {
	out := make([]dlq.Tagged, n)
	for i := range out {
		at := t0.Add(-ago + time.Duration(i)*time.Second)
		out[i] = dlq.Tagged{
			Message: dlq.Message{MessageID: fmt.Sprintf("%s-%03d", prefix, i), SentTimestamp: at},
			Reason:  reason, Fingerprint: string(reason), Hints: dlq.Hints{Tenant: tenant}, DeadLetteredAt: at,
		}
	}
	return out
}

func TestReportTenants(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, false)
	p.Eval.HashFields = nil // the tenants in the clear
	cat := func(parts ...[]dlq.Tagged) []dlq.Tagged {
		var out []dlq.Tagged
		for _, x := range parts {
			out = append(out, x...)
		}
		return out
	}
	tests := []struct {
		name         string
		tagged       []dlq.Tagged
		wantTenants  []string // in order
		wantCounts   []int
		wantDominant string // "" none
	}{
		{
			name: "one tenant floods: more than half and more than 10",
			tagged: cat(letters("a", "acme", deadletter.ReasonSchemaInvalid, 9, time.Hour),
				letters("b", "acme", deadletter.ReasonBudgetExhausted, 3, 3*time.Hour),
				letters("c", "globex", deadletter.ReasonBudgetExhausted, 4, 2*time.Hour)),
			wantTenants: []string{"acme", "globex"}, wantCounts: []int{12, 4}, wantDominant: "acme",
		},
		{
			name: "more than half but only 10 letters: not called out",
			tagged: cat(letters("a", "acme", deadletter.ReasonSchemaInvalid, 10, time.Hour),
				letters("c", "globex", deadletter.ReasonBudgetExhausted, 2, time.Hour)),
			wantTenants: []string{"acme", "globex"}, wantCounts: []int{10, 2},
		},
		{
			name: "exactly half: not called out",
			tagged: cat(letters("a", "acme", deadletter.ReasonSchemaInvalid, 20, time.Hour),
				letters("c", "globex", deadletter.ReasonBudgetExhausted, 20, time.Hour)),
			wantTenants: []string{"acme", "globex"}, wantCounts: []int{20, 20},
		},
		{
			name: "letters with no tenant are a row, never a dominant tenant",
			tagged: cat(letters("n", "", deadletter.ReasonJSONInvalid, 30, time.Hour),
				letters("c", "globex", deadletter.ReasonBudgetExhausted, 2, time.Hour)),
			wantTenants: []string{"", "globex"}, wantCounts: []int{30, 2},
		},
		{name: "an empty DLQ", wantTenants: []string{}, wantCounts: []int{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := Build(tt.tagged, p, t0)
			require.NotNil(t, r.Tenants, "an empty breakdown is [], not null")
			var names []string
			var counts []int
			for _, tn := range r.Tenants {
				names = append(names, tn.Tenant)
				counts = append(counts, tn.Count)
				assert.Equal(t, tt.wantDominant != "" && tn.Tenant == tt.wantDominant, tn.Dominant, tn.Tenant)
			}
			assert.Equal(t, tt.wantTenants, append([]string{}, names...))
			assert.Equal(t, tt.wantCounts, append([]int{}, counts...))
			called := false
			for _, a := range r.Attention {
				if strings.HasPrefix(a, "tenant ") {
					called = true
					assert.Contains(t, a, "tenant "+tt.wantDominant+" holds")
					assert.Contains(t, a, "--per-tenant")
				}
			}
			assert.Equal(t, tt.wantDominant != "", called, "Attention calls out the dominant tenant: %q", r.Attention)
		})
	}
}

func TestReportTenantRow(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, false) // tenant hashed
	tagged := append(letters("a", "acme", deadletter.ReasonSchemaInvalid, 3, time.Hour),
		letters("b", "acme", deadletter.ReasonBudgetExhausted, 1, 5*time.Hour)...)
	tagged = append(tagged, letters("c", "globex", deadletter.ReasonBudgetExhausted, 4, 2*time.Hour)...)
	r := Build(tagged, p, t0)
	require.Len(t, r.Tenants, 2)
	acme := r.Tenants[0]
	if acme.Tenant != HashValue("acme") {
		acme = r.Tenants[1]
	}
	assert.Equal(t, HashValue("acme"), acme.Tenant, "hashed as eval.hash_fields says")
	assert.Equal(t, 4, acme.Count)
	assert.Equal(t, 50.0, acme.SharePercent)
	assert.Equal(t, []report.TenantReason{{Reason: deadletter.ReasonSchemaInvalid, Count: 3}, {Reason: deadletter.ReasonBudgetExhausted, Count: 1}}, acme.ByReason)
	assert.Equal(t, "b-000", acme.OldestMessageID, "the letter dead-lettered first")
	assert.Equal(t, t0.Add(-5*time.Hour), acme.OldestDeadLetteredAt)
	assert.Equal(t, int64(5*3600), acme.DwellSeconds)
	assert.Equal(t, int64(5*3600), acme.OldestAgeSeconds)
}

func TestReportTenantsCapped(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, false)
	var tagged []dlq.Tagged
	for i := range maxTenantRows + 7 {
		tagged = append(tagged, letters(fmt.Sprint("t", i), fmt.Sprint("tenant-", i), deadletter.ReasonSchemaInvalid, 1+i%3, time.Hour)...)
	}
	r := Build(tagged, p, t0)
	assert.Len(t, r.Tenants, maxTenantRows)
	assert.Equal(t, 7, r.TenantsOmitted)
	assert.Equal(t, 3, r.Tenants[0].Count, "most letters first")
}

func TestSLOStatus(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, false) // target 99.9, schedule 60 minutes
	tagged := append(letters("in", "acme", deadletter.ReasonSchemaInvalid, 4, 30*time.Minute),
		letters("old", "acme", deadletter.ReasonSchemaInvalid, 6, 3*time.Hour)...)
	f := func(v float64) *float64 { return &v }
	tests := []struct {
		name             string
		processed        int
		wantBad, wantPct *float64
	}{
		{"4 bad in 4000: the whole budget", 3996, f(0.1), f(100)},
		{"4 bad in 40000: a tenth", 39996, f(0.01), f(10)},
		{"nothing processed: all bad", 0, f(100), f(100000)},
		{"a negative count is ignored", -1, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := Build(tagged, p, t0)
			require.NotNil(t, r.SLO)
			assert.Equal(t, 99.9, r.SLO.TargetPercent)
			assert.Equal(t, 4, r.SLO.DeadLettered, "only the letters of the last schedule_minutes")
			assert.Equal(t, t0.Add(-time.Hour), r.SLO.PeriodStart)
			r.SLO.SpendBudget(tt.processed)
			if tt.wantBad == nil {
				assert.Nil(t, r.SLO.BudgetSpentPercent)
				assert.Nil(t, r.SLO.Processed)
				return
			}
			require.NotNil(t, r.SLO.BudgetSpentPercent)
			assert.InDelta(t, *tt.wantBad, *r.SLO.BadPercent, 1e-9)
			assert.InDelta(t, *tt.wantPct, *r.SLO.BudgetSpentPercent, 1e-9)
		})
	}
}

// TestRunStatesTheBudgetSpent: with the period's processed count, Run's
// report (the one it keeps) states the budget spent; without, none.
func TestRunStatesTheBudgetSpent(t *testing.T) {
	t.Parallel()
	clock := newClock()
	msgs := []dlq.Message{brokerMoved("a", `{"tenant":"acme"}`, t0.Add(-10*time.Minute)), brokerMoved("b", `{"tenant":"acme"}`, t0.Add(-3*time.Hour))}
	processed := 999
	r, err := Run(t.Context(), Config{Pipeline: testPipeline(t, false), DLQURL: "q", SQS: newFakeSQS(t, clock, msgs), Now: clock.Now, Logger: quiet, Processed: &processed})
	require.NoError(t, err)
	require.NotNil(t, r.SLO.BudgetSpentPercent)
	assert.Equal(t, 1, r.SLO.DeadLettered, "the letter of the last hour")
	assert.InDelta(t, 100.0, *r.SLO.BudgetSpentPercent, 1e-9, "1 in 1000 is the whole 0.1 %% budget")
	r, err = Run(t.Context(), Config{Pipeline: testPipeline(t, false), DLQURL: "q", SQS: newFakeSQS(t, newClock(), msgs), Now: clock.Now, Logger: quiet})
	require.NoError(t, err)
	assert.Nil(t, r.SLO.BudgetSpentPercent)
	require.Len(t, r.Tenants, 1)
	assert.Equal(t, 2, r.Tenants[0].Count, "the body's tenant, for letters the broker moved")
}

// fakeSource is a ProcessedSource that records what it was asked.
type fakeSource struct {
	n        int
	err      error
	calls    int
	pipeline string
	from, to time.Time
}

func (s *fakeSource) Processed(_ context.Context, pipeline string, from, to time.Time) (int, error) {
	s.calls++
	s.pipeline, s.from, s.to = pipeline, from, to
	return s.n, s.err
}

func (*fakeSource) String() string { return "the fake's metric" }

// TestRunReadsTheProcessedCount: without a given count, Run reads it from
// ProcessedFrom over the report's SLO period; a failed read is the
// report's (budget unknown, and why), not the run's; a given count wins.
func TestRunReadsTheProcessedCount(t *testing.T) {
	t.Parallel()
	msgs := []dlq.Message{brokerMoved("a", `{"tenant":"acme"}`, t0.Add(-10*time.Minute))}
	run := func(t *testing.T, cfg Config) *report.Report {
		t.Helper()
		clock := newClock()
		cfg.Pipeline, cfg.DLQURL, cfg.SQS, cfg.Now, cfg.Logger = testPipeline(t, false), "q", newFakeSQS(t, clock, msgs), clock.Now, quiet
		r, err := Run(t.Context(), cfg)
		require.NoError(t, err, "a processed count's read never fails the run")
		require.NotNil(t, r.SLO)
		return r
	}
	t.Run("read over the period", func(t *testing.T) {
		t.Parallel()
		src := &fakeSource{n: 999}
		r := run(t, Config{ProcessedFrom: src})
		assert.Equal(t, 1, src.calls)
		assert.Equal(t, "agent-tasks", src.pipeline)
		assert.Equal(t, r.SLO.PeriodStart, src.from)
		assert.Equal(t, time.Hour, src.to.Sub(src.from), "the last schedule_minutes")
		require.NotNil(t, r.SLO.BudgetSpentPercent)
		assert.InDelta(t, 100.0, *r.SLO.BudgetSpentPercent, 1e-9)
		assert.Equal(t, "the fake's metric", r.SLO.ProcessedSource)
		assert.Empty(t, r.SLO.BudgetUnknown)
	})
	t.Run("a failed read: unknown, and why", func(t *testing.T) {
		t.Parallel()
		r := run(t, Config{ProcessedFrom: &fakeSource{err: errors.New("CloudWatch GetMetricData: AccessDenied")}})
		assert.Nil(t, r.SLO.BudgetSpentPercent)
		assert.Nil(t, r.SLO.Processed)
		assert.Equal(t, "the processed count could not be read: CloudWatch GetMetricData: AccessDenied", r.SLO.BudgetUnknown)
		assert.False(t, r.Partial, "the DLQ's counts are whole: only the budget is unknown")
	})
	t.Run("a negative count: unknown", func(t *testing.T) {
		t.Parallel()
		r := run(t, Config{ProcessedFrom: &fakeSource{n: -3}})
		assert.Nil(t, r.SLO.BudgetSpentPercent)
		assert.Contains(t, r.SLO.BudgetUnknown, "negative")
	})
	t.Run("a given count wins", func(t *testing.T) {
		t.Parallel()
		src, given := &fakeSource{n: 5}, 9999
		r := run(t, Config{ProcessedFrom: src, Processed: &given})
		assert.Zero(t, src.calls, "not read")
		require.NotNil(t, r.SLO.Processed)
		assert.Equal(t, 9999, *r.SLO.Processed)
		assert.Empty(t, r.SLO.ProcessedSource)
	})
}
