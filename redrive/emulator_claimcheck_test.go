package redrive

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/functions/sampleworker"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
	"github.com/agentdlq/agentdlq/testkit/localtest"
)

// A dead letter too large for the DLQ gives up the attributes it cannot
// carry to a claim check in the eval bucket (the real worker, on fauxqs and
// its S3). select reads the claim check back: the letter arrives on the hot
// queue with every original attribute and its body byte for byte. Without
// an S3 client to read it, the letter stays in the DLQ, untouched.
func TestEmulatorRedriveRestoresClaimCheckAttributes(t *testing.T) {
	t.Parallel()
	l, s3c, bucket := newClaimCheckLocal(t)
	ctx := context.Background()
	originals := map[string]sent{}
	for _, key := range []string{"claim-0", "claim-1"} {
		originals[key] = l.deadLetterBig(key)
	}
	require.Equal(t, 2, l.depth(l.q.DLQURL), "the worker dead-lettered both")

	// The dead letters gave the two large attributes up and point to claim checks.
	for _, m := range l.drainQueueKeep(l.q.DLQURL) {
		attrs := attributesFromSQS(m.MessageAttributes)
		meta, restored, err := deadletter.DecodeDeadLetter(attrs)
		require.NoError(t, err)
		assert.NotContains(t, restored, "z-trace-context", "given up: not on the dead letter")
		assert.NotContains(t, restored, "z-blob")
		require.True(t, strings.HasPrefix(meta.Evidence, "s3://"+bucket+"/agent-tasks/evidence/"), meta.Evidence)
		assert.Contains(t, meta.Reduced, deadletter.ReducedFolded)
	}

	req := claimCheckRequest(l)

	// No S3 client: nothing is sent without the attributes it gave up.
	res, err := l.redriver().Select(ctx, req)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "claim check")
	assert.Equal(t, 0, res.Moved)
	assert.Equal(t, 2, res.ClaimCheckFailed, "both tried, both left")
	assert.Equal(t, map[redrivetype.ClaimCheckCause]int{redrivetype.ClaimCheckNoClient: 2}, res.ClaimCheckFailedBy)
	assert.Equal(t, 0, res.SendFailed, "not a failed send")
	assert.Equal(t, 0, l.depth(l.q.HotURL))
	assert.Equal(t, 2, l.depth(l.q.DLQURL), "both stay in the DLQ")

	// The S3 client, but another bucket named as the eval bucket: nothing is
	// read from a bucket that is not the eval bucket.
	r := l.redriver()
	r.cfg.Evidence, r.cfg.EvidenceBucket = s3c, bucket+"-other"
	res, err = r.Select(ctx, req)
	require.Error(t, err)
	assert.Equal(t, 0, res.Moved)
	assert.Equal(t, map[redrivetype.ClaimCheckCause]int{redrivetype.ClaimCheckOtherBucket: 2}, res.ClaimCheckFailedBy)
	assert.Equal(t, 2, l.depth(l.q.DLQURL), "both stay in the DLQ")

	// With the S3 client and the eval bucket, as the CLI wires them.
	r.cfg.EvidenceBucket = bucket
	res, err = r.Select(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, 2, res.Moved)
	assert.Equal(t, 0, l.depth(l.q.DLQURL))
	hot := l.drainQueue(l.q.HotURL)
	require.Len(t, hot, 2)
	for _, m := range hot {
		key := keyOf(t, aws.ToString(m.Body))
		orig, ok := originals[key]
		require.True(t, ok, key)
		assert.Equal(t, orig.body, aws.ToString(m.Body), "body byte-identical")
		assert.Equal(t, orig.attrs, attributesFromSQS(m.MessageAttributes), "every attribute as the producer sent it")
	}
}

