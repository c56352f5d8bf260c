package sqsfake_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/testkit/sqsfake"
)

// recorder is a testing.TB that keeps the errors a fake reports.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func receive(t *testing.T, f *sqsfake.Fake, url string, n int32, visibility int32) []types.Message {
	t.Helper()
	out, err := f.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: n, VisibilityTimeout: visibility,
		MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}})
	require.NoError(t, err)
	return out.Messages
}

// A received message is hidden for its visibility timeout on the fake's
// clock, counted in flight, and visible again when it lapses.
func TestVisibility(t *testing.T) {
	t.Parallel()
	f := sqsfake.New(nil)
	q := f.AddQueue(&sqsfake.Queue{URL: "http://q/a"})
	for i := range 3 {
		f.Put(q.URL, sqsfake.Message{Body: fmt.Sprint(i)})
	}
	got := receive(t, f, q.URL, 2, 30)
	require.Len(t, got, 2)
	assert.Equal(t, "1", got[0].Attributes["ApproximateReceiveCount"])
	attrs, err := f.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(q.URL)})
	require.NoError(t, err)
	assert.Equal(t, "1", attrs.Attributes["ApproximateNumberOfMessages"])
	assert.Equal(t, "2", attrs.Attributes["ApproximateNumberOfMessagesNotVisible"])
	assert.Len(t, receive(t, f, q.URL, 10, 30), 1, "only the one not in flight")

	f.Advance(31 * time.Second)
	again := receive(t, f, q.URL, 10, 30)
	assert.Len(t, again, 3, "all visible again")
	assert.Equal(t, "2", again[0].Attributes["ApproximateReceiveCount"])
}

// A FIFO queue with LockGroups hands out nothing more of a group with a
// message in flight.
func TestLockGroups(t *testing.T) {
	t.Parallel()
	f := sqsfake.New(nil)
	q := f.AddQueue(&sqsfake.Queue{URL: "http://q/a.fifo", LockGroups: true})
	for _, g := range []string{"g1", "g1", "g2"} {
		f.Put(q.URL, sqsfake.Message{Body: g, Group: g})
	}
	got := receive(t, f, q.URL, 1, 30)
	require.Len(t, got, 1)
	assert.Equal(t, "g1", got[0].Attributes["MessageGroupId"])
	rest := receive(t, f, q.URL, 10, 30)
	require.Len(t, rest, 1, "g1's second message waits for its first")
	assert.Equal(t, "g2", aws.ToString(rest[0].Body))
}

// ReadOnly fails the test on every call that would change a queue, and
// changes nothing.
func TestReadOnly(t *testing.T) {
	t.Parallel()
	rec := &recorder{TB: t}
	f := sqsfake.New(nil)
	f.T, f.ReadOnly = rec, true
	q := f.AddQueue(&sqsfake.Queue{URL: "http://q/a"})
	f.Put(q.URL, sqsfake.Message{Body: "x"})
	ctx := context.Background()
	h := receive(t, f, q.URL, 1, 30)[0].ReceiptHandle
	_, err1 := f.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.URL), MessageBody: aws.String("y")})
	_, err2 := f.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(q.URL), ReceiptHandle: h})
	_, err3 := f.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(q.URL)})
	_, err4 := f.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String("arn")})
	for _, err := range []error{err1, err2, err3, err4} {
		assert.Error(t, err)
	}
	assert.Len(t, rec.errs, 4)
	assert.Len(t, f.Snapshot(q.URL), 1)
}

// StrictHandles refuses the handle of a message whose visibility lapsed;
// without it the latest handle is honoured, as redrive's tests expect.
func TestStrictHandles(t *testing.T) {
	t.Parallel()
	for _, strict := range []bool{false, true} {
		f := sqsfake.New(nil)
		f.StrictHandles = strict
		q := f.AddQueue(&sqsfake.Queue{URL: "http://q/a"})
		f.Put(q.URL, sqsfake.Message{Body: "x"})
		h := receive(t, f, q.URL, 1, 1)[0].ReceiptHandle
		f.Advance(2 * time.Second)
		_, err := f.ChangeMessageVisibility(context.Background(), &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(q.URL), ReceiptHandle: h, VisibilityTimeout: 0})
		var invalid *types.ReceiptHandleIsInvalid
		assert.Equal(t, strict, errors.As(err, &invalid), "strict=%v: %v", strict, err)
	}
}

// A removed queue does not exist; AnyURL reaches the only queue by any URL.
func TestQueuesByURL(t *testing.T) {
	t.Parallel()
	f := sqsfake.New(nil)
	f.AddQueue(&sqsfake.Queue{URL: "http://q/a", Tags: map[string]string{"k": "v"}})
	ctx := context.Background()
	_, err := f.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: aws.String("http://q/other")})
	var missing *types.QueueDoesNotExist
	require.ErrorAs(t, err, &missing)
	f.AnyURL = true
	tags, err := f.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: aws.String("http://q/other")})
	require.NoError(t, err)
	assert.Equal(t, "v", tags.Tags["k"])
	f.RemoveQueue("http://q/a")
	_, err = f.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: aws.String("http://q/a")})
	require.ErrorAs(t, err, &missing)
}
