package redrive

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/report"
)

// seedTenants puts, for each tenant, n budget_exhausted dead letters of
// that tenant (keys "<tenant>-<i>").
func seedTenants(t *testing.T, f *fakeSQS, q pipeline.Queues, counts map[string]int) {
	t.Helper()
	for tenant, n := range counts {
		for i := range n {
			key := fmt.Sprintf("%s-%d", tenant, i)
			var body map[string]any
			require.NoError(t, json.Unmarshal([]byte(task(key, "web.search")), &body))
			body["tenant"] = tenant
			b, err := json.Marshal(body)
			require.NoError(t, err)
			attrs, err := deadletter.EncodeDeadLetter(deadletter.Meta{
				Reason: deadletter.ReasonBudgetExhausted, Attempts: 4, Error: "503", MessageID: "orig-" + key, IdempotencyKey: key,
				Tool: "web.search", ToolVersion: "1", Tenant: tenant, SchemaVersion: 1, DeadLetteredAt: time.Date(2026, 11, 29, 11, 0, 0, 0, time.UTC),
			}, nil)
			require.NoError(t, err)
			f.put(q.DLQURL, string(b), attrs, "")
		}
	}
}

// hotTenants counts the hot queue's messages by their body's tenant, and
// checks each carries it as its MessageGroupId (a fair queue).
func hotTenants(t *testing.T, f *fakeSQS, q pipeline.Queues) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, m := range f.snapshot(q.HotURL) {
		var v struct {
			Tenant string `json:"tenant"`
		}
		require.NoError(t, json.Unmarshal([]byte(m.body), &v))
		assert.Equal(t, v.Tenant, m.group, "the tenant is the redriven message's MessageGroupId")
		out[v.Tenant]++
	}
	return out
}

func TestSelectPerTenantBudget(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	tests := []struct {
		name      string
		perTenant int
		limit     int
		want      map[string]int // moved, by tenant
		over      int
	}{
		{"no budget: everything moves", 0, 0, map[string]int{"acme": 6, "globex": 2, "initech": 1}, 0},
		{"two a tenant: the flood waits, the others move", 2, 0, map[string]int{"acme": 2, "globex": 2, "initech": 1}, 4},
		{"one a tenant", 1, 0, map[string]int{"acme": 1, "globex": 1, "initech": 1}, 6},
		{"a budget larger than any tenant's letters", 10, 0, map[string]int{"acme": 6, "globex": 2, "initech": 1}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeSQS()
			q := f.addPair(p)
			seedTenants(t, f, q, map[string]int{"acme": 6, "globex": 2, "initech": 1})
			r, store, _ := newRedriver(t, p, f, q)
			req := selReq(p, deadletter.ReasonBudgetExhausted)
			req.PerTenant = tt.perTenant
			res, err := r.Select(context.Background(), req)
			require.NoError(t, err)
			assert.Equal(t, tt.want, hotTenants(t, f, q))
			assert.Equal(t, tt.over, res.OverTenantBudget)
			assert.Len(t, f.snapshot(q.DLQURL), tt.over, "what the budget left stays in the DLQ")
			assert.Equal(t, res.Seen, res.Moved+res.Released)
			last := store.all()[len(store.all())-1]
			if tt.over > 0 {
				assert.Contains(t, res.Partial, fmt.Sprintf("per-tenant budget of %d reached", tt.perTenant))
				assert.Equal(t, tt.over, last.Counts["over_tenant_budget"])
			}
			if tt.perTenant > 0 {
				assert.Equal(t, fmt.Sprint(tt.perTenant), last.Detail["per_tenant"], "the audit names the budget")
			}
		})
	}
}

// The next pass moves the next share of each tenant: a backlog drains in
// passes, none of which lets one tenant crowd the hot queue.
func TestSelectPerTenantBudgetDrainsInPasses(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f := newFakeSQS()
	q := f.addPair(p)
	seedTenants(t, f, q, map[string]int{"acme": 5, "globex": 1})
	r, _, _ := newRedriver(t, p, f, q)
	req := selReq(p, deadletter.ReasonBudgetExhausted)
	req.PerTenant = 2
	var moved []int
	for range 3 {
		res, err := r.Select(context.Background(), req)
		require.NoError(t, err)
		moved = append(moved, res.Moved)
	}
	assert.Equal(t, []int{3, 2, 1}, moved)
	assert.Empty(t, f.snapshot(q.DLQURL))
}

