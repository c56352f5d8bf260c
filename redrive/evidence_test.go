package redrive

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/pipeline"
)

// evidenceS3 serves claim checks by key.
type evidenceS3 map[string][]byte

func (m evidenceS3) GetObject(_ context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	if strings.HasSuffix(aws.ToString(in.Key), "/denied.json") {
		return nil, &smithy.GenericAPIError{Code: "AccessDenied", Message: "Access Denied"}
	}
	b, ok := m[aws.ToString(in.Bucket)+"/"+aws.ToString(in.Key)]
	if !ok {
		return nil, &s3types.NoSuchKey{Message: aws.String("The specified key does not exist.")}
	}
	return &s3.GetObjectOutput{Body: io.NopCloser(bytes.NewReader(b))}, nil
}

func TestRestoreEvidence(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f := newFakeSQS()
	r, _, _ := newRedriver(t, p, f, f.addPair(p))
	ev, err := deadletter.MarshalEvidence(&deadletter.Evidence{Reduced: []deadletter.Reduction{deadletter.ReducedFolded},
		Meta:       deadletter.Meta{MessageID: "m-1", Reason: deadletter.ReasonUnclassified},
		Attributes: map[string]deadletter.Attribute{"kept": {DataType: "String", StringValue: "k"}, "given-up": {DataType: "Binary", BinaryValue: []byte{0, 1, 2}}}})
	require.NoError(t, err)
	r.cfg.EvidenceBucket = "eval"
	r.cfg.Evidence = evidenceS3{
		"eval/agent-tasks/evidence/2026-11-29/m-1.json": ev,
		// A well-formed claim check of the message, in a bucket that is not the eval bucket.
		"other/agent-tasks/evidence/2026-11-29/m-1.json": ev,
		"eval/agent-tasks/evidence/2026-11-29/bad.json":  []byte("not json"),
		"eval/agent-tasks/evidence/2026-11-29/huge.json": bytes.Repeat([]byte(" "), maxEvidenceBytes+1),
	}
	kept := map[string]deadletter.Attribute{"kept": {DataType: "String", StringValue: "k"}}
	for _, tt := range []struct {
		name, ref, msgID, err string
		cause                 ClaimCheckCause
	}{
		{"restored", "s3://eval/agent-tasks/evidence/2026-11-29/m-1.json", "m-1", "", ""},
		{"another pipeline's prefix", "s3://eval/agent-steps/evidence/2026-11-29/m-1.json", "m-1", "not under", ClaimCheckOutsidePrefix},
		{"a path that climbs", "s3://eval/agent-tasks/evidence/../audit/x.json", "m-1", "not under", ClaimCheckOutsidePrefix},
		{"not s3", "https://eval/agent-tasks/evidence/m-1.json", "m-1", "not under", ClaimCheckOutsidePrefix},
		{"missing", "s3://eval/agent-tasks/evidence/2026-11-29/m-2.json", "m-2", "NoSuchKey", ClaimCheckMissing},
		{"not a claim check", "s3://eval/agent-tasks/evidence/2026-11-29/bad.json", "m-1", "is not a claim check", ClaimCheckNotClaimCheck},
		{"another message's", "s3://eval/agent-tasks/evidence/2026-11-29/m-1.json", "m-9", `of message "m-1", not "m-9"`, ClaimCheckOtherMessage},
		{"unreadable", "s3://eval/agent-tasks/evidence/2026-11-29/denied.json", "m-1", "AccessDenied", ClaimCheckUnreadable},
		{"too large", "s3://eval/agent-tasks/evidence/2026-11-29/huge.json", "m-1", "larger than", ClaimCheckTooLarge},
		{"another bucket", "s3://other/agent-tasks/evidence/2026-11-29/m-1.json", "m-1", "not in the eval bucket eval", ClaimCheckOtherBucket},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := original{Evidence: tt.ref, OriginalMessageID: tt.msgID, Attributes: kept}
			cc := r.restoreEvidence(context.Background(), &o)
			if tt.err == "" {
				require.Nil(t, cc)
				assert.Equal(t, map[string]deadletter.Attribute{"kept": kept["kept"], "given-up": {DataType: "Binary", BinaryValue: []byte{0, 1, 2}}}, o.Attributes)
				return
			}
			require.NotNil(t, cc)
			assert.Equal(t, tt.cause, cc.Cause)
			assert.Equal(t, tt.ref, cc.Ref)
			assert.Contains(t, cc.message(), tt.err)
			assert.Contains(t, cc.message(), "stays in the DLQ")
			assert.Equal(t, kept, o.Attributes, "unchanged")
		})
	}
	// No eval bucket configured: no bucket is read, and the error says why.
	r.cfg.EvidenceBucket = ""
	o := original{Evidence: "s3://eval/agent-tasks/evidence/2026-11-29/m-1.json", OriginalMessageID: "m-1"}
	cc := r.restoreEvidence(context.Background(), &o)
	require.NotNil(t, cc)
	assert.Equal(t, ClaimCheckNoBucket, cc.Cause)
	assert.Contains(t, cc.message(), "no eval bucket is configured")
	assert.Contains(t, cc.message(), "Config.EvidenceBucket")
	assert.Empty(t, o.Attributes)

	r.cfg.Evidence = nil
	cc = r.restoreEvidence(context.Background(), &o)
	require.NotNil(t, cc)
	assert.Equal(t, ClaimCheckNoClient, cc.Cause)
	assert.Contains(t, cc.message(), "no S3 client")
}

