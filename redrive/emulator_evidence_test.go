package redrive

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/testkit/localtest"
	"github.com/agentdlq/agentdlq/triage"
)

// A producer on the hot queue copies a real budget_exhausted dlq_meta onto its
// task (ids edited, "effect":"none"), and the task is received
// maxReceiveCount times without a delete (a crashing worker): the broker moves
// it, attributes and all. Another principal sends a forged letter straight to
// the DLQ. Neither may be read as the worker's evidence: both are
// receive_limit, which needs a review, never redrivable on the producer's
// word; the worker's own dead letter beside them keeps its reason.
// (Issue 28, finding 2; fails without triage's trust check and the local
// harness's DeadLetterQueueSourceArn and SenderId.)
func TestEmulatorForgedEvidenceIsNotTrusted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := newLocal(t, "agent-tasks")

	forged := deadletter.Meta{
		Version: deadletter.MetaVersion, Class: deadletter.ClassTransient, Reason: deadletter.ReasonBudgetExhausted,
		NextAction: deadletter.ReasonBudgetExhausted.NextAction(), Attempts: 4, ErrorCode: "503",
		Error: "upstream 503: safe to retry, redrive me", Tool: "email.send", ToolVersion: "1.0.0", SchemaVersion: 1,
		IdempotencyKey: "acme:run-0042:task-0007", Effect: deadletter.EffectNone, DeadLetteredAt: time.Now().UTC(),
	}
	attrs, err := deadletter.EncodeDeadLetter(forged, nil)
	require.NoError(t, err)
	body := task("acme:run-0042:task-0007", "email.send")

	// 1. Moved by the broker after maxReceiveCount receives.
	_, err = l.client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(l.q.HotURL), MessageBody: aws.String(body), MessageAttributes: attributesToSQS(attrs)})
	require.NoError(t, err)
	for i := 0; i <= l.p.MaxReceiveCount; i++ {
		out, err := l.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(l.q.HotURL), MaxNumberOfMessages: 1, VisibilityTimeout: 30, WaitTimeSeconds: 1})
		require.NoError(t, err)
		if i == l.p.MaxReceiveCount {
			require.Empty(t, out.Messages, "receive %d: the broker moves it instead", i+1)
			break
		}
		require.Len(t, out.Messages, 1, "receive %d", i+1)
		_, err = l.client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(l.q.HotURL), ReceiptHandle: out.Messages[0].ReceiptHandle, VisibilityTimeout: 0})
		require.NoError(t, err)
	}

	// 2. Sent straight to the DLQ by a principal that is not the worker.
	mallory := sqs.NewFromConfig(localtest.AWS(t), func(o *sqs.Options) {
		o.Credentials = credentials.NewStaticCredentialsProvider("mallory", "mallory", "")
	})
	_, err = mallory.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(l.q.DLQURL), MessageBody: aws.String(body), MessageAttributes: attributesToSQS(attrs)})
	require.NoError(t, err)

	// 3. The worker's own dead letter: a task for a tool that does not exist.
	_, err = l.client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(l.q.HotURL), MessageBody: aws.String(task("acme:run-0042:task-0009", "no.such.tool"))})
	require.NoError(t, err)
	l.work()

	// The worker and the tests sign as "test" (localtest.AWS): the local
	// harness reports that access key as the SenderId.
	q := l.q
	q.Senders = []string{"test"}
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	r, err := New(Config{Pipeline: l.p, SQS: l.client, Ledger: l.led, Queues: q, Logger: quiet,
		Audit: &audit.Auditor{Store: l.store, Logger: quiet}})
	require.NoError(t, err)

	rep, err := triage.Run(ctx, triage.Config{Pipeline: l.p, DLQURL: q.DLQURL, SQS: l.client, Senders: triage.Senders(q.Senders), Logger: quiet})
	require.NoError(t, err)
	assert.Equal(t, 2, rep.Totals.Untrusted, "the moved task and mallory's letter")
	byReason := map[deadletter.Reason]int{}
	for _, g := range rep.Groups {
		byReason[g.Reason] += g.Count
	}
	assert.Equal(t, map[deadletter.Reason]int{deadletter.ReasonReceiveLimit: 2, deadletter.ReasonToolUnknown: 1}, byReason)

	pl, err := r.Plan(ctx, PlanRequest{Actor: l.p.Owner})
	require.NoError(t, err)
	require.Equal(t, 3, pl.Total)
	for _, g := range pl.Groups {
		assert.NotEqual(t, deadletter.ReasonBudgetExhausted, g.Reason, "a forged budget_exhausted must not be planned")
		if g.Reason == deadletter.ReasonReceiveLimit {
			assert.Equal(t, 2, g.Count)
			assert.False(t, g.MayRedrive, "receive_limit needs a review: %s", g.Why)
			assert.Equal(t, "Ack.Reviewed", g.Needs)
		}
	}
}

// The local harness reports what SQS reports on a broker move and a send
// (docs/local.md): DeadLetterQueueSourceArn is the source queue's ARN on the
// moved message only, and SenderId is the sending access key.
func TestEmulatorSystemAttributesOfTheHarness(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := newLocal(t, "agent-tasks")
	_, err := l.client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(l.q.DLQURL), MessageBody: aws.String(`{"direct":true}`)})
	require.NoError(t, err)
	out, err := l.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(l.q.DLQURL), MaxNumberOfMessages: 10, VisibilityTimeout: 0, WaitTimeSeconds: 1,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameSenderId, sqstypes.MessageSystemAttributeNameDeadLetterQueueSourceArn}})
	require.NoError(t, err)
	require.Len(t, out.Messages, 1)
	assert.Equal(t, "test", out.Messages[0].Attributes["SenderId"])
	_, moved := out.Messages[0].Attributes["DeadLetterQueueSourceArn"]
	assert.False(t, moved, "a letter sent to the DLQ was not moved by the broker")
}
