package batch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/functions/batch/internal/sqsevent"
)

// AttrRequeued is the message attribute a requeue (see Config.RetryAfterRequeues)
// puts on the message it sends back to the hot queue: "<receives>/<requeues>",
// the receives the message had spent of its budget before the requeue and
// how many requeues it has had. The processor adds the receives to
// ApproximateReceiveCount (Record.ReceiveCount is the sum), and leaves the
// attribute off a dead letter: it is the processor's bookkeeping, not the
// producer's.
const AttrRequeued = sqsevent.AttrRequeued

// MaxVisibility is SQS's maximum visibility timeout: the longest a Retry-After
// hides a message with ChangeMessageVisibility.
const MaxVisibility = 12 * time.Hour

// MaxRequeueDelay is SQS's maximum DelaySeconds on a message: a Retry-After
// longer than this is never requeued (it hides the message instead, counted).
const MaxRequeueDelay = 15 * time.Minute

// After returns a copy of o that says when to try again: the provider's
// Retry-After (a 429's header, a quota's reset time). It applies to the
// retryable outcomes (Transient, AuthConfig, DependencyOpen): the message is
// hidden for d (ChangeMessageVisibility, at most MaxVisibility) instead of
// the backoff, or, when the processor's Config.RetryAfterRequeues allows it
// and d is at most MaxRequeueDelay on a standard queue, sent back to the hot
// queue with that delay so that the receive does not count against the
// budget. On the last allowed receive a counted Retry-After dead-letters the
// message with its reason, as any retryable failure. d <= 0 is no delay;
// on an outcome that is dead-lettered at once After changes nothing.
func (o *Outcome) After(d time.Duration) *Outcome {
	c := *o
	c.after = max(d, 0)
	return &c
}

// RetryAfter returns the delay After gave the outcome (0 without one).
func (o *Outcome) RetryAfter() time.Duration { return o.after }

// retryAfterSeconds is d in whole seconds, rounded up, within 1..limit.
func retryAfterSeconds(d, limit time.Duration) int32 {
	d = min(d, limit)
	s := (d + time.Second - 1) / time.Second
	return int32(max(s, 1))
}

// requeueState parses AttrRequeued's value; ok is false when it is not
// "<receives>/<requeues>" with both at least 0.
func requeueState(v string) (receives, requeues int, ok bool) {
	a, b, found := strings.Cut(v, "/")
	if !found {
		return 0, 0, false
	}
	r, err1 := strconv.Atoi(a)
	q, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || r < 0 || q < 0 || r > 1000 || q > 1000 {
		return 0, 0, false
	}
	return r, q, true
}

// carried reads AttrRequeued off m: the receives and requeues a requeue
// carried over. A message without it (the commonest case, noted when its
// attributes were decoded) carries none; an unreadable value counts as none.
func carried(m *sqsevent.Message) (receives, requeues int) {
	if !m.Requeued() {
		return 0, 0
	}
	for _, a := range m.AppendDeadLetterAttrs(nil) {
		if a.Name == AttrRequeued {
			r, q, _ := requeueState(a.StringValue)
			return r, q
		}
	}
	return 0, 0
}

// withoutRequeued drops AttrRequeued from a message's attributes.
func withoutRequeued(attrs []deadletter.NamedAttribute) []deadletter.NamedAttribute {
	out := attrs[:0]
	for _, a := range attrs {
		if a.Name != AttrRequeued {
			out = append(out, a)
		}
	}
	return out
}

// errNoRequeue says why a Retry-After is not requeued (logged, then the
// message is hidden instead).
var errNoRequeue = errors.New("not requeued")

// requeue sends the record back to the hot queue with the outcome's
// Retry-After as DelaySeconds, its body and attributes as received, its
// trace header, and AttrRequeued counting the receives it spent before this
// one and one requeue more; once the send succeeds the record is
// acknowledged (the original is deleted), so this receive is not counted
// against the budget. It returns nil on success; an error says why the
// record was not requeued (then it is hidden for the Retry-After instead).
func (p *Processor) requeue(ctx context.Context, rec Record, c Classification) (err error) {
	st := rec.st
	switch {
	case c.RetryAfter > MaxRequeueDelay:
		return fmt.Errorf("%w: Retry-After %s is over SQS's 15-minute message delay", errNoRequeue, c.RetryAfter)
	case st.requeues >= p.requeues:
		return fmt.Errorf("%w: the message was requeued %d times already (RetryAfterRequeues)", errNoRequeue, st.requeues)
	}
	attrs := withoutRequeued(rec.m.AppendDeadLetterAttrs(nil))
	if len(attrs) >= deadletter.MaxAttributes {
		return fmt.Errorf("%w: the message has %d attributes, no room for %s", errNoRequeue, len(attrs), AttrRequeued)
	}
	am := make(map[string]types.MessageAttributeValue, len(attrs)+1)
	for i := range attrs {
		am[attrs[i].Name] = sqsAttribute(&attrs[i].Attribute, aws.String)
	}
	// The receives spent so far, this one not counted.
	spent := rec.ReceiveCount - 1
	am[AttrRequeued] = types.MessageAttributeValue{DataType: aws.String("String"),
		StringValue: aws.String(strconv.Itoa(spent) + "/" + strconv.Itoa(st.requeues+1))}
	e := types.SendMessageBatchRequestEntry{
		Id: aws.String("requeue"), MessageBody: aws.String(rec.m.BodyString()), MessageAttributes: am,
		DelaySeconds: retryAfterSeconds(c.RetryAfter, MaxRequeueDelay),
	}
	if th := rec.m.TraceHeader(); th != "" {
		e.MessageSystemAttributes = map[string]types.MessageSystemAttributeValue{
			string(types.MessageSystemAttributeNameForSendsAWSTraceHeader): {DataType: aws.String("String"), StringValue: aws.String(th)},
		}
	}
	// The lease goes first: the copy must find the key free when it comes.
	p.release(ctx, rec)
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("requeue send panicked: %v", v)
		}
	}()
	out, err := p.sqs.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(p.hotURL), Entries: []types.SendMessageBatchRequestEntry{e}})
	switch {
	case err != nil:
		return err
	case out == nil || len(out.Successful) != 1:
		reason := "no result"
		if out != nil && len(out.Failed) > 0 {
			reason = aws.ToString(out.Failed[0].Code) + ": " + aws.ToString(out.Failed[0].Message)
		}
		return fmt.Errorf("requeue refused: %s", reason)
	}
	logAttrs(ctx, p.log, slog.LevelWarn, "requeued after the provider's Retry-After; this receive is not counted",
		slog.String("message_id", rec.MessageID()), slog.String("queue", queueName(rec.EventSourceARN())),
		slog.String("reason", string(c.Reason)), slog.Int("attempt", rec.ReceiveCount), slog.String("trace_id", st.fields.TraceID),
		slog.Int("retry_after_s", int(e.DelaySeconds)), slog.Int("requeues", st.requeues+1),
		slog.String("new_message_id", aws.ToString(out.Successful[0].MessageId)))
	return nil
}