// putClaimCheckLetter puts in the DLQ a budget_exhausted dead letter whose
// attributes beyond "kept" are in claim check s3://eval/<ref>; it returns
// the claim check's document.
func putClaimCheckLetter(t *testing.T, f *fakeSQS, q pipeline.Queues, key, ref string) []byte {
	t.Helper()
	meta := deadletter.Meta{Reason: deadletter.ReasonBudgetExhausted, Attempts: 1, MessageID: "orig-" + key, IdempotencyKey: key, Tool: "web.search"}
	ev, err := deadletter.MarshalEvidence(&deadletter.Evidence{Meta: meta, Reduced: []deadletter.Reduction{deadletter.ReducedFolded},
		Attributes: map[string]deadletter.Attribute{"kept": {DataType: "String", StringValue: "k"}, "given-up": {DataType: "String", StringValue: "g"}}})
	require.NoError(t, err)
	meta.Evidence, meta.Reduced = "s3://eval/"+ref, []deadletter.Reduction{deadletter.ReducedFolded}
	attrs, err := deadletter.EncodeDeadLetter(meta, map[string]deadletter.Attribute{"kept": {DataType: "String", StringValue: "k"}})
	require.NoError(t, err)
	f.put(q.DLQURL, task(key, "web.search"), attrs, "")
	return ev
}

// A letter left for its claim check counts toward neither --limit nor the
// canary: with --limit 1 the letter behind it still moves.
func TestSelectClaimCheckLeftIsNotCountedInTheLimit(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f := newFakeSQS()
	q := f.addPair(p)
	putClaimCheckLetter(t, f, q, "k-gone", "agent-tasks/evidence/2026-11-29/orig-k-gone.json")
	ev := putClaimCheckLetter(t, f, q, "k-kept", "agent-tasks/evidence/2026-11-29/orig-k-kept.json")
	r, store, _ := newRedriver(t, p, f, q)
	r.cfg.Evidence, r.cfg.EvidenceBucket = evidenceS3{"eval/agent-tasks/evidence/2026-11-29/orig-k-kept.json": ev}, "eval"
	req := selReq(p, deadletter.ReasonBudgetExhausted)
	req.Limit, req.Workers = 1, 1

	res, err := r.Select(context.Background(), req)
	require.ErrorContains(t, err, "claim check restored nothing")
	assert.Equal(t, 1, strings.Count(err.Error(), "in the DLQ"), "where the letters are, said once: %v", err)
	require.Len(t, res.Unrestored, 1)
	assert.Equal(t, ClaimCheckMissing, res.Unrestored[0].Cause)
	assert.Equal(t, 1, res.Moved)
	assert.Equal(t, 1, res.ClaimCheckFailed)
	require.Len(t, res.Letters, 1)
	assert.Equal(t, "k-kept", res.Letters[0].IdempotencyKey)
	hot, dlq := f.snapshot(q.HotURL), f.snapshot(q.DLQURL)
	require.Len(t, hot, 1)
	assert.Equal(t, map[string]deadletter.Attribute{"kept": {DataType: "String", StringValue: "k"}, "given-up": {DataType: "String", StringValue: "g"}},
		attributesFromSQS(hot[0].attrs))
	require.Len(t, dlq, 1, "counts conserved: 2 = 1 moved + 1 left")
	assert.False(t, dlq[0].visibleAt.After(f.Now()), "visible again when the pass ended")
	recs := store.all()
	assert.Equal(t, 1, recs[len(recs)-1].Counts["claim_check_failed.missing"])
}

