package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/local/workload"
	"github.com/agentdlq/agentdlq/redrive"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
	"github.com/agentdlq/agentdlq/testkit/localtest"
)

func TestLedgerReconcileBadInput(t *testing.T) {
	auditFile := filepath.Join(t.TempDir(), "audit.jsonl")
	for _, args := range [][]string{
		{"--pipeline", "agent-tasks", "--key", "k", "--owner", "platform-oncall", "--why", "x"},                                           // neither outcome
		{"--pipeline", "agent-tasks", "--key", "k", "--no-effect", "--effect-confirmed", "r", "--owner", "platform-oncall", "--why", "x"}, // both
		{"--key", "k", "--no-effect", "--owner", "platform-oncall", "--why", "x"},                                                         // no pipeline
	} {
		_, code := runCLI(t, append(append([]string{"ledger", "reconcile"}, args...), "--audit", auditFile)...)
		assert.Equal(t, exitRefused, code, args)
	}
	recs := auditLines(t, auditFile)
	require.Len(t, recs, 2, "every refusal on a pipeline is audited; without a pipeline nothing is written")
	for _, r := range recs {
		assert.Equal(t, audit.ActionReconcile, r.Action)
		assert.Equal(t, audit.OutcomeRefused, r.Outcome)
	}
}

// TestEffectUnknownWalkOnEmulators walks RUNBOOK.md's effect-unknown
// section on the emulators with the real worker: two email.send tasks time
// out after their mutating call started and are dead-lettered as
// effect_unknown; triage --keys lists their keys; ledger get shows the
// effect started without a receipt; the owner reconciles one as no effect
// and one as effect confirmed; select without --override moves the first
// only, and the worker runs it again; the confirmed one is never moved, and
// is rejected; plan shows both decisions.
func TestEffectUnknownWalkOnEmulators(t *testing.T) {
	cfg, _, q, table := onEmulators(t, "agent-tasks")
	ctx := context.Background()
	client := sqs.NewFromConfig(cfg)
	prefix := localtest.Unique("eu")
	tasks := []workload.Task{workload.Make(prefix, 0, workload.EffectUnknown, 0), workload.Make(prefix, 1, workload.EffectUnknown, 0)}
	_, err := workload.Send(ctx, client, q.HotURL, false, tasks, 1)
	require.NoError(t, err)
	workUntilIdle(t, table)
	require.Equal(t, 2, depthOf(t, client, q.DLQURL), "both dead-lettered")

	// triage --keys: the keys, one a line, sorted.
	out, code := runCLI(t, "triage", "--pipeline", "agent-tasks", "--keys", "--reports", "", "--ledger-table", table, "--no-progress")
	require.Equal(t, 0, code, out)
	keys := strings.Fields(out)
	want := []string{tasks[0].Key, tasks[1].Key}
	sort.Strings(want)
	require.Equal(t, want, keys)
	none, done := keys[0], keys[1]

	// ledger get: effect started, no receipt.
	// (A key is its tenant's within the pipeline: the workload's keys start
	// with their tenant.)
	var lines []string
	for _, k := range []string{none, done} {
		out, code = runCLI(t, "ledger", "get", "--ledger-table", table, "--pipeline", "agent-tasks", "--tenant", tenantOfKey(k), "--key", k, "-o", "json")
		require.Equal(t, 0, code, out)
		lines = append(lines, strings.TrimSpace(out))
	}
	for _, line := range lines {
		var e ledger.Entry
		require.NoError(t, json.Unmarshal([]byte(line), &e))
		assert.True(t, e.EffectUnknown(time.Now()), "%+v", e)
		assert.Equal(t, deadletter.ReasonEffectUnknown, e.LastReason)
	}

	auditFile := filepath.Join(t.TempDir(), "audit.jsonl")
	common := []string{"--pipeline", "agent-tasks", "--audit", auditFile, "--ledger-table", table}
	owner := []string{"--owner", "platform-oncall"}

	// A stranger may not reconcile; the owner must say why.
	_, code = runCLI(t, append([]string{"ledger", "reconcile", "--tenant", tenantOfKey(none), "--key", none, "--no-effect", "--owner", "mallory", "--why", "x"}, common...)...)
	assert.Equal(t, exitRefused, code)
	_, code = runCLI(t, append(append([]string{"ledger", "reconcile", "--tenant", tenantOfKey(none), "--key", none, "--no-effect"}, owner...), common...)...)
	assert.Equal(t, exitRefused, code)

	out, code = runCLI(t, append(append([]string{"ledger", "reconcile", "--tenant", tenantOfKey(none), "--key", none, "--no-effect", "--why", "mail provider log: nothing sent for the run"}, owner...), common...)...)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "no_effect")
	assert.Contains(t, out, "redrive it without --override", "the next command")
	assert.NotContains(t, out, "already reconciled", "the first reconciliation changed the ledger")
	out, code = runCLI(t, append(append([]string{"ledger", "reconcile", "--tenant", tenantOfKey(none), "--key", none, "--no-effect", "--why", "mail provider log: nothing sent for the run", "-o", "json"}, owner...), common...)...)
	require.Equal(t, 0, code, out)
	var e ledger.Entry
	require.NoError(t, json.Unmarshal([]byte(out), &e), out)
	assert.True(t, e.NoEffect())
	assert.Contains(t, out, `"repeat":true`, "the same reconciliation again changed nothing, and says so")
	out, code = runCLI(t, append(append([]string{"ledger", "reconcile", "--tenant", tenantOfKey(done), "--key", done, "--effect-confirmed", "msg-7731", "--why", "mail provider log: sent as msg-7731"}, owner...), common...)...)
	require.Equal(t, 0, code, out)
	// A second, different reconciliation is refused; the same one is a no-op.
	_, code = runCLI(t, append(append([]string{"ledger", "reconcile", "--tenant", tenantOfKey(done), "--key", done, "--no-effect", "--why", "second thoughts"}, owner...), common...)...)
	assert.Equal(t, exitRefused, code)
	out, code = runCLI(t, append(append([]string{"ledger", "reconcile", "--tenant", tenantOfKey(none), "--key", none, "--no-effect", "--why", "again"}, owner...), common...)...)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "key "+none+": already reconciled (no_effect by platform-oncall at ")
	assert.Contains(t, out, "), nothing changed")

	// plan reads the audit: the group's keys are reconciled.
	out, code = runCLI(t, append([]string{"redrive", "plan", "--json"}, common...)...)
	require.Equal(t, 0, code, out)
	var plan planJSON
	require.NoError(t, json.Unmarshal([]byte(out), &plan), out)
	require.Len(t, plan.Groups, 1)
	g := plan.Groups[0]
	assert.Equal(t, []redrivetype.Step{{Action: audit.ActionSelect, Reason: deadletter.ReasonEffectUnknown, Fingerprint: g.Fingerprint, Canary: 1}}, g.Next)
	assert.Equal(t, 2, g.Keys)
	assert.Equal(t, map[ledger.Outcome]int{ledger.OutcomeNoEffect: 1, ledger.OutcomeEffectConfirmed: 1}, g.Reconciled)
	assert.NotContains(t, g.Command, "--override")

	// select without --override: the no-effect key only; the confirmed one stays.
	out, code = runCLI(t, append(append([]string{"redrive", "select", "--reason", "effect_unknown", "--why", "reconciled: no mail was sent", "--rate", "50"}, owner...), common...)...)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "moved 1")
	assert.Contains(t, out, "left in the DLQ: 1 effect_unknown with their effect confirmed")
	assert.Equal(t, 1, depthOf(t, client, q.HotURL))
	assert.Equal(t, 1, depthOf(t, client, q.DLQURL))

	// The worker claims the redriven key and runs it: its injected fault
	// times out after the call again, so it is dead-lettered again as a new
	// incident; the confirmed key is never claimed.
	workUntilIdle(t, table)
	l := ledger.NewDynamo(dynamodb.NewFromConfig(cfg), table)
	a, _, err := l.Get(ctx, ledger.Key("agent-tasks", tenantOfKey(none), none))
	require.NoError(t, err)
	assert.Equal(t, 1, a.RedriveCount)
	assert.Equal(t, 2, a.DeadLetterCount, "it ran again")
	assert.True(t, a.EffectStarted, "and started its mutating call again")
	assert.False(t, a.NoEffect(), "the old reconciliation does not cover the new incident")
	b, _, err := l.Get(ctx, ledger.Key("agent-tasks", tenantOfKey(done), done))
	require.NoError(t, err)
	assert.True(t, b.EffectConfirmed())
	assert.Equal(t, "msg-7731", b.Receipt)
	assert.Equal(t, 0, b.RedriveCount)
	assert.Equal(t, 1, b.DeadLetterCount)
	require.Equal(t, 2, depthOf(t, client, q.DLQURL))

	// Nothing is settled for select now: refused, nothing moves. Even
	// overridden, the confirmed key stays.
	out, code = runCLI(t, append(append([]string{"redrive", "select", "--reason", "effect_unknown", "--why", "x", "--dry-run"}, owner...), common...)...)
	assert.Equal(t, exitRefused, code, out)
	out, code = runCLI(t, append(append([]string{"redrive", "select", "--reason", "effect_unknown", "--why", "x", "--dry-run", "--json",
		"--override", "effect_unknown=checked the provider by hand"}, owner...), common...)...)
	require.Equal(t, 0, code, out)
	var res redrive.SelectResult
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	assert.Equal(t, 1, res.Matched)
	assert.Equal(t, 1, res.EffectConfirmed)
	require.Len(t, res.Letters, 1)
	assert.Equal(t, none, res.Letters[0].IdempotencyKey)

	// Reject the group; again, it warns.
	out, code = runCLI(t, append(append([]string{"redrive", "reject", "--reason", "effect_unknown", "--why", "mail sent or to be resent by hand; tenant told"}, owner...), common...)...)
	require.Equal(t, 0, code, out)
	assert.NotContains(t, out, "warning:")
	out, code = runCLI(t, append(append([]string{"redrive", "reject", "--reason", "effect_unknown", "--why", "again", "--json"}, owner...), common...)...)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "warning: effect_unknown")
	assert.Contains(t, out, "was already rejected by platform-oncall")
	out, code = runCLI(t, append([]string{"redrive", "plan", "--json"}, common...)...)
	require.Equal(t, 0, code, out)
	plan = planJSON{}
	require.NoError(t, json.Unmarshal([]byte(out), &plan), out)
	require.Len(t, plan.Groups, 1)
	require.NotNil(t, plan.Groups[0].Rejected)
	assert.Equal(t, "again", plan.Groups[0].Rejected.Why, "the latest rejection")
	assert.Equal(t, 2, depthOf(t, client, q.DLQURL), "a rejection moves nothing")

	var actions []string
	for _, r := range auditLines(t, auditFile) {
		actions = append(actions, string(r.Action)+":"+string(r.Outcome))
	}
	assert.Equal(t, []string{"reconcile:refused", "reconcile:refused", "reconcile:ok", "reconcile:ok", "reconcile:ok", "reconcile:refused", "reconcile:ok",
		"plan:shown", "select:begun", "select:ok", "select:refused", "select:dry_run", "reject:ok", "reject:ok", "plan:shown"}, actions)
}

// tenantOfKey is the tenant of a key the workload made: tenant:run:task.
func tenantOfKey(k string) string { return strings.SplitN(k, ":", 2)[0] }
