package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/agenttask"
	"github.com/agentdlq/agentdlq/functions/sampleworker"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/local/workload"
	"github.com/agentdlq/agentdlq/redrive"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/testkit/localtest"
)

func TestLedgerVerifyBadInput(t *testing.T) {
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	for _, tt := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"--pipeline", "agent-tasks", "--reason", "maybe", "--owner", "platform-oncall", "--why", "x"}, `refused (unknown_reason): --reason "maybe": unknown reason "maybe" (known: budget_exhausted,`},
		{[]string{"--pipeline", "agent-tasks", "--timeout", "0s", "--owner", "platform-oncall", "--why", "x"}, "refused (bad_input): --timeout 0s is not positive"},
		{[]string{"--owner", "platform-oncall", "--why", "x"}, "--pipeline is required"},
	} {
		stdout, stderr, code := runArgs(t, append(append([]string{"ledger", "verify"}, tt.args...), "--audit", auditPath)...)
		assert.Equal(t, exitRefused, code, tt.args)
		assert.Empty(t, stdout)
		assert.Contains(t, stderr, tt.stderr)
	}
	recs := auditLines(t, auditPath)
	require.Len(t, recs, 2, "every refusal on a pipeline is audited; without a pipeline nothing is written")
	for _, r := range recs {
		assert.Equal(t, audit.ActionReconcile, r.Action)
		assert.Equal(t, audit.OutcomeRefused, r.Outcome)
	}
}