// With a per-tenant budget the canary is per tenant: a tenant whose
// canary is dead-lettered again moves nothing more, the others go on.
func TestSelectPerTenantCanary(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f := newFakeSQS()
	q := f.addPair(p)
	seedTenants(t, f, q, map[string]int{"acme": 4, "globex": 4})
	r, store, led := newRedriver(t, p, f, q)
	fail := map[string]bool{}
	for i := range 4 {
		fail[fmt.Sprintf("acme-%d", i)] = true // acme's tasks still fail
	}
	w := &simWorker{t: t, f: f, q: q, led: led, fail: fail, processed: map[string]int{}}
	r.cfg.Sleep = func(ctx context.Context, d time.Duration) error { w.drain(); return ctx.Err() }
	req := selReq(p, deadletter.ReasonBudgetExhausted)
	req.PerTenant, req.Canary = 3, 1
	res, err := r.Select(context.Background(), req)
	require.ErrorIs(t, err, ErrCanaryFailed)
	acme := triage.HashValue("acme") // the pipeline hashes tenants (eval.hash_fields)
	assert.Contains(t, err.Error(), acme)
	assert.Equal(t, []string{acme}, res.TenantsCanaryFailed)
	assert.Equal(t, 1+3, res.Moved, "acme's canary, then globex's canary and two more (its budget)")
	assert.Equal(t, 3, res.TenantStopped, "acme's other letters stay")
	assert.Equal(t, 1, res.OverTenantBudget, "globex's fourth waits for the next pass")
	require.NotNil(t, res.Canary)
	assert.Equal(t, 1, res.Canary.DeadLettered)
	assert.Equal(t, 1, res.Canary.Processed)
	w.drain()
	assert.Equal(t, 3, w.processed["globex-0"]+w.processed["globex-1"]+w.processed["globex-2"]+w.processed["globex-3"])
	assert.Equal(t, map[string]int{}, hotTenants(t, f, q), "the worker took all that moved")
	var canaries int
	for _, rec := range store.all() {
		if rec.Action == "canary" {
			canaries++
			assert.Equal(t, 2, rec.Counts["tenants"], "both tenants' canaries awaited together")
		}
	}
	assert.Equal(t, 1, canaries)
}

func TestSelectPerTenantBadInput(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	for _, tt := range []struct {
		name              string
		perTenant, canary int
		field             string
	}{
		{"negative budget", -1, 0, "PerTenant"},
		{"a canary larger than the budget", 2, 3, "Canary"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeSQS()
			q := f.addPair(p)
			seedTenants(t, f, q, map[string]int{"acme": 2})
			r, _, _ := newRedriver(t, p, f, q)
			req := selReq(p, deadletter.ReasonBudgetExhausted)
			req.PerTenant, req.Canary = tt.perTenant, tt.canary
			_, err := r.Select(context.Background(), req)
			var rf *Refusal
			require.ErrorAs(t, err, &rf)
			assert.Equal(t, tt.field, rf.Field)
			assert.Len(t, f.snapshot(q.DLQURL), 2, "nothing moved")
		})
	}
}

// TestShownTenant: a result names a tenant as the pipeline's reports do:
// hashed where the pipeline hashes tenants, and the letters that name none
// as a report labels them (report.TenantLabel), never as a hash of "".
func TestShownTenant(t *testing.T) {
	t.Parallel()
	p := &pass{r: &Redriver{cfg: Config{Pipeline: testPipeline(t, "agent-tasks")}}}
	require.True(t, triage.HashesTenants(p.r.cfg.Pipeline), "agent-tasks hashes tenants (eval.hash_fields)")
	assert.Equal(t, triage.HashValue("acme"), p.shownTenant("acme"))
	assert.Equal(t, report.TenantLabel(""), p.shownTenant(""))
	assert.Equal(t, "(no tenant)", p.shownTenant(""))
}
