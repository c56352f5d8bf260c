package redrive

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive/audit"
)

// fakeSQS is an in-memory SQS with visibility timeouts, tags, redrive
// policies and move tasks, and behaviour switches for failures.
type fakeSQS struct {
	mu     sync.Mutex
	queues map[string]*fakeQueue // by URL
	seq    int
	now    time.Time // advanced by each call; visibility is measured on it

	// Switches.
	sendErr   error                                        // every SendMessage fails
	onDelete  func(queue, receipt string) error            // DeleteMessage hook: a non-nil error fails it
	onSend    func(queue string, in *sqs.SendMessageInput) // after a successful send
	startErr  error                                        // StartMessageMoveTask fails
	moveTasks []sqstypes.ListMessageMoveTasksResultEntry
	started   []*sqs.StartMessageMoveTaskInput
	canceled  []string
}

type fakeQueue struct {
	url, arn string
	attrs    map[string]string
	tags     map[string]string
	msgs     []*fakeMsg
}

type fakeMsg struct {
	id, body  string
	attrs     map[string]sqstypes.MessageAttributeValue
	group     string
	sent      time.Time
	visibleAt time.Time
	receipt   string
	receives  int
}

var (
	_ selectAPI = (*fakeSQS)(nil)
	_ moveAPI   = (*fakeSQS)(nil)
)