// A dead letter whose claim check is gone does not stop the pass: it stays
// in the DLQ, visible again when the pass ends, counted apart from failed
// sends (in the result and the audit), and the letter behind it moves. Once
// the claim check is back, a rerun moves it too.
func TestEmulatorSelectGoesOnPastAMissingClaimCheck(t *testing.T) {
	t.Parallel()
	l, s3c, evalBucket := newClaimCheckLocal(t)
	ctx := context.Background()
	// Dead-lettered one after the other: received in this order.
	gone := l.deadLetterBig("claim-gone")
	kept := l.deadLetterBig("claim-kept")
	refs := map[string]string{}
	for _, m := range l.drainQueueKeep(l.q.DLQURL) {
		meta, _, err := deadletter.DecodeDeadLetter(attributesFromSQS(m.MessageAttributes))
		require.NoError(t, err)
		refs[keyOf(t, aws.ToString(m.Body))] = meta.Evidence
	}
	require.Len(t, refs, 2)
	bucket, key, _ := strings.Cut(strings.TrimPrefix(refs["claim-gone"], "s3://"), "/")
	obj, err := s3c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	require.NoError(t, err)
	claimCheck, err := io.ReadAll(obj.Body)
	require.NoError(t, err)
	obj.Body.Close()
	_, err = s3c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	require.NoError(t, err)

	r := l.redriver()
	r.cfg.Evidence, r.cfg.EvidenceBucket = s3c, evalBucket
	req := claimCheckRequest(l)
	// One move at a time, in the order received: the letter with no claim
	// check comes first, and the one behind it must still move.
	req.Workers = 1

	// A dry run reads the claim checks as the move would: it says which
	// letter would stay, moves nothing, and is not an error.
	dry := req
	dry.DryRun = true
	res, err := r.Select(ctx, dry)
	require.NoError(t, err)
	assert.Equal(t, 2, res.Matched)
	assert.Equal(t, 1, res.WouldMove)
	assert.Equal(t, 1, res.ClaimCheckFailed)
	require.Len(t, res.Unrestored, 1)
	assert.Equal(t, redrivetype.ClaimCheckMissing, res.Unrestored[0].Cause)
	require.Len(t, res.Letters, 1, "only the letter that would move is listed as moving")
	assert.Equal(t, "claim-kept", res.Letters[0].IdempotencyKey)
	assert.Equal(t, 0, res.Moved)
	assert.Equal(t, 2, l.depth(l.q.DLQURL))
	for deadline := time.Now().Add(5 * time.Second); l.visible(l.q.DLQURL) < 2 && time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond) // released by the dry run's end (or its hold)
	}

	res, err = r.Select(ctx, req)
	require.ErrorContains(t, err, "claim check restored nothing", "the pass says what it left")
	require.Len(t, res.Unrestored, 1)
	assert.Equal(t, redrivetype.ClaimCheckMissing, res.Unrestored[0].Cause)
	assert.Equal(t, refs["claim-gone"], res.Unrestored[0].ClaimCheck)
	assert.Equal(t, 2, res.Seen)
	assert.Equal(t, 2, res.Matched)
	assert.Equal(t, 1, res.Moved, "the letter behind it moved")
	assert.Equal(t, 1, res.ClaimCheckFailed)
	assert.Equal(t, map[redrivetype.ClaimCheckCause]int{redrivetype.ClaimCheckMissing: 1}, res.ClaimCheckFailedBy)
	assert.Equal(t, 0, res.SendFailed, "not a failed send")
	assert.Empty(t, res.Partial)
	require.Len(t, res.Unrestored, 1)
	assert.Equal(t, refs["claim-gone"], res.Unrestored[0].ClaimCheck)
	assert.Equal(t, redrivetype.ClaimCheckMissing, res.Unrestored[0].Cause)
	require.Len(t, res.Letters, 1)
	assert.Equal(t, "claim-kept", res.Letters[0].IdempotencyKey)

	hot := l.drainQueue(l.q.HotURL)
	require.Len(t, hot, 1)
	assert.Equal(t, kept.body, aws.ToString(hot[0].Body))
	assert.Equal(t, kept.attrs, attributesFromSQS(hot[0].MessageAttributes), "with every attribute")
	// Left in the DLQ and visible at once (released when the pass ended), not hidden for the hold.
	assert.Equal(t, 1, l.visible(l.q.DLQURL))
	assert.Equal(t, 1, l.depth(l.q.DLQURL))

	recs := l.store.all()
	last := recs[len(recs)-1]
	assert.Equal(t, audit.ActionSelect, last.Action)
	assert.Equal(t, audit.OutcomeFailed, last.Outcome)
	assert.Equal(t, 1, last.Counts["claim_check_failed"])
	assert.Equal(t, 1, last.Counts["claim_check_failed.missing"])
	assert.Equal(t, 1, last.Counts["moved"])
	assert.Equal(t, 0, last.Counts["send_failed"])
	assert.Equal(t, 1, strings.Count(last.Error, "in the DLQ"), "said once: %s", last.Error)

	// The claim check is back: a rerun moves the letter, every attribute restored.
	_, err = s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(claimCheck)})
	require.NoError(t, err)
	res, err = r.Select(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, 1, res.Moved)
	assert.Equal(t, 0, res.ClaimCheckFailed)
	assert.Equal(t, 0, l.depth(l.q.DLQURL))
	hot = l.drainQueue(l.q.HotURL)
	require.Len(t, hot, 1)
	assert.Equal(t, gone.body, aws.ToString(hot[0].Body))
	assert.Equal(t, gone.attrs, attributesFromSQS(hot[0].MessageAttributes))
}

