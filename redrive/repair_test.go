package redrive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/agenttask"
	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/functions/sampleworker"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
)

// repairRig is a Redriver on the fake SQS with an eval bucket and the
// sample catalog, and a DLQ seeded with dead letters.
type repairRig struct {
	r     *Redriver
	f     *fakeSQS
	q     pipeline.Queues
	s3    *memPut
	store *fileAudit
	led   *ledger.Memory
	p     *pipeline.Pipeline
}

func newRepairRig(t *testing.T) *repairRig {
	t.Helper()
	p := testPipeline(t, "agent-tasks")
	f := newFakeSQS()
	q := f.addPair(p)
	r, _, led := newRedriver(t, p, f, q)
	store := &fileAudit{FileStore: &audit.FileStore{Path: filepath.Join(t.TempDir(), "audit.jsonl")}, t: t}
	r.cfg.Audit.Store = store.FileStore
	s := &memPut{objs: map[string][]byte{}}
	r.cfg.EvidenceWriter, r.cfg.EvidenceBucket, r.cfg.Catalog = s, "evals", sampleworker.Catalog(nil)
	return &repairRig{r: r, f: f, q: q, s3: s, store: store, led: led, p: p}
}

// letterOf seeds a dead letter of tool with reason and effect; it returns its DLQ message id.
func (g *repairRig) letterOf(t *testing.T, key, tool string, reason deadletter.Reason, effect deadletter.EffectState) string {
	t.Helper()
	attrs, err := deadletter.EncodeDeadLetter(deadletter.Meta{Reason: reason, Attempts: 1, Error: "schema_invalid: args: bad", MessageID: "orig-" + key,
		IdempotencyKey: key, Tool: tool, ToolVersion: "1", Tenant: "acme", Effect: effect,
		DeadLetteredAt: time.Date(2026, 11, 29, 11, 0, 0, 0, time.UTC)}, originalAttrs(2))
	require.NoError(t, err)
	return g.f.put(g.q.DLQURL, task(key, tool), attrs, "")
}

func (g *repairRig) req(id, patch string) RepairRequest {
	return RepairRequest{Who: Who{Owner: g.p.Owner, Why: "the planner sent q as a number (INC-7)"}, MessageID: id, Patch: []byte(patch)}
}

