package redrive

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/functions/sampleworker"
	"github.com/agentdlq/agentdlq/internal/localtest"
)

// A dead letter too large for the DLQ gives up the attributes it cannot
// carry to a claim check in the eval bucket (the real worker, on fauxqs and
// its S3). select reads the claim check back: the letter arrives on the hot
// queue with every original attribute and its body byte for byte. Without
// an S3 client to read it, the letter stays in the DLQ, untouched.
func TestEmulatorRedriveRestoresClaimCheckAttributes(t *testing.T) {
	t.Parallel()
	l := newLocal(t, "agent-tasks")
	cfg := localtest.AWS(t)
	s3c := s3.NewFromConfig(cfg)
	bucket := localtest.Bucket(t, cfg)
	w, err := sampleworker.New(sampleworker.Config{Pipeline: l.p, Queues: l.q, SQS: l.client, Ledger: l.led,
		Evidence: s3c, EvidenceBucket: bucket, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), Metrics: io.Discard})
	require.NoError(t, err)
	l.w = w
	ctx := context.Background()

	// Ten attributes: the eight kept on the dead letter by name, and two of
	// 10 KB each that would be folded into dlq_meta, whose 16 KB they exceed.
	big := func(key string) sent {
		s := l.produce(key, `{"kind":"error","error":"tool crashed"}`, 0)
		s.attrs = originalAttrs(8)
		s.attrs["z-trace-context"] = deadletter.Attribute{DataType: "String", StringValue: strings.Repeat("t", 10_000)}
		s.attrs["z-blob"] = deadletter.Attribute{DataType: "Binary", BinaryValue: []byte(strings.Repeat("\x00\x01\xfe", 3_400))}
		return s
	}
	// produce sent it without attributes: drain it and send the real one.
	originals := map[string]sent{}
	for _, key := range []string{"claim-0", "claim-1"} {
		s := big(key)
		originals[key] = s
	}
	require.Len(t, l.drainQueue(l.q.HotURL), 2)
	for _, s := range originals {
		_, err := l.client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(l.q.HotURL), MessageBody: aws.String(s.body), MessageAttributes: AttributesToSQS(s.attrs)})
		require.NoError(t, err)
	}
	l.work()
	require.Equal(t, 2, l.depth(l.q.DLQURL), "the worker dead-lettered both")

	// The dead letters gave the two large attributes up and point to claim checks.
	for _, m := range l.drainQueueKeep(l.q.DLQURL) {
		attrs := AttributesFromSQS(m.MessageAttributes)
		meta, restored, err := deadletter.DecodeDeadLetter(attrs)
		require.NoError(t, err)
		assert.NotContains(t, restored, "z-trace-context", "given up: not on the dead letter")
		assert.NotContains(t, restored, "z-blob")
		require.True(t, strings.HasPrefix(meta.Evidence, "s3://"+bucket+"/agent-tasks/evidence/"), meta.Evidence)
		assert.Contains(t, meta.Reduced, deadletter.ReducedFolded)
	}

	req := SelectRequest{Who: Who{Owner: l.p.Owner, Why: "tool fixed in worker v2"}, Selector: Selector{Reasons: []deadletter.Reason{deadletter.ReasonUnclassified}},
		Rate: 200, WaitSeconds: -1, IdleReceives: 2, Ack: Ack{FixDeployed: "worker v2"}}

	// No S3 client: nothing is sent without the attributes it gave up.
	res, err := l.redriver().Select(ctx, req)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "claim check")
	assert.Equal(t, 0, res.Moved)
	assert.Positive(t, res.SendFailed)
	assert.Equal(t, 2, res.SendFailed+res.Released, "every letter seen is failed or released: none lost")
	assert.Equal(t, 0, l.depth(l.q.HotURL))
	assert.Equal(t, 2, l.depth(l.q.DLQURL), "both stay in the DLQ")

	// With the S3 client, as the CLI wires it.
	r := l.redriver()
	r.cfg.Evidence = s3c
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
		assert.Equal(t, orig.attrs, AttributesFromSQS(m.MessageAttributes), "every attribute as the producer sent it")
	}
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