// newClaimCheckLocal is a pipeline on the emulators whose real worker keeps
// the claim checks of dead letters too large for the DLQ in a bucket of its
// own; it returns the S3 client and the bucket.
func newClaimCheckLocal(t *testing.T) (*local, *s3.Client, string) {
	t.Helper()
	l := newLocal(t, "agent-tasks")
	cfg := localtest.AWS(t)
	s3c := s3.NewFromConfig(cfg)
	bucket := localtest.Bucket(t, cfg)
	w, err := sampleworker.New(sampleworker.Config{Pipeline: l.p, Queues: l.q, SQS: l.client, Ledger: l.led,
		Evidence: s3c, EvidenceBucket: bucket, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), Metrics: io.Discard})
	require.NoError(t, err)
	l.w = w
	return l, s3c, bucket
}

// deadLetterBig has the real worker dead-letter a task (a tool error) with
// ten attributes: the eight kept on the dead letter by name, and two of
// 10 KB each that would be folded into dlq_meta, whose 16 KB they exceed,
// so that they go to a claim check. It returns the task as sent.
func (l *local) deadLetterBig(key string) sent {
	l.t.Helper()
	s := l.produce(key, `{"kind":"error","error":"tool crashed"}`, 0)
	s.attrs = originalAttrs(8)
	s.attrs["z-trace-context"] = deadletter.Attribute{DataType: "String", StringValue: strings.Repeat("t", 10_000)}
	s.attrs["z-blob"] = deadletter.Attribute{DataType: "Binary", BinaryValue: []byte(strings.Repeat("\x00\x01\xfe", 3_400))}
	// produce sent it without attributes: drain it and send the real one.
	require.Len(l.t, l.drainQueue(l.q.HotURL), 1)
	_, err := l.client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(l.q.HotURL), MessageBody: aws.String(s.body), MessageAttributes: attributesToSQS(s.attrs)})
	require.NoError(l.t, err)
	l.work()
	return s
}

// claimCheckRequest redrives the unclassified dead letters of l.
func claimCheckRequest(l *local) SelectRequest {
	return SelectRequest{Who: Who{Owner: l.p.Owner, Why: "tool fixed in worker v2"}, Reasons: []deadletter.Reason{deadletter.ReasonUnclassified},
		Rate: 200, WaitSeconds: 1, IdleReceives: 3, Ack: Ack{FixDeployed: "worker v2"}}
}

// visible is the queue's visible messages (not in flight).
func (l *local) visible(url string) int {
	l.t.Helper()
	out, err := l.client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages}})
	require.NoError(l.t, err)
	n, err := strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)])
	require.NoError(l.t, err)
	return n
}

// drainQueueKeep receives everything in a queue and makes it visible again.
func (l *local) drainQueueKeep(url string) []sqstypes.Message {
	l.t.Helper()
	var out []sqstypes.Message
	seen := map[string]bool{}
	for range 20 {
		r, err := l.client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10,
			VisibilityTimeout: 30, MessageAttributeNames: []string{"All"}})
		require.NoError(l.t, err)
		if len(r.Messages) == 0 {
			break
		}
		for _, m := range r.Messages {
			if !seen[aws.ToString(m.MessageId)] {
				seen[aws.ToString(m.MessageId)] = true
				out = append(out, m)
			}
			_, err := l.client.ChangeMessageVisibility(context.Background(), &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0})
			require.NoError(l.t, err)
		}
		if len(seen) >= l.depth(url) {
			break
		}
	}
	return out
}