func TestRepairSendsTheRepairedTaskKeepsTheOriginalAndDeletesAfter(t *testing.T) {
	t.Parallel()
	g := newRepairRig(t)
	id := g.letterOf(t, "k1", "web.search", deadletter.ReasonSchemaInvalid, deadletter.EffectNone)
	g.letterOf(t, "k2", "web.search", deadletter.ReasonSchemaInvalid, deadletter.EffectNone)
	patch := `[{"op":"replace","path":"/q","value":"hello again"},{"op":"add","path":"/max_results","value":5}]`

	// A preview changes nothing and shows the diff.
	pre, err := g.r.Repair(context.Background(), RepairRequest{Who: g.req(id, patch).Who, MessageID: id, Patch: []byte(patch), Preview: true})
	require.NoError(t, err)
	assert.JSONEq(t, `{"q":"hello k1"}`, string(pre.Before))
	assert.JSONEq(t, `{"q":"hello again","max_results":5}`, string(pre.After))
	assert.Len(t, g.f.snapshot(g.q.DLQURL), 2)
	assert.Empty(t, g.f.snapshot(g.q.HotURL))
	assert.Empty(t, g.s3.objs)

	res, err := g.r.Repair(context.Background(), g.req(id, patch))
	require.NoError(t, err)
	assert.Equal(t, "orig-k1", res.OriginalMessageID)
	assert.Equal(t, deadletter.ReasonSchemaInvalid, res.Reason)
	hot := g.f.snapshot(g.q.HotURL)
	require.Len(t, hot, 1)
	var sent agenttask.Task
	require.NoError(t, json.Unmarshal([]byte(hot[0].body), &sent))
	assert.Equal(t, "k1~repair-"+res.ArgsAfterSHA256[:12], sent.IdempotencyKey, "the repaired task is another task: a key of its own")
	assert.Equal(t, sent.IdempotencyKey, res.RepairedKey)
	assert.Equal(t, "k1", res.IdempotencyKey)
	assert.JSONEq(t, `{"q":"hello again","max_results":5}`, string(sent.Args))
	assert.Equal(t, originalAttrs(2), attributesFromSQS(hot[0].attrs), "the original attributes go with it, dlq_* removed")
	assert.Equal(t, bodySHA256(hot[0].body), res.BodyAfterSHA256)
	require.Len(t, g.f.snapshot(g.q.DLQURL), 1, "the repaired letter is gone, the other stays")
	assert.GreaterOrEqual(t, res.Seen, 1)

	// The original is kept in the eval bucket.
	require.True(t, strings.HasPrefix(res.Evidence, "s3://evals/agent-tasks/repairs/2026-11-29/"+id), res.Evidence)
	var ev repairEvidence
	require.NoError(t, json.Unmarshal(g.s3.objs[strings.TrimPrefix(res.Evidence, "s3://")], &ev))
	assert.Equal(t, task("k1", "web.search"), ev.Body)
	assert.Equal(t, bodySHA256(ev.Body), res.BodyBeforeSHA256)
	assert.JSONEq(t, patch, string(ev.Patch))

	// The audit: a dry run, then begun and ok with the diff.
	var got []string
	for _, rec := range g.store.all() {
		got = append(got, string(rec.Action)+":"+string(rec.Outcome))
	}
	assert.Equal(t, []string{"repair:dry_run", "repair:begun", "repair:ok"}, got)
	last := g.store.all()[2]
	assert.JSONEq(t, patch, last.Detail["patch"])
	assert.Equal(t, res.ArgsBeforeSHA256, last.Detail["args_before_sha256"])
	assert.Equal(t, res.ArgsAfterSHA256, last.Detail["args_after_sha256"])
	assert.Equal(t, res.Evidence, last.Detail["evidence"])
	assert.Equal(t, res.HotMessageID, last.Detail["hot_message_id"])
	assert.NotContains(t, last.Detail["patch"]+last.Detail["args_before_sha256"], "hello k1", "the args are not in the audit")
	e, ok, err := g.led.Get(context.Background(), acmeKey(res.RepairedKey))
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, 1, e.RedriveCount, "the repaired key's redrive count: a repair that keeps failing becomes redrive_loop")
	assert.Equal(t, res.RepairedKey, last.Detail["repaired_idempotency_key"])
	assert.Equal(t, "k1", last.Detail["idempotency_key"])

	// A rerun finds no letter, says so and when it was repaired; nothing changes.
	_, err = g.r.Repair(context.Background(), g.req(id, patch))
	var rf *Refusal
	require.ErrorAs(t, err, &rf)
	assert.Equal(t, redrivetype.CodeLetterNotFound, rf.Code)
	assert.Contains(t, err.Error(), "it was repaired by platform-oncall at")
	assert.Len(t, g.f.snapshot(g.q.HotURL), 1)
	assert.Len(t, g.f.snapshot(g.q.DLQURL), 1)
}

