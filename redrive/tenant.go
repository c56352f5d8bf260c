package redrive

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/report"
)

// A per-tenant budget (SelectRequest.PerTenant) bounds what one pass moves
// of each tenant, so that the replay of one tenant's backlog cannot flood
// the hot queue ahead of the others: at most PerTenant letters of a tenant
// move; the rest of its letters stay in the DLQ (held until the pass ends,
// counted in OverTenantBudget) for the next pass. With a canary
// (SelectRequest.Canary), the canary is per tenant: the first Canary
// letters of each tenant move, and the tenant's next letters wait for
// their outcome; a tenant whose canary fails moves no more this pass
// (TenantsCanaryFailed names it) while the other tenants go on, and Select
// then returns ErrCanaryFailed. The tenant is the letter's as triage reads
// it (dlq_meta's, else the body's); letters with none are one tenant, "".

// tenantState is one tenant's share of a pass with a per-tenant budget.
type tenantState struct {
	planned int          // moves started
	canary  []canaryItem // its canary's letters, once moved
	passed  bool         // its canary passed (or there is none)
	failed  bool         // its canary failed: it moves no more this pass
}

// tenantOf is a letter's tenant as a pass counts it.
func tenantOf(l *letter) string { return l.Hints.Tenant }

// tenant returns the pass's state of tenant t, made on first use.
func (p *pass) tenant(t string) *tenantState {
	st := p.tenants[t]
	if st == nil {
		st = &tenantState{passed: p.req.Canary == 0 || p.req.DryRun}
		p.tenants[t] = st
	}
	return st
}

// tenantVerdict is what a per-tenant budget makes of a chosen letter.
type tenantVerdict int

const (
	tenantMove    tenantVerdict = iota // moves now
	tenantDefer                        // its tenant's canary is out: see it again later
	tenantOver                         // its tenant's budget is spent: stays for the next pass
	tenantStopped                      // its tenant's canary failed: stays
)

// tenantCheck decides, for a chosen letter, what its tenant's budget and
// canary allow; a letter that moves is counted against its tenant.
func (p *pass) tenantCheck(l *letter) tenantVerdict {
	st := p.tenant(tenantOf(l))
	switch {
	case st.failed:
		return tenantStopped
	case st.planned >= p.req.PerTenant:
		return tenantOver
	case !st.passed && st.planned >= p.req.Canary:
		return tenantDefer
	}
	st.planned++
	return tenantMove
}

// tenantMoved files the canary items of the letters just moved under
// their tenants (todo's letters, by DLQ message id).
func (p *pass) tenantMoved(todo []letter, items []canaryItem) {
	byID := make(map[string]string, len(todo))
	for i := range todo {
		byID[todo[i].MessageID] = tenantOf(&todo[i])
	}
	for _, it := range items {
		st := p.tenant(byID[it.moved.DLQMessageID])
		if !st.passed {
			st.canary = append(st.canary, it)
		}
	}
}

// tenantLeft gives back a tenant's count for a letter that did not move
// (its claim check restored nothing).
func (p *pass) tenantLeft(l *letter) { p.tenant(tenantOf(l)).planned-- }

// checkTenantCanaries waits for the canaries of the tenants whose canary
// has moved (or whose letters ran out before it filled), all at once. A
// tenant whose canary failed moves no more this pass; the pass goes on.
func (p *pass) checkTenantCanaries(ctx context.Context) error {
	var names []string
	var items []canaryItem
	for name, st := range p.tenants {
		if st.passed || st.failed || len(st.canary) == 0 || (len(st.canary) < p.req.Canary && !p.exhausted()) {
			continue
		}
		names = append(names, name)
	}
	if len(names) == 0 {
		return nil
	}
	sort.Strings(names)
	for _, name := range names {
		items = append(items, p.tenants[name].canary...)
	}
	for i := range items {
		if p.back[items[i].moved.HotMessageID] {
			items[i].state = canaryDeadLettered
		}
	}
	cr, err := p.r.waitCanary(ctx, p.api, p.req, items, p.seen)
	p.res.Canary = mergeCanary(p.res.Canary, cr)
	if err != nil && !errors.Is(err, ErrCanaryFailed) {
		p.res.Partial = "interrupted"
		return err
	}
	at := 0
	for _, name := range names {
		st := p.tenants[name]
		mine := items[at : at+len(st.canary)]
		at += len(st.canary)
		st.passed = !slices.ContainsFunc(mine, func(it canaryItem) bool { return it.state != canaryProcessed })
		st.failed = !st.passed
		if st.failed {
			p.res.TenantsCanaryFailed = append(p.res.TenantsCanaryFailed, p.shownTenant(name))
		}
	}
	counts := cr.counts()
	counts["tenants"] = len(names)
	if aerr := p.r.record(ctx, p.canaryRecord(counts), err); aerr != nil && err == nil {
		return aerr
	}
	p.idle = 0
	return nil
}

// shownTenant is a tenant as a result names it: hashed when the pipeline
// hashes tenants (eval.hash_fields), as a report's reads
// (report.TenantLabel: "(no tenant)" for none).
func (p *pass) shownTenant(t string) string {
	if t != "" && triage.HashesTenants(p.r.cfg.Pipeline) {
		t = triage.HashValue(t)
	}
	return report.TenantLabel(t)
}

// tenantsErr is the error of a pass some of whose tenants' canaries failed.
func tenantsErr(res *SelectResult) error {
	if len(res.TenantsCanaryFailed) == 0 {
		return nil
	}
	return fmt.Errorf("%w: the canary of %d tenant(s) was dead-lettered again or had no outcome (%s): their other letters stay in the DLQ; %d letters moved",
		ErrCanaryFailed, len(res.TenantsCanaryFailed), strings.Join(res.TenantsCanaryFailed, ", "), res.Moved)
}

// mergeCanary adds b's counts and outcomes to a's (either may be nil).
func mergeCanary(a, b *canaryResult) *canaryResult {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	a.Moved += b.Moved
	a.Processed += b.Processed
	a.DeadLettered += b.DeadLettered
	a.Pending += b.Pending
	a.Waited += b.Waited
	for k, v := range b.Outcomes {
		a.Outcomes[k] = v
	}
	return a
}