func newFakeSQS() *fakeSQS {
	return &fakeSQS{queues: map[string]*fakeQueue{}, now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
}

func (f *fakeSQS) tick() time.Time { f.now = f.now.Add(time.Millisecond); return f.now }

// addPair creates a hot queue and DLQ for p as the CDK app and the local
// topology do: redrive policy, redrive allow policy, tags.
func (f *fakeSQS) addPair(p *pipeline.Pipeline) pipeline.Queues {
	f.mu.Lock()
	defer f.mu.Unlock()
	hot := &fakeQueue{url: "http://fake/q/" + p.HotQueueName(), arn: "arn:aws:sqs:us-east-1:000000000000:" + p.HotQueueName()}
	dlq := &fakeQueue{url: "http://fake/q/" + p.DLQName(), arn: "arn:aws:sqs:us-east-1:000000000000:" + p.DLQName()}
	hot.attrs = map[string]string{"QueueArn": hot.arn, "RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":%d}`, dlq.arn, p.MaxReceiveCount)}
	dlq.attrs = map[string]string{"QueueArn": dlq.arn, "RedriveAllowPolicy": fmt.Sprintf(`{"redrivePermission":"byQueue","sourceQueueArns":[%q]}`, hot.arn)}
	hot.tags = map[string]string{pipeline.TagPipeline: p.Name, pipeline.TagOwner: p.Owner, pipeline.TagRole: "hot"}
	dlq.tags = map[string]string{pipeline.TagPipeline: p.Name, pipeline.TagOwner: p.Owner, pipeline.TagRole: "dlq"}
	f.queues[hot.url], f.queues[dlq.url] = hot, dlq
	return pipeline.Queues{HotURL: hot.url, HotARN: hot.arn, DLQURL: dlq.url, DLQARN: dlq.arn, FIFO: p.FIFO}
}

func (f *fakeSQS) q(url string) (*fakeQueue, error) {
	q, ok := f.queues[url]
	if !ok {
		return nil, &sqstypes.QueueDoesNotExist{Message: aws.String("The specified queue does not exist.")}
	}
	return q, nil
}

// put enqueues a message directly (a seeded dead letter).
func (f *fakeSQS) put(url, body string, attrs map[string]deadletter.Attribute, group string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.queues[url]
	f.seq++
	id := fmt.Sprintf("m-%04d", f.seq)
	q.msgs = append(q.msgs, &fakeMsg{id: id, body: body, attrs: attributesToSQS(attrs), group: group, sent: f.tick()})
	return id
}

// snapshot returns the messages of a queue (visible or not): id → body.
func (f *fakeSQS) snapshot(url string) []*fakeMsg {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*fakeMsg(nil), f.queues[url].msgs...)
}

// expire makes every message visible (the hold ran out).
func (f *fakeSQS) expire(url string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.queues[url].msgs {
		m.visibleAt = time.Time{}
	}
}

func (f *fakeSQS) ListQueueTags(_ context.Context, in *sqs.ListQueueTagsInput, _ ...func(*sqs.Options)) (*sqs.ListQueueTagsOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.q(aws.ToString(in.QueueUrl))
	if err != nil {
		return nil, err
	}
	tags := map[string]string{}
	for k, v := range q.tags {
		tags[k] = v
	}
	return &sqs.ListQueueTagsOutput{Tags: tags}, nil
}

func (f *fakeSQS) GetQueueAttributes(_ context.Context, in *sqs.GetQueueAttributesInput, _ ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.q(aws.ToString(in.QueueUrl))
	if err != nil {
		return nil, err
	}
	now := f.tick()
	vis, inv := 0, 0
	for _, m := range q.msgs {
		if now.Before(m.visibleAt) {
			inv++
		} else {
			vis++
		}
	}
	out := map[string]string{"ApproximateNumberOfMessages": strconv.Itoa(vis), "ApproximateNumberOfMessagesNotVisible": strconv.Itoa(inv), "ApproximateNumberOfMessagesDelayed": "0"}
	for k, v := range q.attrs {
		out[k] = v
	}
	return &sqs.GetQueueAttributesOutput{Attributes: out}, nil
}

func (f *fakeSQS) ReceiveMessage(_ context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.q(aws.ToString(in.QueueUrl))
	if err != nil {
		return nil, err
	}
	now := f.tick()
	out := &sqs.ReceiveMessageOutput{}
	for _, m := range q.msgs {
		if len(out.Messages) >= int(in.MaxNumberOfMessages) {
			break
		}
		if now.Before(m.visibleAt) {
			continue
		}
		f.seq++
		m.receives++
		m.receipt = fmt.Sprintf("rh-%s-%d", m.id, f.seq)
		m.visibleAt = now.Add(time.Duration(in.VisibilityTimeout) * time.Second)
		sys := map[string]string{"SentTimestamp": strconv.FormatInt(m.sent.UnixMilli(), 10), "ApproximateReceiveCount": strconv.Itoa(m.receives)}
		if m.group != "" {
			sys["MessageGroupId"] = m.group
		}
		out.Messages = append(out.Messages, sqstypes.Message{MessageId: aws.String(m.id), ReceiptHandle: aws.String(m.receipt),
			Body: aws.String(m.body), MessageAttributes: m.attrs, Attributes: sys})
	}
	return out, nil
}

func (f *fakeSQS) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	f.mu.Lock()
	if f.sendErr != nil {
		f.mu.Unlock()
		return nil, f.sendErr
	}
	q, err := f.q(aws.ToString(in.QueueUrl))
	if err != nil {
		f.mu.Unlock()
		return nil, err
	}
	f.seq++
	id := fmt.Sprintf("h-%04d", f.seq)
	q.msgs = append(q.msgs, &fakeMsg{id: id, body: aws.ToString(in.MessageBody), attrs: in.MessageAttributes, group: aws.ToString(in.MessageGroupId), sent: f.tick()})
	hook := f.onSend
	f.mu.Unlock()
	if hook != nil {
		hook(aws.ToString(in.QueueUrl), in)
	}
	return &sqs.SendMessageOutput{MessageId: aws.String(id)}, nil
}

func (f *fakeSQS) DeleteMessage(_ context.Context, in *sqs.DeleteMessageInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	if f.onDelete != nil {
		if err := f.onDelete(aws.ToString(in.QueueUrl), aws.ToString(in.ReceiptHandle)); err != nil {
			return nil, err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.q(aws.ToString(in.QueueUrl))
	if err != nil {
		return nil, err
	}
	for i, m := range q.msgs {
		if m.receipt == aws.ToString(in.ReceiptHandle) {
			q.msgs = append(q.msgs[:i], q.msgs[i+1:]...)
			return &sqs.DeleteMessageOutput{}, nil
		}
	}
	return nil, &sqstypes.ReceiptHandleIsInvalid{Message: aws.String("stale receipt handle")}
}

func (f *fakeSQS) ChangeMessageVisibility(_ context.Context, in *sqs.ChangeMessageVisibilityInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.q(aws.ToString(in.QueueUrl))
	if err != nil {
		return nil, err
	}
	for _, m := range q.msgs {
		if m.receipt == aws.ToString(in.ReceiptHandle) {
			m.visibleAt = f.tick().Add(time.Duration(in.VisibilityTimeout) * time.Second)
			return &sqs.ChangeMessageVisibilityOutput{}, nil
		}
	}
	return nil, &sqstypes.ReceiptHandleIsInvalid{Message: aws.String("stale receipt handle")}
}

func (f *fakeSQS) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	out := &sqs.ChangeMessageVisibilityBatchOutput{}
	for _, e := range in.Entries {
		_, err := f.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: in.QueueUrl, ReceiptHandle: e.ReceiptHandle, VisibilityTimeout: e.VisibilityTimeout})
		if err != nil {
			out.Failed = append(out.Failed, sqstypes.BatchResultErrorEntry{Id: e.Id, Code: aws.String("ReceiptHandleIsInvalid"), SenderFault: true})
			continue
		}
		out.Successful = append(out.Successful, sqstypes.ChangeMessageVisibilityBatchResultEntry{Id: e.Id})
	}
	return out, nil
}

func (f *fakeSQS) StartMessageMoveTask(_ context.Context, in *sqs.StartMessageMoveTaskInput, _ ...func(*sqs.Options)) (*sqs.StartMessageMoveTaskOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.startErr != nil {
		return nil, f.startErr
	}
	f.started = append(f.started, in)
	h := fmt.Sprintf("task-%d", len(f.started))
	f.moveTasks = append([]sqstypes.ListMessageMoveTasksResultEntry{{TaskHandle: aws.String(h), Status: aws.String("RUNNING"),
		SourceArn: in.SourceArn, DestinationArn: in.DestinationArn, MaxNumberOfMessagesPerSecond: in.MaxNumberOfMessagesPerSecond}}, f.moveTasks...)
	return &sqs.StartMessageMoveTaskOutput{TaskHandle: aws.String(h)}, nil
}

func (f *fakeSQS) ListMessageMoveTasks(_ context.Context, in *sqs.ListMessageMoveTasksInput, _ ...func(*sqs.Options)) (*sqs.ListMessageMoveTasksOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.startErr != nil {
		return nil, f.startErr
	}
	var out []sqstypes.ListMessageMoveTasksResultEntry
	for _, t := range f.moveTasks {
		if aws.ToString(t.SourceArn) == aws.ToString(in.SourceArn) {
			out = append(out, t)
		}
	}
	return &sqs.ListMessageMoveTasksOutput{Results: out}, nil
}

func (f *fakeSQS) CancelMessageMoveTask(_ context.Context, in *sqs.CancelMessageMoveTaskInput, _ ...func(*sqs.Options)) (*sqs.CancelMessageMoveTaskOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, t := range f.moveTasks {
		if aws.ToString(t.TaskHandle) == aws.ToString(in.TaskHandle) {
			if aws.ToString(t.Status) != "RUNNING" {
				return nil, errors.New("task is not running")
			}
			f.moveTasks[i].Status = aws.String("CANCELLING")
			f.canceled = append(f.canceled, aws.ToString(in.TaskHandle))
			return &sqs.CancelMessageMoveTaskOutput{ApproximateNumberOfMessagesMoved: t.ApproximateNumberOfMessagesMoved}, nil
		}
	}
	return nil, &sqstypes.ResourceNotFoundException{Message: aws.String("no such task")}
}

// fakeSTS answers GetCallerIdentity with a fixed ARN.
type fakeSTS struct{ arn string }

func (s fakeSTS) GetCallerIdentity(context.Context, *sts.GetCallerIdentityInput, ...func(*sts.Options)) (*sts.GetCallerIdentityOutput, error) {
	return &sts.GetCallerIdentityOutput{Arn: aws.String(s.arn), Account: aws.String("123456789012")}, nil
}

// memStore is an audit Store in memory.
type memStore struct {
	mu   sync.Mutex
	recs []audit.Entry
	err  error
}

func (m *memStore) Append(_ context.Context, r audit.Entry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return m.err
	}
	m.recs = append(m.recs, r)
	return nil
}

func (m *memStore) all() []audit.Entry {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]audit.Entry(nil), m.recs...)
}

// Options says where the fake runs, as an *sqs.Client does: on this
// machine, so a Redriver built on it is local (no STS, no caller check).
func (f *fakeSQS) Options() sqs.Options {
	return sqs.Options{BaseEndpoint: aws.String("http://127.0.0.1:4566")}
}
