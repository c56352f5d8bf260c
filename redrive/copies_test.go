package redrive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/functions/sampleworker"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/testkit/sqsfake"
)

// copiesPair is a hot queue and DLQ of p on the shared in-memory SQS, as
// the CDK app makes them, and a Redriver on it.
func copiesPair(t *testing.T, p *pipeline.Pipeline) (*sqsfake.Fake, pipeline.Queues, *Redriver, *memStore) {
	t.Helper()
	f := sqsfake.New(nil)
	q := pipeline.Queues{HotURL: "http://fake/q/" + p.HotQueueName(), HotARN: "arn:aws:sqs:us-east-1:000000000000:" + p.HotQueueName(),
		DLQURL: "http://fake/q/" + p.DLQName(), DLQARN: "arn:aws:sqs:us-east-1:000000000000:" + p.DLQName()}
	f.AddQueue(&sqsfake.Queue{URL: q.HotURL, ARN: q.HotARN,
		Attributes: map[string]string{"QueueArn": q.HotARN, "RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":%d}`, q.DLQARN, p.MaxReceiveCount)},
		Tags:       map[string]string{pipeline.TagPipeline: p.Name, pipeline.TagOwner: p.Owner, pipeline.TagRole: "hot"}})
	f.AddQueue(&sqsfake.Queue{URL: q.DLQURL, ARN: q.DLQARN,
		Attributes: map[string]string{"QueueArn": q.DLQARN, "RedriveAllowPolicy": fmt.Sprintf(`{"redrivePermission":"byQueue","sourceQueueArns":[%q]}`, q.HotARN)},
		Tags:       map[string]string{pipeline.TagPipeline: p.Name, pipeline.TagOwner: p.Owner, pipeline.TagRole: "dlq"}})
	store := &memStore{}
	clock := &testClock{t: sqsfake.Start}
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	r, err := New(Config{
		Pipeline: p, Queues: q, SQS: f, Ledger: ledger.NewMemory(), Logger: quiet,
		Audit: &audit.Auditor{Store: store, Now: clock.get, Logger: quiet},
		Now:   func() time.Time { return clock.advance(10 * time.Millisecond) },
		Sleep: func(ctx context.Context, d time.Duration) error { clock.advance(d); return ctx.Err() },
	})
	require.NoError(t, err)
	r.tag = testTag
	return f, q, r, store
}

// putLetter puts d in the DLQ as the worker's send does (and as its
// retried send does again).
func putLetter(f *sqsfake.Fake, q pipeline.Queues, d deadLetter) string {
	return f.Put(q.DLQURL, sqsfake.Message{Body: d.body, Attributes: attributesToSQS(d.attrs)})
}

// nearCopy is d dead-lettered again on another receive: the same message
// and body, metadata of its own (one more attempt).
func nearCopy(t *testing.T, d deadLetter) deadLetter {
	t.Helper()
	meta, _, err := deadletter.DecodeDeadLetter(d.attrs)
	require.NoError(t, err)
	meta.Attempts++
	d.attrs, err = deadletter.EncodeDeadLetter(*meta, d.original)
	require.NoError(t, err)
	return d
}

func TestSelectMovesOneCopyAndDeletesTheOthers(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f, q, r, store := copiesPair(t, p)
	d := newDeadLetter(t, "k1", "web.search", deadletter.ReasonDependencyOpen, 3, "")
	first := putLetter(f, q, d)
	second := putLetter(f, q, d)
	third := putLetter(f, q, d)
	near := putLetter(f, q, nearCopy(t, d))
	other := putLetter(f, q, newDeadLetter(t, "k2", "web.search", deadletter.ReasonDependencyOpen, 3, ""))

	res, err := r.Select(context.Background(), selReq(p, deadletter.ReasonDependencyOpen))
	require.NoError(t, err)
	assert.Equal(t, 5, res.Seen)
	assert.Equal(t, 3, res.Moved, "the copied letter once, its near-copy (its metadata differs: a letter of its own), the other")
	assert.Equal(t, 2, res.CopiesDeleted)
	assert.Empty(t, f.Snapshot(q.DLQURL), "moved or deleted, every one")
	hot := f.Snapshot(q.HotURL)
	require.Len(t, hot, 3)
	bodies := map[string]int{}
	for _, m := range hot {
		bodies[m.Body]++
	}
	assert.Equal(t, 2, bodies[d.body], "the copied letter and its near-copy")

	require.Len(t, res.Copies, 1)
	kept := res.Copies[0].DLQMessageID
	assert.Equal(t, "orig-k1", res.Copies[0].OriginalMessageID)
	assert.ElementsMatch(t, []string{first, second, third}, append([]string{kept}, res.Copies[0].Deleted...))
	assert.NotContains(t, res.Copies[0].Deleted, near)
	assert.NotContains(t, res.Copies[0].Deleted, other)

	last := store.all()[len(store.all())-1]
	assert.Equal(t, audit.ActionSelect, last.Action)
	assert.Equal(t, 2, last.Counts["copies_deleted"])
	assert.Contains(t, last.Detail["copies_deleted"], kept+" (original orig-k1): deleted ")
	for _, id := range res.Copies[0].Deleted {
		assert.Contains(t, last.Detail["copies_deleted"], id)
	}
}

func TestSelectKeepsCopiesWhenTheMoveFails(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f, q, r, _ := copiesPair(t, p)
	d := newDeadLetter(t, "k1", "web.search", deadletter.ReasonDependencyOpen, 3, "")
	putLetter(f, q, d)
	putLetter(f, q, d)
	f.SendErr = errors.New("hot queue unreachable")

	res, err := r.Select(context.Background(), selReq(p, deadletter.ReasonDependencyOpen))
	require.Error(t, err)
	assert.Zero(t, res.Moved)
	assert.Zero(t, res.CopiesDeleted)
	assert.Len(t, f.Snapshot(q.DLQURL), 2, "no letter is dropped to avoid a duplicate")
}

func TestSelectDryRunCountsCopies(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f, q, r, _ := copiesPair(t, p)
	d := newDeadLetter(t, "k1", "web.search", deadletter.ReasonDependencyOpen, 3, "")
	putLetter(f, q, d)
	putLetter(f, q, d)
	req := selReq(p, deadletter.ReasonDependencyOpen)
	req.DryRun = true

	res, err := r.Select(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, 1, res.WouldMove)
	assert.Equal(t, 1, res.CopiesDeleted, "would delete")
	assert.Len(t, f.Snapshot(q.DLQURL), 2)
	assert.Empty(t, f.Snapshot(q.HotURL))
}

func TestPlanSaysHowManyCopies(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f, q, r, store := copiesPair(t, p)
	d := newDeadLetter(t, "k1", "web.search", deadletter.ReasonDependencyOpen, 3, "")
	putLetter(f, q, d)
	putLetter(f, q, d)
	putLetter(f, q, d)
	putLetter(f, q, newDeadLetter(t, "k2", "web.search", deadletter.ReasonDependencyOpen, 3, ""))
	r.cfg.Scan = r.triageScan

	pl, err := r.Plan(context.Background(), PlanRequest{Actor: "alice"})
	require.NoError(t, err)
	assert.Equal(t, 2, pl.Total, "messages, not copies")
	assert.Equal(t, 2, pl.Copies)
	assert.Equal(t, 1, pl.CopiedLetters)
	last := store.all()[len(store.all())-1]
	assert.Equal(t, 2, last.Counts["copies"])
}

func TestRepairDeletesTheCopiesAfterTheRepair(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f, q, r, store := copiesPair(t, p)
	r.cfg.EvidenceWriter, r.cfg.EvidenceBucket, r.cfg.Catalog = &memPut{objs: map[string][]byte{}}, "evals", sampleworker.Catalog(nil)
	attrs, err := deadletter.EncodeDeadLetter(deadletter.Meta{Reason: deadletter.ReasonSchemaInvalid, Attempts: 1, Error: "schema_invalid: args: bad", MessageID: "orig-k1",
		IdempotencyKey: "k1", Tool: "web.search", ToolVersion: "1", Tenant: "acme", Effect: deadletter.EffectNone,
		DeadLetteredAt: time.Date(2026, 11, 29, 11, 0, 0, 0, time.UTC)}, originalAttrs(2))
	require.NoError(t, err)
	d := deadLetter{body: task("k1", "web.search"), attrs: attrs}
	// Twelve other letters between the copies: the second copy comes in a
	// later receive than the letter repaired.
	first := putLetter(f, q, d)
	for i := range 12 {
		putLetter(f, q, newDeadLetter(t, fmt.Sprintf("o%02d", i), "web.search", deadletter.ReasonSchemaInvalid, 1, ""))
	}
	second := putLetter(f, q, d)
	near := deadLetter{body: d.body, original: originalAttrs(2), attrs: attrs}
	near = nearCopy(t, near)
	nearID := putLetter(f, q, near)

	res, err := r.Repair(context.Background(), RepairRequest{Who: Who{Owner: p.Owner, Why: "INC-7"}, MessageID: first,
		Patch: []byte(`[{"op":"replace","path":"/q","value":"hello again"}]`)})
	require.NoError(t, err)
	assert.Equal(t, []string{second}, res.CopiesDeleted)
	assert.Empty(t, res.CopiesLeft)
	left := map[string]bool{}
	for _, m := range f.Snapshot(q.DLQURL) {
		left[m.ID] = true
	}
	assert.Len(t, left, 13, "the twelve others and the near-copy")
	assert.True(t, left[nearID], "a near-copy is never deleted")
	assert.False(t, left[first])
	assert.False(t, left[second])
	assert.Len(t, f.Snapshot(q.HotURL), 1)
	last := store.all()[len(store.all())-1]
	assert.Equal(t, audit.ActionRepair, last.Action)
	assert.Equal(t, first+" (original orig-k1): deleted "+second, last.Detail["copies_deleted"])
}