func TestRepairRefusalsChangeNothing(t *testing.T) {
	t.Parallel()
	g := newRepairRig(t)
	ok := g.letterOf(t, "ok", "web.search", deadletter.ReasonSchemaInvalid, deadletter.EffectNone)
	mail := g.letterOf(t, "mail", "email.send", deadletter.ReasonEffectUnknown, deadletter.EffectUnknown)
	forged := g.letterOf(t, "forged", "web.search", deadletter.ReasonSignatureInvalid, deadletter.EffectNone)
	reused := g.letterOf(t, "reused", "web.search", deadletter.ReasonIdempotencyKeyReused, deadletter.EffectNone)
	fix := `[{"op":"replace","path":"/q","value":"x"}]`
	tests := []struct {
		name  string
		req   RepairRequest
		code  redrivetype.Code
		field string
	}{
		{"a stranger", RepairRequest{Who: Who{Owner: "mallory", Why: "x"}, MessageID: ok, Patch: []byte(fix)}, redrivetype.CodeOwner, "Owner"},
		{"no why", RepairRequest{Who: Who{Owner: g.p.Owner}, MessageID: ok, Patch: []byte(fix)}, redrivetype.CodeWhy, "Why"},
		{"no message id", g.req("", fix), redrivetype.CodeBadInput, "MessageID"},
		{"not a patch", g.req(ok, `{"op":"replace"}`), redrivetype.CodeBadInput, "Patch"},
		{"an empty patch", g.req(ok, `[]`), redrivetype.CodeBadInput, "Patch"},
		{"a patch that does not apply", g.req(ok, `[{"op":"remove","path":"/nope"}]`), redrivetype.CodeBadInput, "Patch"},
		{"a patch that changes nothing", g.req(ok, `[{"op":"replace","path":"/q","value":"hello ok"}]`), redrivetype.CodeBadInput, "Patch"},
		{"a task the patch breaks", g.req(ok, `[{"op":"replace","path":"","value":[1]}]`), redrivetype.CodeRepairInvalid, ""},
		{"a mutating tool's task not reconciled", g.req(mail, `[{"op":"replace","path":"/q","value":"y"}]`), redrivetype.CodeNotSettled, ""},
		{"a security reason", g.req(forged, fix), redrivetype.CodeForbidden, ""},
		{"a reused key", g.req(reused, fix), redrivetype.CodeForbidden, ""},
		{"no such letter", g.req("m-9999", fix), redrivetype.CodeLetterNotFound, "MessageID"},
	}
	for _, tt := range tests {
		res, err := g.r.Repair(context.Background(), tt.req)
		var rf *Refusal
		require.ErrorAs(t, err, &rf, tt.name)
		assert.Equal(t, tt.code, rf.Code, "%s: %v", tt.name, err)
		assert.Equal(t, tt.field, rf.Field, "%s: %v", tt.name, err)
		require.NotNil(t, res, tt.name)
		assert.Len(t, g.f.snapshot(g.q.DLQURL), 4, "%s: the DLQ keeps every letter", tt.name)
		for _, m := range g.f.snapshot(g.q.DLQURL) {
			assert.False(t, m.visibleAt.After(g.f.Now()), "%s: every letter released", tt.name)
		}
		assert.Empty(t, g.f.snapshot(g.q.HotURL), tt.name)
		assert.Empty(t, g.s3.objs, tt.name)
	}
	for _, rec := range g.store.all() {
		assert.Equal(t, audit.OutcomeRefused, rec.Outcome, "%+v", rec)
		assert.Equal(t, audit.ActionRepair, rec.Action)
	}
	assert.Len(t, g.store.all(), len(tests), "every refusal is audited")

	// Reconciled as no effect, the mutating tool's task may be repaired.
	_, err := g.led.Begin(context.Background(), "mail", "o", "", time.Now(), time.Minute)
	require.NoError(t, err)
	require.NoError(t, g.led.StartEffect(context.Background(), "mail", "o", time.Now()))
	_, err = g.led.DeadLettered(context.Background(), "mail", deadletter.ReasonEffectUnknown, time.Now())
	require.NoError(t, err)
	_, err = g.led.Reconcile(context.Background(), "mail", ledger.Reconciliation{Outcome: ledger.OutcomeNoEffect, By: g.p.Owner}, time.Now())
	require.NoError(t, err)
	_, err = g.r.Repair(context.Background(), g.req(mail, `[{"op":"replace","path":"/q","value":"y"}]`))
	require.NoError(t, err)
	assert.Len(t, g.f.snapshot(g.q.HotURL), 1)
}