// A pass interrupted while it reads a claim check does not blame the claim
// check: the letter is released, not counted as unrestored.
func TestSelectInterruptedDuringClaimCheckRead(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f := newFakeSQS()
	q := f.addPair(p)
	ev := putClaimCheckLetter(t, f, q, "k-1", "agent-tasks/evidence/2026-11-29/orig-k-1.json")
	r, _, _ := newRedriver(t, p, f, q)
	ctx, cancel := context.WithCancel(context.Background())
	r.cfg.Evidence, r.cfg.EvidenceBucket = cancelingS3{evidenceS3{"eval/agent-tasks/evidence/2026-11-29/orig-k-1.json": ev}, cancel}, "eval"

	res, err := r.Select(ctx, selReq(p, deadletter.ReasonBudgetExhausted))
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 0, res.ClaimCheckFailed)
	assert.Equal(t, 0, res.Moved)
	assert.Equal(t, 1, res.Released)
	assert.NotEmpty(t, res.Partial)
	dlq := f.snapshot(q.DLQURL)
	require.Len(t, dlq, 1)
	assert.False(t, dlq[0].visibleAt.After(f.Now()), "visible again")
}

// cancelingS3 cancels the pass as it reads a claim check.
type cancelingS3 struct {
	evidenceS3
	cancel context.CancelFunc
}

func (c cancelingS3) GetObject(ctx context.Context, _ *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	c.cancel()
	return nil, ctx.Err()
}

// A letter left for its claim check was never sent: it is not one of the
// canary's letters. The canary is the letter behind it, which moves and is
// processed; the left letter neither fills the canary nor waits for an
// outcome that cannot come.
func TestSelectClaimCheckLeftIsNotInTheCanary(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f := newFakeSQS()
	q := f.addPair(p)
	putClaimCheckLetter(t, f, q, "k-gone", "agent-tasks/evidence/2026-11-29/orig-k-gone.json")
	ev := putClaimCheckLetter(t, f, q, "k-kept", "agent-tasks/evidence/2026-11-29/orig-k-kept.json")
	r, _, led := newRedriver(t, p, f, q)
	r.cfg.Evidence, r.cfg.EvidenceBucket = evidenceS3{"eval/agent-tasks/evidence/2026-11-29/orig-k-kept.json": ev}, "eval"
	w := &simWorker{t: t, f: f, q: q, led: led, processed: map[string]int{}}
	r.cfg.Sleep = func(ctx context.Context, d time.Duration) error { w.drain(); return ctx.Err() }
	req := selReq(p, deadletter.ReasonBudgetExhausted)
	req.Canary, req.Workers, req.CanaryTimeout = 1, 1, 5*time.Second

	res, err := r.Select(context.Background(), req)
	require.ErrorContains(t, err, "claim check restored nothing")
	require.NotErrorIs(t, err, ErrCanaryFailed)
	require.NotNil(t, res.Canary)
	assert.Equal(t, 1, res.Canary.Moved)
	assert.Equal(t, 1, res.Canary.Processed)
	assert.Equal(t, 0, res.Canary.Pending)
	assert.NotContains(t, res.Canary.Outcomes, "", "only sent letters have an outcome")
	assert.Equal(t, 1, res.Moved)
	assert.Equal(t, 1, res.ClaimCheckFailed)
	assert.Equal(t, map[string]int{"k-kept": 1}, w.processed)
	assert.Len(t, f.snapshot(q.DLQURL), 1, "the unrestored letter stays")
}