// TestVerifyWalkOnEmulators walks RUNBOOK.md's "verify, then reconcile" on
// the emulators with the real worker and its local effect store: three
// email.send tasks are dead-lettered as effect_unknown, one whose call
// reached the relay and did nothing (timeout_after_effect), one whose call
// took effect and lost its reply (lost_reply), and one run by a worker
// without this store. ledger verify proposes no_effect, confirmed and
// unknown and changes nothing; refusals change nothing; --apply records
// the two definite ones with the verifiers' evidence and leaves the third
// alone; select then moves the no-effect key only.
func TestVerifyWalkOnEmulators(t *testing.T) {
	cfg, _, q, table := onEmulators(t, "agent-tasks")
	ctx := context.Background()
	client := sqs.NewFromConfig(cfg)
	prefix := localtest.Unique("vf")
	mk := func(n int, kind string) workload.Task {
		tk := workload.Make(prefix, n, workload.EffectUnknown, 0)
		tk.Body = strings.Replace(tk.Body, `"kind":"timeout_after_effect"`, `"kind":"`+kind+`"`, 1)
		return tk
	}
	none, done, elsewhere := mk(0, sampleworker.FaultTimeoutAfterEffect), mk(1, sampleworker.FaultLostReply), mk(2, sampleworker.FaultTimeoutAfterEffect)
	work := func(tasks ...workload.Task) {
		t.Helper()
		_, err := workload.Send(ctx, client, q.HotURL, false, tasks, 1)
		require.NoError(t, err)
		workUntilIdle(t, table)
	}
	// A worker with another effect store (as a worker elsewhere would be).
	t.Setenv("AGENTDLQ_LOCAL_DIR", t.TempDir())
	work(elsewhere)
	t.Setenv("AGENTDLQ_LOCAL_DIR", t.TempDir())
	work(none, done)
	require.Equal(t, 3, depthOf(t, client, q.DLQURL), "all three dead-lettered")

	l := ledger.NewDynamo(dynamodb.NewFromConfig(cfg), table)
	entries := func() map[string]ledger.Entry {
		out := map[string]ledger.Entry{}
		for _, task := range []workload.Task{none, done, elsewhere} {
			k := task.Key
			e, ok, err := l.Get(ctx, ledger.Key("agent-tasks", task.Tenant, k)) // a key is its tenant's within the pipeline
			require.NoError(t, err)
			require.True(t, ok, k)
			out[k] = e
		}
		return out
	}
	before := entries()
	for k, e := range before {
		require.True(t, e.EffectUnknown(time.Now()), "%s: %+v", k, e)
	}

	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	common := []string{"--pipeline", "agent-tasks", "--audit", auditPath, "--ledger-table", table}
	verify := func(args ...string) (string, string, int) {
		t.Helper()
		return runArgs(t, append(append([]string{"ledger", "verify"}, common...), args...)...)
	}

	// Refusals: a stranger, no why. Nothing changes.
	_, stderr, code := verify("--owner", "mallory", "--why", "x", "--apply")
	assert.Equal(t, exitRefused, code)
	assert.Contains(t, stderr, `may not reconcile the ledger keys of pipeline "agent-tasks"`)
	_, stderr, code = verify("--owner", "platform-oncall", "--apply")
	assert.Equal(t, exitRefused, code)
	assert.Contains(t, stderr, "--why")
	assert.Equal(t, before, entries(), "a refusal changes nothing")

	// The proposal, as JSON: one row a key, nothing changed.
	why := []string{"--owner", "platform-oncall", "--why", "INC-77: check the mail relay"}
	stdout, stderr, code := verify(append(why, "-o", "json")...)
	require.Equal(t, 0, code, stdout+stderr)
	var res redrive.VerifyResult
	require.NoError(t, json.Unmarshal([]byte(stdout), &res), stdout)
	assert.False(t, res.Applied)
	got := map[string]redrive.Verified{}
	for _, k := range res.Keys {
		got[k.Key] = k
	}
	require.Len(t, got, 3, stdout)
	assert.Equal(t, agenttask.VerdictNoEffect, got[none.Key].Verdict, got[none.Key].Evidence)
	assert.Equal(t, agenttask.VerdictConfirmed, got[done.Key].Verdict, got[done.Key].Evidence)
	task, err := agenttask.DecodeTask([]byte(done.Body), nil)
	require.NoError(t, err)
	assert.Equal(t, sampleworker.Receipt(task.Args), got[done.Key].Receipt, "the receipt of the effect the store holds")
	assert.Equal(t, agenttask.VerdictUnknown, got[elsewhere.Key].Verdict)
	assert.Contains(t, got[elsewhere.Key].Evidence, "no call for the key reached it")
	for _, k := range res.Keys {
		assert.Equal(t, "email.send", k.Tool)
		assert.NotContains(t, k.Evidence, "oncall@example.com", "no args in the evidence")
	}
	assert.Equal(t, before, entries(), "a proposal changes nothing")

	// The table: a row a key, and what to do next.
	stdout, stderr, code = verify(why...)
	require.Equal(t, 0, code, stdout+stderr)
	assert.Regexp(t, `^KEY\s+TOOL\s+LETTERS\s+VERDICT\s+RECEIPT\s+EVIDENCE`, stdout)
	assert.Contains(t, stderr, "3 key(s) of effect_unknown: 1 confirmed, 1 no_effect, 1 unknown, 0 skipped")
	assert.Contains(t, stderr, "rerun with --apply")

	// Apply: the two definite verdicts are reconciled; the unknown one is not.
	stdout, stderr, code = verify(append(why, "--apply")...)
	require.Equal(t, 0, code, stdout+stderr)
	assert.Regexp(t, `RECONCILED\n`, stdout)
	assert.Contains(t, stderr, "reconciled 2, refused 0")
	after := entries()
	assert.True(t, after[none.Key].NoEffect(), "%+v", after[none.Key])
	assert.True(t, after[done.Key].EffectConfirmed(), "%+v", after[done.Key])
	assert.Equal(t, sampleworker.Receipt(task.Args), after[done.Key].Receipt)
	assert.Equal(t, before[elsewhere.Key], after[elsewhere.Key], "unknown is left alone")

	// Again: the two are skipped as reconciled.
	stdout, stderr, code = verify(append(why, "--apply", "-o", "json")...)
	require.Equal(t, 0, code, stdout+stderr)
	res = redrive.VerifyResult{}
	require.NoError(t, json.Unmarshal([]byte(stdout), &res), stdout)
	assert.Equal(t, map[string]int{"skipped": 2, "unknown": 1}, res.Counts)

	// select without --override moves the no-effect key only.
	out, code := runCLI(t, append([]string{"redrive", "select", "--reason", "effect_unknown", "--owner", "platform-oncall", "--why", "verified: nothing was sent", "--rate", "50"}, common...)...)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "moved 1")
	assert.Equal(t, 2, depthOf(t, client, q.DLQURL), "the confirmed key and the unknown one stay")

	var actions []string
	for _, r := range auditLines(t, auditPath) {
		a := string(r.Action) + ":" + string(r.Outcome)
		if v := r.Detail["verify"]; v != "" {
			a += ":" + v
		}
		if r.Detail["evidence"] != "" {
			assert.Contains(t, r.Detail["evidence"], "email.send verifier: sample effect store")
			a += ":evidence"
		}
		actions = append(actions, a)
	}
	assert.Equal(t, []string{"reconcile:refused:apply", "reconcile:refused:apply",
		"reconcile:dry_run:propose", "reconcile:dry_run:propose",
		"reconcile:ok:evidence", "reconcile:ok:evidence", "reconcile:ok:apply", "reconcile:ok:apply",
		"select:begun", "select:ok"}, actions)
}
