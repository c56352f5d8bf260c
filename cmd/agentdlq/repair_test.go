package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/local/workload"
	"github.com/agentdlq/agentdlq/redrive"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/testkit/localtest"
	"github.com/agentdlq/agentdlq/triage"
)

// TestRepairWalkOnEmulators walks RUNBOOK.md's repair section on the
// emulators with the real worker: a read-only task whose args make the
// tool fail (unclassified) and a mutating task whose effect is unknown are
// dead-lettered; every refusal leaves the DLQ as it was; a dry run shows
// the diff; the repair keeps the original in the eval bucket, sends the
// repaired task, deletes the letter, and the worker runs it; a rerun finds
// no letter and says so; the mutating task is repaired once reconciled as
// no effect.
func TestRepairWalkOnEmulators(t *testing.T) {
	cfg, _, q, table := onEmulators(t, "agent-tasks")
	ctx := context.Background()
	client := sqs.NewFromConfig(cfg)
	bucket := localtest.Bucket(t, cfg)
	prefix := localtest.Unique("rp")
	tasks := []workload.Task{workload.Make(prefix, 0, workload.Unclassified, 0), workload.Make(prefix, 1, workload.EffectUnknown, 0)}
	_, err := workload.Send(ctx, client, q.HotURL, false, tasks, 1)
	require.NoError(t, err)
	workUntilIdle(t, table)
	require.Equal(t, 2, depthOf(t, client, q.DLQURL), "both dead-lettered")

	// The letters' ids, as triage lists them.
	out, code := runCLI(t, "triage", "--pipeline", "agent-tasks", "--ledger-table", table, "--reports", "", "--no-progress", "-o", "json")
	require.Equal(t, 0, code, out)
	var rep triage.Report
	require.NoError(t, json.Unmarshal([]byte(out[strings.Index(out, "{\n"):]), &rep), out)
	ids := map[deadletter.Reason]string{}
	for _, g := range rep.Groups {
		require.Len(t, g.SampleMessageIDs, 1)
		ids[g.Reason] = g.SampleMessageIDs[0]
	}
	bad, mail := ids[deadletter.ReasonUnclassified], ids[deadletter.ReasonEffectUnknown]
	require.NotEmpty(t, bad, "%v", ids)
	require.NotEmpty(t, mail, "%v", ids)

	dir := t.TempDir()
	file := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
		return p
	}
	fix := file("fix.json", `[{"op":"remove","path":"/fault"}]`)
	auditFile := filepath.Join(dir, "audit.jsonl")
	common := []string{"redrive", "repair", "--pipeline", "agent-tasks", "--audit", auditFile, "--ledger-table", table, "--evidence-bucket", bucket, "--hold", "5s"}
	owner := []string{"--owner", "platform-oncall", "--why", "the planner put a test fault in production args (INC-21)"}
	run := func(args ...string) (string, int) {
		t.Helper()
		return runCLI(t, append(append([]string{}, common...), args...)...)
	}

	// Refusals change nothing.
	for _, args := range [][]string{
		{"--message-id", bad, "--patch", fix, "--owner", "mallory", "--why", "x"},
		{"--message-id", bad, "--patch", fix, "--owner", "platform-oncall"},
		append([]string{"--message-id", bad, "--patch", filepath.Join(dir, "missing.json")}, owner...),
		append([]string{"--message-id", bad, "--patch", file("notapatch.json", `{"op":"remove"}`)}, owner...),
		append([]string{"--message-id", bad, "--patch", file("nope.json", `[{"op":"remove","path":"/nope"}]`)}, owner...),
		append([]string{"--message-id", bad, "--patch", file("breaks.json", `[{"op":"replace","path":"","value":[1]}]`)}, owner...),
		append([]string{"--message-id", mail, "--patch", fix}, owner...),
		append([]string{"--message-id", "no-such-letter", "--patch", fix}, owner...),
	} {
		out, code := run(args...)
		assert.Equal(t, exitRefused, code, "%v: %s", args, out)
		assert.Equal(t, 2, depthOf(t, client, q.DLQURL), "%v: the DLQ keeps both", args)
		assert.Equal(t, 0, depthOf(t, client, q.HotURL), "%v: nothing sent", args)
	}
	msg := cliErr(t, append(append([]string{}, common...), append([]string{"--message-id", mail, "--patch", fix}, owner...)...)...)
	assert.Contains(t, msg, "refused (effect_not_settled): email.send mutates and key")
	assert.Contains(t, msg, "next: agentdlq triage --pipeline agent-tasks --keys")
	objs, err := s3.NewFromConfig(cfg).ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	require.NoError(t, err)
	assert.Empty(t, objs.Contents, "no refusal keeps anything")

	// A dry run shows the diff and changes nothing.
	out, code = run(append([]string{"--message-id", bad, "--patch", fix, "--dry-run"}, owner...)...)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "would repair dead letter "+bad)
	assert.Contains(t, out, `"fault":{"kind":"error","error":"tool returned an unexpected shape"}`)
	assert.Contains(t, out, "dry run: nothing sent, kept or deleted")
	assert.Equal(t, 2, depthOf(t, client, q.DLQURL))

	// The repair.
	out, code = run(append([]string{"--message-id", bad, "--patch", fix, "-o", "json"}, owner...)...)
	require.Equal(t, 0, code, out)
	var res redrive.RepairResult
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	assert.NotContains(t, string(res.After), "fault")
	assert.Equal(t, 1, depthOf(t, client, q.DLQURL), "the repaired letter is deleted")
	assert.Equal(t, 1, depthOf(t, client, q.HotURL), "the repaired task is on the hot queue")
	key := strings.TrimPrefix(res.Evidence, "s3://"+bucket+"/")
	obj, err := s3.NewFromConfig(cfg).GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	require.NoError(t, err)
	defer obj.Body.Close()
	var kept struct {
		Body string `json:"body"`
	}
	require.NoError(t, json.NewDecoder(obj.Body).Decode(&kept))
	assert.Equal(t, tasks[0].Body, kept.Body, "the original is kept byte for byte")

	// A rerun finds no letter and says when it was repaired.
	msg = cliErr(t, append(append([]string{}, common...), append([]string{"--message-id", bad, "--patch", fix}, owner...)...)...)
	assert.Contains(t, msg, "refused (letter_not_found)")
	assert.Contains(t, msg, "it was repaired by platform-oncall at")
	assert.Equal(t, 1, depthOf(t, client, q.HotURL), "nothing sent twice")

	// The worker runs the repaired task, under a key of its own.
	assert.Equal(t, tasks[0].Key+"~repair-"+res.ArgsAfterSHA256[:12], res.RepairedKey)
	workUntilIdle(t, table)
	led := ledger.NewDynamo(dynamodb.NewFromConfig(cfg), table)
	e, ok, err := led.Get(ctx, ledger.Key("agent-tasks", tasks[0].Tenant, res.RepairedKey))
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, ledger.StateDone, e.State)

	// The mutating task, once reconciled as no effect.
	out, code = runCLI(t, "ledger", "reconcile", "--pipeline", "agent-tasks", "--audit", auditFile, "--ledger-table", table, "--tenant", tasks[1].Tenant, "--key", tasks[1].Key, "--no-effect",
		"--owner", "platform-oncall", "--why", "mail provider log: nothing sent")
	require.Equal(t, 0, code, out)
	out, code = run(append([]string{"--message-id", mail, "--patch", fix, "-o", "json"}, owner...)...)
	require.Equal(t, 0, code, out)
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	assert.Equal(t, 0, depthOf(t, client, q.DLQURL))
	workUntilIdle(t, table)
	e, ok, err = led.Get(ctx, ledger.Key("agent-tasks", tasks[1].Tenant, res.RepairedKey))
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, ledger.StateDone, e.State, "the repaired email ran")

	var got []string
	for _, r := range auditLines(t, auditFile) {
		got = append(got, string(r.Action)+":"+string(r.Outcome))
		if r.Action == audit.ActionRepair && r.Outcome == audit.OutcomeOK {
			assert.JSONEq(t, `[{"op":"remove","path":"/fault"}]`, r.Detail["patch"])
			assert.Len(t, r.Detail["args_before_sha256"], 64)
			assert.Len(t, r.Detail["args_after_sha256"], 64)
			assert.NotEqual(t, r.Detail["args_before_sha256"], r.Detail["args_after_sha256"])
			assert.True(t, strings.HasPrefix(r.Detail["evidence"], "s3://"+bucket+"/agent-tasks/repairs/"), r.Detail["evidence"])
		}
	}
	assert.Equal(t, []string{"repair:refused", "repair:refused", "repair:refused", "repair:refused", "repair:refused", "repair:refused", "repair:refused", "repair:refused",
		"repair:refused", "repair:dry_run", "repair:begun", "repair:ok", "repair:refused", "reconcile:ok", "repair:begun", "repair:ok"}, got)
}
