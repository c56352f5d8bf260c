package redrive

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/triage"
)

// A deep DLQ where the chosen dead letters sit behind many others: the pass
// must reach them although it releases the others at once.
func TestEmulatorSelectBehindManyOthers(t *testing.T) {
	t.Parallel()
	l := newLocal(t, "agent-tasks")
	ctx := context.Background()
	put := func(key string, reason deadletter.Reason) {
		d := newDeadLetter(t, key, "web.search", reason, 1, "")
		_, err := l.client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(l.q.DLQURL), MessageBody: aws.String(d.body), MessageAttributes: attributesToSQS(d.attrs)})
		require.NoError(t, err)
	}
	for i := range 120 {
		put(fmt.Sprintf("pl-%03d", i), deadletter.ReasonPolicyLimit)
	}
	for i := range 7 {
		put(fmt.Sprintf("be-%d", i), deadletter.ReasonBudgetExhausted)
	}
	res, err := l.redriver().Select(ctx, SelectRequest{Who: Who{Owner: l.p.Owner, Why: "503s over"},
		Reasons: []deadletter.Reason{deadletter.ReasonBudgetExhausted}, Rate: 500,
		// A short hold: should a receive's response be lost on the way (the
		// SDK then retries it), its letters come back within the pass.
		Hold: 5 * time.Second})
	require.NoError(t, err)
	t.Logf("seen %d, moved %d, released %d, partial %q", res.Seen, res.Moved, res.Released, res.Partial)
	assert.Equal(t, 7, res.Moved)
	assert.Equal(t, 127, res.Seen)
	assert.Empty(t, res.Partial)
	assert.Equal(t, 120, l.depth(l.q.DLQURL))
}

// In a FIFO DLQ a chosen letter can sit behind letters of its own message
// group that are not chosen. They are released at once (held, they would
// block the group), but SQS hands out at most ten of a group at a time
// (fauxqs one): behind twelve, the chosen letter is never received, and the
// pass says it saw only part of the DLQ rather than that nothing matches.
func TestEmulatorSelectFIFOBehindOthersOfItsGroup(t *testing.T) {
	t.Parallel()
	l := newLocal(t, "agent-steps")
	require.True(t, l.q.FIFO)
	ctx := context.Background()
	put := func(key string, reason deadletter.Reason) {
		d := newDeadLetter(t, key, "web.search", reason, 1, "run-shared")
		_, err := l.client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(l.q.DLQURL), MessageBody: aws.String(d.body),
			MessageAttributes: attributesToSQS(d.attrs), MessageGroupId: aws.String("run-shared"), MessageDeduplicationId: aws.String("d-" + key)})
		require.NoError(t, err)
	}
	for i := range 12 {
		put(fmt.Sprintf("front-%02d", i), deadletter.ReasonPolicyLimit)
	}
	put("behind", deadletter.ReasonBudgetExhausted)
	res, err := l.redriver().Select(ctx, SelectRequest{Who: Who{Owner: l.p.Owner, Why: "503s over"},
		Reasons: []deadletter.Reason{deadletter.ReasonBudgetExhausted}, Rate: 500, Hold: 5 * time.Second, IdleReceives: 1})
	require.ErrorIs(t, err, triage.ErrScanPartial, "not nothing_selected: the chosen letter may be among those not seen")
	assert.Contains(t, err.Error(), "of about 13 dead letters")
	assert.Contains(t, err.Error(), "FIFO")
	assert.Equal(t, 0, res.Moved)
	assert.Equal(t, 13, l.depth(l.q.DLQURL), "nothing moved, nothing lost")
}
