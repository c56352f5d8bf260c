package report

import (
	"slices"
	"sort"

	"github.com/agentdlq/agentdlq/events/deadletter"
)

// EffectUnknownKeys returns the idempotency keys the report lists for its
// effect_unknown groups (Group.IdempotencyKeys), sorted and distinct, and
// how many the groups left out (Group.IdempotencyKeysOmitted): the keys
// the owner must reconcile before a redrive. A report read back from JSON
// has them too.
func (r *Report) EffectUnknownKeys() (keys []string, omitted int) {
	seen := map[string]bool{}
	for _, g := range r.Groups {
		if g.Reason != deadletter.ReasonEffectUnknown {
			continue
		}
		omitted += g.IdempotencyKeysOmitted
		for _, k := range g.IdempotencyKeys {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	return keys, omitted
}

// EffectUnknownTenants maps each idempotency key of the effect_unknown
// groups' letters to the tenants whose letters carry it (Hints.Tenant, as
// stored: "" for a letter that names none), sorted: a key is its tenant's
// within the pipeline, and one key may be several tenants' own. It reads
// Group.Letters, so it is nil for a report read back from JSON, as for one
// with no such letters.
func (r *Report) EffectUnknownTenants() map[string][]string {
	var out map[string][]string
	for _, g := range r.Groups {
		if g.Reason != deadletter.ReasonEffectUnknown {
			continue
		}
		for _, l := range g.Letters {
			k := l.Hints.IdempotencyKey
			if k == "" {
				continue
			}
			if out == nil {
				out = map[string][]string{}
			}
			if !slices.Contains(out[k], l.Hints.Tenant) {
				out[k] = append(out[k], l.Hints.Tenant)
			}
		}
	}
	for _, ts := range out {
		sort.Strings(ts)
	}
	return out
}
