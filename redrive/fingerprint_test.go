package redrive

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
)

func TestResolveFingerprints(t *testing.T) {
	t.Parallel()
	groups := []Group{
		{deadletter.ReasonBudgetExhausted, "3f9a2c1d8e7b6a50", 4},
		{deadletter.ReasonBudgetExhausted, "3f9a2c1d11111111", 2},
		{deadletter.ReasonBudgetExhausted, "7c0e99aa12345678", 1},
		{deadletter.ReasonSchemaInvalid, "7c0e99ab00000000", 3},
	}
	budget := []deadletter.Reason{deadletter.ReasonBudgetExhausted}
	tests := []struct {
		name     string
		prefixes []string
		reasons  []deadletter.Reason
		want     []string         // the full fingerprints
		code     redrivetype.Code // the refusal's code, "" when resolved
	}{
		{name: "full fingerprint", prefixes: []string{"7c0e99aa12345678"}, reasons: budget, want: []string{"7c0e99aa12345678"}},
		{name: "unique 8-character prefix", prefixes: []string{"7c0e99aa"}, reasons: budget, want: []string{"7c0e99aa12345678"}},
		{name: "unique 12-character prefix", prefixes: []string{"3f9a2c1d8e7b"}, reasons: budget, want: []string{"3f9a2c1d8e7b6a50"}},
		{name: "ambiguous prefix", prefixes: []string{"3f9a2c1d"}, reasons: budget, code: redrivetype.CodeAmbiguousGroup},
		{name: "prefix unique among the chosen reason", prefixes: []string{"7c0e99a"}, reasons: budget, code: redrivetype.CodeUnknownGroup},
		{name: "other reason's group not chosen", prefixes: []string{"7c0e99ab"}, reasons: budget, code: redrivetype.CodeUnknownGroup},
		{name: "shared prefix across reasons, no reason filter", prefixes: []string{"7c0e99a0"}, code: redrivetype.CodeUnknownGroup},
		{name: "too short", prefixes: []string{"7c0e99a"}, reasons: budget, code: redrivetype.CodeUnknownGroup},
		{name: "no such group", prefixes: []string{"deadbeef"}, reasons: budget, code: redrivetype.CodeUnknownGroup},
		{name: "several prefixes", prefixes: []string{"7c0e99aa", "3f9a2c1d1"}, reasons: budget, want: []string{"7c0e99aa12345678", "3f9a2c1d11111111"}},
		{name: "none", reasons: budget},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := resolveFingerprints(tt.prefixes, tt.reasons, groups)
			assert.Equal(t, tt.code, RefusalCode(err), "err: %v", err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestAmbiguousPrefixNamesTheCandidates(t *testing.T) {
	t.Parallel()
	groups := []Group{{deadletter.ReasonBudgetExhausted, "3f9a2c1d8e7b6a50", 4}, {deadletter.ReasonBudgetExhausted, "3f9a2c1d11111111", 2}}
	_, err := resolveFingerprints([]string{"3f9a2c1d"}, []deadletter.Reason{deadletter.ReasonBudgetExhausted}, groups)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "3f9a2c1d11111111 and 3f9a2c1d8e7b6a50")
	assert.Contains(t, err.Error(), "give more characters")
}

func TestSelectAndRejectAcceptAPrefix(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f := newFakeSQS()
	q := f.addPair(p)
	seed(t, f, q, 2, deadletter.ReasonSchemaInvalid)
	other := newDeadLetter(t, "other-tool", "sql.query", deadletter.ReasonSchemaInvalid, 1, "")
	f.put(q.DLQURL, other.body, other.attrs, "")
	r, store, _ := newRedriver(t, p, f, q)
	ctx := context.Background()
	groups := []Group{
		{deadletter.ReasonSchemaInvalid, "fp-schema_invalid-sql.query", 1},
		{deadletter.ReasonSchemaInvalid, "fp-schema_invalid-web.search", 2},
	}

	req := selReq(p, deadletter.ReasonSchemaInvalid)
	req.Ack.FixDeployed = "worker v1.3.0"
	req.Groups = groups
	req.Fingerprints = []string{"fp-schema"}
	_, err := r.Select(ctx, req)
	assert.Equal(t, redrivetype.CodeAmbiguousGroup, RefusalCode(err))
	assert.Empty(t, f.snapshot(q.HotURL), "an ambiguous prefix moves nothing")

	req.Fingerprints = []string{"fp-schema_invalid-sql"}
	res, err := r.Select(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, 1, res.Moved)
	last := store.all()[len(store.all())-1]
	assert.Equal(t, []string{"fp-schema_invalid-sql.query"}, last.Fingerprints, "the audit names the full fingerprint")

	who := Who{Owner: p.Owner, Why: "the producer was fixed"}
	_, err = r.Reject(ctx, RejectRequest{Who: who, Reasons: []deadletter.Reason{deadletter.ReasonSchemaInvalid}, Fingerprints: []string{"fp-schema_invalid-web"}, Groups: groups})
	require.NoError(t, err)
	last = store.all()[len(store.all())-1]
	assert.Equal(t, []string{"fp-schema_invalid-web.search"}, last.Fingerprints)
	assert.Equal(t, 2, last.Counts["schema_invalid"])
}

// A refusal of one field is audited in the caller's words
// (Config.FieldNames): the record says what the person saw, while the
// returned refusal keeps the Go name for callers that branch on it.
func TestRefusalAuditedInTheCallersWords(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f := newFakeSQS()
	q := f.addPair(p)
	seed(t, f, q, 2, deadletter.ReasonSchemaInvalid)
	r, store, _ := newRedriver(t, p, f, q)
	r.cfg.FieldNames = func(field string) string {
		return map[string]string{"Fingerprints": "--fingerprint", "Owner": "--owner"}[field]
	}
	ctx := context.Background()

	req := selReq(p, deadletter.ReasonSchemaInvalid)
	req.Ack.FixDeployed = "worker v1.3.0"
	req.Groups = []Group{{deadletter.ReasonSchemaInvalid, "fp-schema_invalid-web.search", 2}}
	req.Fingerprints = []string{"d09"}
	_, err := r.Select(ctx, req)
	var rf *Refusal
	require.ErrorAs(t, err, &rf)
	assert.Equal(t, "Fingerprints", rf.Field, "the refusal keeps the Go name")
	last := store.all()[len(store.all())-1]
	assert.Contains(t, last.Error, `--fingerprint "d09" is too short`)
	assert.NotContains(t, last.Error, "Fingerprints")

	req.Fingerprints, req.Who.Owner = nil, ""
	_, err = r.Select(ctx, req)
	require.ErrorAs(t, err, &rf)
	last = store.all()[len(store.all())-1]
	assert.Contains(t, last.Error, "--owner is required")

	// A field the caller does not name keeps its Go name.
	assert.Equal(t, err.Error(), Told(err, func(string) string { return "" }))
}
