package redrive

import (
	"strings"

	"github.com/agentdlq/agentdlq/redrive/redrivetype"
	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/dlq"
)

// matchFilter reports whether the tagged letter l is one f chooses
// (dlq.Filter, on the tag the pass made). The zero Filter chooses every
// letter.
func matchFilter(f dlq.Filter, l *letter) bool {
	return f.IsZero() || f.Match(&l.Tagged)
}

// filterText is f as an audit record names it (detail "filter"): its
// tenant hashed when the pipeline hashes tenants (eval.hash_fields), as
// the triage report shows them.
func (r *Redriver) filterText(f dlq.Filter) string {
	if f.Tenant != "" && !strings.HasPrefix(f.Tenant, "sha256:") && triage.HashesTenants(r.cfg.Pipeline) {
		f.Tenant = triage.HashValue(f.Tenant)
	}
	return f.String()
}

// checkFilter refuses a filter whose window is empty.
func checkFilter(f dlq.Filter) error {
	if err := f.Validate(); err != nil {
		return refuseField(redrivetype.CodeBadInput, "Filter", "%v", err)
	}
	return nil
}

// narrowPlan marks a plan as the plan of the letters a filter chose: a move
// task would move the whole DLQ, so it is never offered; each group's
// select is of the filtered letters (the caller renders the filter with
// the steps).
func narrowPlan(pl *redrivetype.Plan, fd *dlq.Filtered) {
	if fd == nil {
		return
	}
	pl.Filter = fd
	pl.Start = nil
	if fd.Matched == 0 {
		pl.StartWhy = "no dead letter the filter chooses"
		return
	}
	pl.StartWhy = "not a move task: a move task moves the whole DLQ, not the letters the filter chose; redrive group by group with the filter"
}