func TestRepairKeepsNothingSentWhenTheEvidenceCannotBeKept(t *testing.T) {
	t.Parallel()
	g := newRepairRig(t)
	id := g.letterOf(t, "k", "web.search", deadletter.ReasonSchemaInvalid, deadletter.EffectNone)
	g.r.cfg.EvidenceWriter = failingPut{}
	_, err := g.r.Repair(context.Background(), g.req(id, `[{"op":"replace","path":"/q","value":"x"}]`))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nothing was sent")
	assert.Len(t, g.f.snapshot(g.q.DLQURL), 1)
	assert.Empty(t, g.f.snapshot(g.q.HotURL))

	// A failed send leaves the letter too.
	g.r.cfg.EvidenceWriter = g.s3
	g.f.SendErr = errors.New("throttled")
	_, err = g.r.Repair(context.Background(), g.req(id, `[{"op":"replace","path":"/q","value":"x"}]`))
	require.ErrorContains(t, err, "the dead letter stays in the DLQ")
	assert.Len(t, g.f.snapshot(g.q.DLQURL), 1)
	assert.Empty(t, g.f.snapshot(g.q.HotURL))
}

// A dead letter whose claim check restores nothing is not repaired: the
// error says why, in words, and nothing is sent or kept.
func TestRepairLeavesALetterWhoseClaimCheckRestoresNothing(t *testing.T) {
	t.Parallel()
	g := newRepairRig(t)
	attrs, err := deadletter.EncodeDeadLetter(deadletter.Meta{Reason: deadletter.ReasonSchemaInvalid, Attempts: 1, Error: "schema_invalid: args: bad",
		MessageID: "orig-k", IdempotencyKey: "k", Tool: "web.search", ToolVersion: "1", Effect: deadletter.EffectNone,
		Evidence: "s3://evals/agent-tasks/evidence/orig-k.json", DeadLetteredAt: time.Date(2026, 11, 29, 11, 0, 0, 0, time.UTC)}, originalAttrs(1))
	require.NoError(t, err)
	id := g.f.put(g.q.DLQURL, task("k", "web.search"), attrs, "")
	_, err = g.r.Repair(context.Background(), g.req(id, `[{"op":"replace","path":"/q","value":"x"}]`))
	require.ErrorContains(t, err, "no S3 client to read it (Config.Evidence)")
	assert.NotContains(t, err.Error(), "&{", "the cause in words, not a struct")
	assert.Len(t, g.f.snapshot(g.q.DLQURL), 1)
	assert.Empty(t, g.f.snapshot(g.q.HotURL))
	assert.Empty(t, g.s3.objs)
}

// A DLQ seen only in part: the letter may be among those another reader
// holds, so the repair is partial (not a refusal), audited as such.
func TestRepairOnAPartialScan(t *testing.T) {
	t.Parallel()
	g := newRepairRig(t)
	g.letterOf(t, "k1", "web.search", deadletter.ReasonSchemaInvalid, deadletter.EffectNone)
	g.letterOf(t, "k2", "web.search", deadletter.ReasonSchemaInvalid, deadletter.EffectNone)
	out, err := g.f.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &g.q.DLQURL, MaxNumberOfMessages: 1, VisibilityTimeout: 300})
	require.NoError(t, err)
	require.Len(t, out.Messages, 1)
	_, err = g.r.Repair(context.Background(), g.req("m-9999", `[{"op":"replace","path":"/q","value":"x"}]`))
	var pe *redrivetype.PartialError
	require.ErrorAs(t, err, &pe)
	assert.NotErrorIs(t, err, ErrRefused)
	recs := g.store.all()
	require.Len(t, recs, 1)
	assert.Equal(t, audit.OutcomePartial, recs[0].Outcome)
	assert.Empty(t, g.f.snapshot(g.q.HotURL))
}

