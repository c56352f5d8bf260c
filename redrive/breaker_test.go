package redrive

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/breaker"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
)

// TestForceBreaker: the owner holds a breaker open and closes it, gated
// and audited like pause; anyone else is refused and the state untouched.
func TestForceBreaker(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	tests := []struct {
		name     string
		who      Who
		dep      string
		open     bool
		code     redrivetype.Code // the refusal's code, "" when none
		wantMode breaker.Mode     // the stored mode afterwards
		outcome  audit.Outcome    // the audit entry's outcome
		wantAct  audit.Action
	}{
		{name: "the owner holds it open", who: Who{Owner: p.Owner, Why: "INC-77 provider down"}, dep: "search-api", open: true,
			wantMode: breaker.Open, outcome: audit.OutcomeOK, wantAct: audit.ActionBreakerOpen},
		{name: "the owner closes it", who: Who{Owner: p.Owner, Why: "provider recovered"}, dep: "search-api",
			wantMode: breaker.Closed, outcome: audit.OutcomeOK, wantAct: audit.ActionBreakerClose},
		{name: "not the owner", who: Who{Owner: "mallory", Why: "x"}, dep: "search-api", open: true,
			code: redrivetype.CodeOwner, outcome: audit.OutcomeRefused, wantAct: audit.ActionBreakerOpen},
		{name: "no why", who: Who{Owner: p.Owner}, dep: "search-api", open: true,
			code: redrivetype.CodeWhy, outcome: audit.OutcomeRefused, wantAct: audit.ActionBreakerOpen},
		{name: "no dependency", who: Who{Owner: p.Owner, Why: "x"}, open: true,
			code: redrivetype.CodeBadInput, outcome: audit.OutcomeRefused, wantAct: audit.ActionBreakerOpen},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeSQS()
			q := f.addPair(p)
			r, store, _ := newRedriver(t, p, f, q)
			mem := breaker.NewMemory()
			if !tt.open {
				// Closing needs something open.
				_, err := mem.Put(context.Background(), p.Name, tt.dep, breaker.State{Mode: breaker.Open, Held: true})
				require.NoError(t, err)
			}
			res, err := r.ForceBreaker(context.Background(), BreakerRequest{Who: tt.who, Dependency: tt.dep, Open: tt.open, Store: mem})
			assert.Equal(t, tt.code, RefusalCode(err), "err: %v", err)
			got, _ := mem.Get(context.Background(), p.Name, tt.dep)
			if tt.code == "" {
				require.NoError(t, err)
				assert.Equal(t, tt.wantMode, got.Mode)
				assert.Equal(t, tt.wantMode, res.After.Mode)
				assert.Equal(t, tt.who.Owner, got.Owner)
			} else {
				assert.NotEqual(t, tt.who.Owner, got.Owner, "a refused change leaves the state")
			}
			recs := store.all()
			require.Len(t, recs, 1)
			assert.Equal(t, tt.wantAct, recs[0].Action)
			assert.Equal(t, tt.outcome, recs[0].Outcome)
		})
	}
}
