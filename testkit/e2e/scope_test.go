package e2e_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/agenttask"
	"github.com/agentdlq/agentdlq/functions/sampleworker"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/local/workload"
	"github.com/agentdlq/agentdlq/testkit/localtest"
)

// scopedTask is an agent task of tenant with idempotency key key: a
// web.search, or with mutating an email.send of subject.
func scopedTask(id, tenant, key string, mutating bool, subject string) workload.Task {
	tool, args := "web.search", fmt.Sprintf(`{"query":%q,"max_results":3}`, subject)
	if mutating {
		tool, args = "email.send", fmt.Sprintf(`{"to":["billing@acme.example"],"subject":%q,"body":"invoice"}`, subject)
	}
	body := fmt.Sprintf(`{"task_id":%q,"run_id":"run-0042","tenant":%q,"idempotency_key":%q,"tool":%q,"tool_version":"1","trace_id":"1-00000000-000000000000000000000000","created_at":"2026-11-29T12:00:00Z","schema_version":1,"args":%s}`,
		id, tenant, key, tool, args)
	t := workload.FromBody(body, 0)
	return t
}

// A producer of one tenant chooses another tenant's idempotency key, on
// this pipeline and on another one sharing the ledger table (one table
// serves every pipeline of the stack): its tasks run as its own, and the
// victim's task with the same key still runs, exactly once, neither
// acknowledged as a duplicate nor dead-lettered as idempotency_key_reused
// (issue 28: before keys were scoped, it was a silent no-op).
func TestAnotherTenantsKeyChangesNothingEndToEnd(t *testing.T) {
	t.Parallel()
	h := newHarness(t, false, 0, nil)
	key := "acme:run-0042:task-0007-" + localtest.Unique("scope")
	w := h.worker()
	// The worker of another pipeline (agent-steps) on the same ledger.
	other := *h.p
	other.Name = "agent-steps-shared"
	w2 := h.worker(func(c *sampleworker.Config) { c.Pipeline = &other })

	malloryHere := scopedTask("mallory-here", "mallory", key, false, "weather")
	malloryThere := scopedTask("mallory-there", "mallory", key, false, "weather")
	acmeThere := scopedTask("acme-there", "acme", key, false, "stock")
	h.send(malloryHere)
	h.drain(w.Handle)
	h.send(malloryThere, acmeThere)
	h.drain(w2.Handle)

	victim := scopedTask("acme-victim", "acme", key, true, "invoice 0007")
	sent := h.send(victim)
	h.drain(w.Handle)

	assert.Empty(t, h.deadLetters(), "nothing dead-lettered: not idempotency_key_reused")
	assert.Equal(t, 1, h.attemptsOf(sent[0].MessageID))
	started, completed := h.ledger.counts()
	vk := ledger.Key(h.p.Name, "acme", key)
	assert.Equal(t, 1, started[vk], "the victim's mutating call ran once")
	assert.Equal(t, 1, completed[vk])
	for _, k := range []string{vk, ledger.Key(h.p.Name, "mallory", key), ledger.Key(other.Name, "mallory", key), ledger.Key(other.Name, "acme", key)} {
		e, ok, err := h.ledger.Get(context.Background(), k)
		require.NoError(t, err)
		require.True(t, ok, "%s has its own entry", k)
		assert.Equal(t, ledger.StateDone, e.State, k)
	}
	e, _, err := h.ledger.Get(context.Background(), vk)
	require.NoError(t, err)
	assert.Equal(t, sampleworker.Receipt([]byte(`{"to":["billing@acme.example"],"subject":"invoice 0007","body":"invoice"}`)), e.Receipt)
	_, ok, err := h.ledger.Get(context.Background(), key)
	require.NoError(t, err)
	assert.False(t, ok, "nothing is written under the bare key")
}

// The upgrade: a task done before keys were scoped (its entry under the
// bare key, with its args digest, as the version before wrote it on the
// DynamoDB emulator) is still a no-op when it is delivered again; a task of
// other args under the same bare key (another tenant's, for all the entry
// can say) runs.
func TestDoneBeforeScopingStaysDoneEndToEnd(t *testing.T) {
	t.Parallel()
	h := newHarness(t, false, 0, nil)
	key := "acme:run-0042:task-0008-" + localtest.Unique("upgrade")
	done := scopedTask("acme-done", "acme", key, true, "invoice 0008")
	task, err := agenttask.DecodeTask([]byte(done.Body), nil)
	require.NoError(t, err)
	digest, err := agenttask.ArgsDigest(task.Args)
	require.NoError(t, err)
	// The row the version before wrote: pk is the bare key.
	raw := ledger.NewDynamo(h.lp.DynamoDB, h.table)
	now := time.Now()
	_, err = raw.Begin(context.Background(), key, "m-before", digest, now, time.Minute)
	require.NoError(t, err)
	require.NoError(t, raw.Complete(context.Background(), key, "m-before", "receipt-before", now))

	w := h.worker()
	sent := h.send(done)
	h.drain(w.Handle)
	assert.Empty(t, h.deadLetters())
	assert.Equal(t, 1, h.attemptsOf(sent[0].MessageID))
	started, completed := h.ledger.counts()
	dk := ledger.Key(h.p.Name, "acme", key)
	assert.Zero(t, started[dk], "done before the upgrade: the mail is not sent again")
	assert.Zero(t, completed[dk])
	e, ok, err := h.ledger.Get(context.Background(), dk)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, ledger.StateDone, e.State)
	assert.Equal(t, "receipt-before", e.Receipt, "the scoped entry carries the receipt over")

	otherArgs := scopedTask("globex-other", "globex", key, true, "another invoice")
	h.send(otherArgs)
	h.drain(w.Handle)
	assert.Empty(t, h.deadLetters(), "not idempotency_key_reused on an entry that cannot say whose it was")
	started, _ = h.ledger.counts()
	assert.Equal(t, 1, started[ledger.Key(h.p.Name, "globex", key)])
}