func TestAuditedPatchDropsTheValuesOfDroppedFields(t *testing.T) {
	t.Parallel()
	g := newRepairRig(t)
	g.r.cfg.Pipeline.Eval.DropFields = []string{"args.api_key", "args.auth.token"}
	out := string(g.r.auditedPatch([]byte(`[{"op":"replace","path":"/api_key","value":"s3cr3t"},{"op":"add","path":"/auth/token","value":"t0k"},{"op":"replace","path":"/q","value":"visible"}]`)))
	assert.NotContains(t, out, "s3cr3t")
	assert.NotContains(t, out, "t0k")
	assert.Contains(t, out, "visible")
	assert.Contains(t, out, "[dropped: sha256:")
}

type failingPut struct{}

func (failingPut) PutObject(context.Context, *s3.PutObjectInput, ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	return nil, errors.New("AccessDenied")
}

// fileAudit is the rig's audit: a file, which Repair reads back.
type fileAudit struct {
	*audit.FileStore
	t *testing.T
}

func (a *fileAudit) all() []audit.Entry {
	es, err := a.Entries(context.Background(), "agent-tasks")
	require.NoError(a.t, err)
	return es
}

func TestRepairedKeyStaysWithinTheContract(t *testing.T) {
	t.Parallel()
	sum := bodySHA256("args")
	assert.Equal(t, "k~repair-"+sum[:12], repairedKey("k", sum))
	long := strings.Repeat("ü", 256)
	got := repairedKey(long, sum)
	assert.Equal(t, 256, len([]rune(got)))
	assert.True(t, strings.HasSuffix(got, "~repair-"+sum[:12]))
	assert.Equal(t, got, repairedKey(long, sum), "the same repair, the same key")
}

// memPut is an S3 PutObject in memory: the eval bucket's objects.
type memPut struct {
	mu   sync.Mutex
	objs map[string][]byte
}

func (f *memPut) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	b, err := io.ReadAll(in.Body)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.objs[aws.ToString(in.Bucket)+"/"+aws.ToString(in.Key)] = b
	return &s3.PutObjectOutput{}, nil
}

// An audited patch cut to its bound says so, and is cut on a rune.
func TestTruncateMarksTheCut(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "abc", truncate("abc", 3))
	assert.Equal(t, "ab…", truncate("abcd", 2))
	assert.Equal(t, "a…", truncate("aéb", 2))
}

// TestRepairFollowsThePolicy repairs (as a preview) a dead letter of every
// reason: Repair refuses as forbidden exactly the reasons whose policy says
// a patch of the args does not repair them (deadletter.Reason.Patchable),
// naming the reason's next action, and previews the others.
func TestRepairFollowsThePolicy(t *testing.T) {
	t.Parallel()
	g := newRepairRig(t)
	for i, r := range deadletter.AllReasons() {
		id := g.letterOf(t, fmt.Sprintf("k%02d", i), "web.search", r, deadletter.EffectNone)
		req := g.req(id, `[{"op":"replace","path":"/q","value":"x"}]`)
		req.Preview = true
		_, err := g.r.Repair(context.Background(), req)
		if r.Patchable() {
			assert.NoError(t, err, "%s may be patched", r)
			continue
		}
		var rf *Refusal
		require.ErrorAs(t, err, &rf, "%s is never patched", r)
		assert.Equal(t, redrivetype.CodeForbidden, rf.Code, "%s: %v", r, err)
		assert.Contains(t, err.Error(), "a "+string(r)+" dead letter is never repaired", r)
		if r.Class() != deadletter.ClassSecurity && r != deadletter.ReasonRedriveLoop {
			assert.Contains(t, err.Error(), "next action "+string(r.NextAction()), r)
		}
	}
	assert.Len(t, g.f.snapshot(g.q.DLQURL), len(deadletter.AllReasons()), "a preview or a refusal changes nothing")
	assert.Empty(t, g.f.snapshot(g.q.HotURL))
}
