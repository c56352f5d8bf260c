package report_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/triage/dlq"
	"github.com/agentdlq/agentdlq/triage/report"
)

func letter(reason deadletter.Reason, tenant, key string) *dlq.Tagged {
	return &dlq.Tagged{Reason: reason, Hints: dlq.Hints{Tenant: tenant, IdempotencyKey: key}}
}

// TestEffectUnknownKeys: the keys of every effect_unknown group, once each
// and sorted, with what the groups left out summed; other reasons' keys
// (a reused key's group lists them too) are not to reconcile.
func TestEffectUnknownKeys(t *testing.T) {
	t.Parallel()
	r := &report.Report{Groups: []report.Group{
		{Reason: deadletter.ReasonEffectUnknown, IdempotencyKeys: []string{"k3", "k1"}, IdempotencyKeysOmitted: 2},
		{Reason: deadletter.ReasonIdempotencyKeyReused, IdempotencyKeys: []string{"reused"}, IdempotencyKeysOmitted: 7},
		{Reason: deadletter.ReasonEffectUnknown, IdempotencyKeys: []string{"k2", "k1"}, IdempotencyKeysOmitted: 1},
	}}
	keys, omitted := r.EffectUnknownKeys()
	assert.Equal(t, []string{"k1", "k2", "k3"}, keys)
	assert.Equal(t, 3, omitted)

	keys, omitted = (&report.Report{Groups: []report.Group{{Reason: deadletter.ReasonSchemaInvalid, IdempotencyKeys: []string{"p"}}}}).EffectUnknownKeys()
	assert.Nil(t, keys)
	assert.Zero(t, omitted)
}

// TestEffectUnknownTenants: each effect_unknown letter's key with every
// tenant that holds it (one key may be two tenants' own), sorted and once
// each, "" for a letter that names none; nil for a report read back from
// JSON, which holds no letters.
func TestEffectUnknownTenants(t *testing.T) {
	t.Parallel()
	eu := deadletter.ReasonEffectUnknown
	r := &report.Report{Groups: []report.Group{
		{Reason: eu, IdempotencyKeys: []string{"k1", "k2"}, Letters: []*dlq.Tagged{
			letter(eu, "umbrella", "k1"), letter(eu, "acme", "k1"), letter(eu, "acme", "k1"),
			letter(eu, "acme", "k2"), letter(eu, "acme", ""),
		}},
		{Reason: eu, Letters: []*dlq.Tagged{letter(eu, "", "k3"), letter(eu, "globex", "k2")}},
		{Reason: deadletter.ReasonSchemaInvalid, Letters: []*dlq.Tagged{letter(deadletter.ReasonSchemaInvalid, "initech", "k1")}},
	}}
	assert.Equal(t, map[string][]string{
		"k1": {"acme", "umbrella"},
		"k2": {"acme", "globex"},
		"k3": {""},
	}, r.EffectUnknownTenants())

	data, err := json.Marshal(r)
	require.NoError(t, err)
	var back report.Report
	require.NoError(t, json.Unmarshal(data, &back))
	keys, _ := back.EffectUnknownKeys()
	assert.Equal(t, []string{"k1", "k2"}, keys, "the keys survive JSON")
	assert.Nil(t, back.EffectUnknownTenants(), "the letters do not: no tenants, not empty ones")
}
