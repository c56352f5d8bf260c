// Package sqsfake is the in-memory SQS the unit tests of triage, redrive
// and the console share: queues by URL with their attributes, tags and
// messages, visibility timeouts measured on a clock, FIFO message groups,
// and message move tasks, with switches for the failures those packages
// must survive and observations of what they called.
//
// It is a test helper, not an emulator: the end-to-end tests run against
// fauxqs (testkit/localtest). Each SQS call takes the fake's lock, so it is
// safe for the concurrent receivers and movers of a scan or a redrive;
// switches and queues are set up before the code under test runs.
package sqsfake

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/agentdlq/agentdlq/events/deadletter"
)

// Clock is the time the fake measures visibility on. A clock that can also
// be moved (Advance) is moved by Fake.ReceiveTakes.
type Clock interface {
	Now() time.Time
}

// Start is the time of the fake's own clock (New with a nil clock).
var Start = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// Message is a message in a queue.
type Message struct {
	ID, Body   string
	Attributes map[string]types.MessageAttributeValue
	// Group is the FIFO message group ("" in a standard queue).
	Group string
	// Sent is the SentTimestamp a receive reports.
	Sent time.Time
	// VisibleAt is when the message is visible again (zero: visible).
	VisibleAt time.Time
	// Receipt is the handle of its latest receive; Receives counts them.
	Receipt  string
	Receives int
}

// Queue is one queue of the fake.
type Queue struct {
	URL, ARN string
	// Attributes are returned by GetQueueAttributes, over the counts the
	// fake computes (an ApproximateNumberOfMessages here wins).
	Attributes map[string]string
	Tags       map[string]string
	Messages   []*Message
	// LockGroups hands out nothing more of a message group with a message
	// in flight, as a FIFO queue does.
	LockGroups bool
}

// Fake is an in-memory SQS. The zero value is not usable: call New.
type Fake struct {
	mu     sync.Mutex
	queues map[string]*Queue
	seq    int
	clock  Clock
	own    time.Time // the fake's own clock, when New had none

	// T, when set, receives the errors of calls a test forbids (ReadOnly,
	// CheckReceive).
	T testing.TB
	// ReadOnly fails the test on any call that would change a queue's
	// contents (send, delete, purge, move), whatever interface reaches it.
	ReadOnly bool
	// NoReceive fails the test on any receive: code that must never scan
	// (the console's pages).
	NoReceive bool
	// CheckReceive fails the test on a receive that asks for more than 10
	// messages or not for every attribute.
	CheckReceive bool
	// StrictHandles refuses a receipt handle whose message is no longer in
	// flight (its visibility lapsed), as SQS does; off, any latest handle
	// of a message is accepted.
	StrictHandles bool
	// Tick moves the fake's own clock on every call (New without a clock
	// sets 1 ms, so that calls are ordered in time).
	Tick time.Duration
	// ReceiveTakes moves the clock this much per receive (a Clock with
	// Advance, or the fake's own).
	ReceiveTakes time.Duration
	// FailReceive fails the n-th receive (1-based; 0: never).
	FailReceive int
	// LoseReceive takes messages on the n-th receive but loses its
	// response: it returns none (1-based; 0: never).
	LoseReceive int
	// SendErr fails every SendMessage.
	SendErr error
	// OnSend runs after a successful send.
	OnSend func(queue string, in *sqs.SendMessageInput)
	// OnDelete runs before a delete: a non-nil error fails it.
	OnDelete func(queue, receipt string) error
	// StartErr fails StartMessageMoveTask and ListMessageMoveTasks.
	StartErr error
	// AnyURL sends the calls on a URL the fake does not know to its only
	// queue (a test of one queue need not spell its URL).
	AnyURL bool
	// InAWS makes Options report AWS's own endpoint instead of this
	// machine's, so that the code under test checks its caller.
	InAWS bool

	// Observations.
	Receives, Released, Changes int
	// Started are the move tasks started; MoveTasks the list
	// ListMessageMoveTasks answers from (newest first); Canceled the
	// handles canceled.
	Started   []*sqs.StartMessageMoveTaskInput
	MoveTasks []types.ListMessageMoveTasksResultEntry
	Canceled  []string
}

// New returns an empty fake measuring time on clock; a nil clock is the
// fake's own, at Start, moved 1 ms by every call.
func New(clock Clock) *Fake {
	f := &Fake{queues: map[string]*Queue{}, clock: clock}
	if clock == nil {
		f.own, f.Tick = Start, time.Millisecond
	}
	return f
}

// Now is the fake's time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now()
}

func (f *Fake) now() time.Time {
	if f.clock != nil {
		return f.clock.Now()
	}
	return f.own
}

// Advance moves the fake's clock on by d (a Clock without Advance stays).
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.advance(d)
}

// advance moves the clock by d.
func (f *Fake) advance(d time.Duration) {
	if d == 0 {
		return
	}
	if f.clock == nil {
		f.own = f.own.Add(d)
		return
	}
	if a, ok := f.clock.(interface{ Advance(time.Duration) }); ok {
		a.Advance(d)
	}
}

// tick is the time of a call: the clock moved by Tick.
func (f *Fake) tick() time.Time {
	f.advance(f.Tick)
	return f.now()
}

// AddQueue adds q (its maps made when nil) and returns it.
func (f *Fake) AddQueue(q *Queue) *Queue {
	f.mu.Lock()
	defer f.mu.Unlock()
	if q.Attributes == nil {
		q.Attributes = map[string]string{}
	}
	if q.Tags == nil {
		q.Tags = map[string]string{}
	}
	f.queues[q.URL] = q
	return q
}

// Queue is the queue at url, nil when there is none. A test changes its
// fields before the code under test runs.
func (f *Fake) Queue(url string) *Queue {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.queues[url]
}

// RemoveQueue deletes the queue at url: calls on it fail as on a queue
// that does not exist.
func (f *Fake) RemoveQueue(url string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.queues, url)
}

// Put enqueues m in the queue at url (a seeded message) and returns its
// id: m.ID, or a new one; a zero m.Sent is now.
func (f *Fake) Put(url string, m Message) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if m.ID == "" {
		f.seq++
		m.ID = fmt.Sprintf("m-%04d", f.seq)
	}
	if m.Sent.IsZero() {
		m.Sent = f.tick()
	}
	f.queues[url].Messages = append(f.queues[url].Messages, &m)
	return m.ID
}

// Snapshot returns copies of the messages of the queue at url, visible or
// not, in queue order (nil when there is no such queue).
func (f *Fake) Snapshot(url string) []Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.queues[url]
	if q == nil {
		return nil
	}
	out := make([]Message, 0, len(q.Messages))
	for _, m := range q.Messages {
		out = append(out, *m)
	}
	return out
}

// Expire makes every message of the queue at url visible (holds lapsed).
func (f *Fake) Expire(url string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.queues[url].Messages {
		m.VisibleAt = time.Time{}
	}
}

func (f *Fake) q(url *string) (*Queue, error) {
	q, ok := f.queues[aws.ToString(url)]
	if !ok && f.AnyURL && len(f.queues) == 1 {
		for _, only := range f.queues {
			return only, nil
		}
	}
	if !ok {
		return nil, &types.QueueDoesNotExist{Message: aws.String("The specified queue does not exist.")}
	}
	return q, nil
}

// forbid fails a call that would change a queue under ReadOnly.
func (f *Fake) forbid(call string) error {
	if !f.ReadOnly {
		return nil
	}
	if f.T != nil {
		f.T.Errorf("%s called on a read-only fake", call)
	}
	return errors.New("forbidden")
}

// ListQueueTags returns the queue's tags.
func (f *Fake) ListQueueTags(_ context.Context, in *sqs.ListQueueTagsInput, _ ...func(*sqs.Options)) (*sqs.ListQueueTagsOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.q(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	tags := make(map[string]string, len(q.Tags))
	for k, v := range q.Tags {
		tags[k] = v
	}
	return &sqs.ListQueueTagsOutput{Tags: tags}, nil
}

// GetQueueAttributes returns the visible and in-flight counts and the
// queue's Attributes.
func (f *Fake) GetQueueAttributes(_ context.Context, in *sqs.GetQueueAttributesInput, _ ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.q(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	now := f.tick()
	visible, hidden := 0, 0
	for _, m := range q.Messages {
		if m.VisibleAt.After(now) {
			hidden++
		} else {
			visible++
		}
	}
	out := map[string]string{
		"ApproximateNumberOfMessages":           strconv.Itoa(visible),
		"ApproximateNumberOfMessagesNotVisible": strconv.Itoa(hidden),
		"ApproximateNumberOfMessagesDelayed":    "0",
	}
	for k, v := range q.Attributes {
		out[k] = v
	}
	return &sqs.GetQueueAttributesOutput{Attributes: out}, nil
}

// ReceiveMessage hands out up to MaxNumberOfMessages visible messages,
// hiding each for VisibilityTimeout.
func (f *Fake) ReceiveMessage(_ context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Receives++
	q, err := f.q(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	if f.NoReceive && f.T != nil {
		f.T.Errorf("ReceiveMessage called on %s: this code must not scan", aws.ToString(in.QueueUrl))
	}
	if f.FailReceive == f.Receives {
		return nil, errors.New("connection reset by peer")
	}
	if f.CheckReceive && f.T != nil {
		if in.MaxNumberOfMessages < 1 || in.MaxNumberOfMessages > 10 {
			f.T.Errorf("MaxNumberOfMessages %d", in.MaxNumberOfMessages)
		}
		if !slices.Contains(in.MessageSystemAttributeNames, types.MessageSystemAttributeNameAll) || !slices.Contains(in.MessageAttributeNames, "All") {
			f.T.Errorf("receive does not ask for all attributes: %+v", in)
		}
	}
	now := f.tick()
	locked := map[string]bool{} // message groups with a message in flight before this receive
	if q.LockGroups {
		for _, m := range q.Messages {
			if m.VisibleAt.After(now) {
				locked[m.Group] = true
			}
		}
	}
	out := &sqs.ReceiveMessageOutput{}
	for _, m := range q.Messages {
		if len(out.Messages) >= int(in.MaxNumberOfMessages) {
			break
		}
		if m.VisibleAt.After(now) || locked[m.Group] {
			continue
		}
		f.seq++
		m.Receives++
		m.Receipt = fmt.Sprintf("rh-%s-%d", m.ID, f.seq)
		m.VisibleAt = now.Add(time.Duration(in.VisibilityTimeout) * time.Second)
		sys := map[string]string{
			"SentTimestamp":           strconv.FormatInt(m.Sent.UnixMilli(), 10),
			"ApproximateReceiveCount": strconv.Itoa(m.Receives),
			"SenderId":                "AIDATEST",
		}
		if m.Group != "" {
			sys["MessageGroupId"] = m.Group
		}
		out.Messages = append(out.Messages, types.Message{
			MessageId: aws.String(m.ID), ReceiptHandle: aws.String(m.Receipt), Body: aws.String(m.Body),
			MessageAttributes: m.Attributes, Attributes: sys,
		})
	}
	f.advance(f.ReceiveTakes)
	if f.LoseReceive == f.Receives {
		return &sqs.ReceiveMessageOutput{}, nil // taken and hidden on the server's side, never seen by the client
	}
	return out, nil
}

// SendMessage enqueues a message.
func (f *Fake) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	f.mu.Lock()
	if err := f.forbid("SendMessage"); err != nil {
		f.mu.Unlock()
		return nil, err
	}
	if f.SendErr != nil {
		f.mu.Unlock()
		return nil, f.SendErr
	}
	q, err := f.q(in.QueueUrl)
	if err != nil {
		f.mu.Unlock()
		return nil, err
	}
	f.seq++
	id := fmt.Sprintf("h-%04d", f.seq)
	q.Messages = append(q.Messages, &Message{ID: id, Body: aws.ToString(in.MessageBody), Attributes: in.MessageAttributes, Group: aws.ToString(in.MessageGroupId), Sent: f.tick()})
	hook := f.OnSend
	f.mu.Unlock()
	if hook != nil {
		hook(aws.ToString(in.QueueUrl), in)
	}
	return &sqs.SendMessageOutput{MessageId: aws.String(id)}, nil
}

// SendMessageBatch is refused: no code under test sends in batches.
func (f *Fake) SendMessageBatch(context.Context, *sqs.SendMessageBatchInput, ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.forbid("SendMessageBatch"); err != nil {
		return nil, err
	}
	return nil, errors.New("sqsfake: SendMessageBatch is not faked")
}

// DeleteMessage deletes the message of a receipt handle.
func (f *Fake) DeleteMessage(_ context.Context, in *sqs.DeleteMessageInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	f.mu.Lock()
	err := f.forbid("DeleteMessage")
	hook := f.OnDelete
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if hook != nil {
		if err := hook(aws.ToString(in.QueueUrl), aws.ToString(in.ReceiptHandle)); err != nil {
			return nil, err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.q(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	for i, m := range q.Messages {
		if m.Receipt == aws.ToString(in.ReceiptHandle) {
			q.Messages = append(q.Messages[:i], q.Messages[i+1:]...)
			return &sqs.DeleteMessageOutput{}, nil
		}
	}
	return nil, &types.ReceiptHandleIsInvalid{Message: aws.String("stale receipt handle")}
}

// DeleteMessageBatch is refused: no code under test deletes in batches.
func (f *Fake) DeleteMessageBatch(context.Context, *sqs.DeleteMessageBatchInput, ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.forbid("DeleteMessageBatch"); err != nil {
		return nil, err
	}
	return nil, errors.New("sqsfake: DeleteMessageBatch is not faked")
}

// PurgeQueue empties a queue.
func (f *Fake) PurgeQueue(_ context.Context, in *sqs.PurgeQueueInput, _ ...func(*sqs.Options)) (*sqs.PurgeQueueOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.forbid("PurgeQueue"); err != nil {
		return nil, err
	}
	q, err := f.q(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	q.Messages = nil
	return &sqs.PurgeQueueOutput{}, nil
}

// changeVisibility sets the visibility of the message of a receipt handle.
func (f *Fake) changeVisibility(q *Queue, receipt string, seconds int32) bool {
	now := f.tick()
	for _, m := range q.Messages {
		if m.Receipt != receipt || (f.StrictHandles && !m.VisibleAt.After(now)) {
			continue
		}
		m.VisibleAt = now.Add(time.Duration(seconds) * time.Second)
		if seconds == 0 {
			f.Released++
		}
		return true
	}
	return false
}

// ChangeMessageVisibility hides or releases one message.
func (f *Fake) ChangeMessageVisibility(_ context.Context, in *sqs.ChangeMessageVisibilityInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Changes++
	q, err := f.q(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	if !f.changeVisibility(q, aws.ToString(in.ReceiptHandle), in.VisibilityTimeout) {
		return nil, &types.ReceiptHandleIsInvalid{Message: aws.String("stale receipt handle")}
	}
	return &sqs.ChangeMessageVisibilityOutput{}, nil
}

// ChangeMessageVisibilityBatch hides or releases up to 10 messages.
func (f *Fake) ChangeMessageVisibilityBatch(_ context.Context, in *sqs.ChangeMessageVisibilityBatchInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Changes++
	if len(in.Entries) > 10 && f.T != nil {
		f.T.Errorf("ChangeMessageVisibilityBatch with %d entries", len(in.Entries))
	}
	q, err := f.q(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	out := &sqs.ChangeMessageVisibilityBatchOutput{}
	for _, e := range in.Entries {
		if f.changeVisibility(q, aws.ToString(e.ReceiptHandle), e.VisibilityTimeout) {
			out.Successful = append(out.Successful, types.ChangeMessageVisibilityBatchResultEntry{Id: e.Id})
		} else {
			out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String("ReceiptHandleIsInvalid"), SenderFault: true})
		}
	}
	return out, nil
}

// StartMessageMoveTask records a running move task; it moves nothing.
func (f *Fake) StartMessageMoveTask(_ context.Context, in *sqs.StartMessageMoveTaskInput, _ ...func(*sqs.Options)) (*sqs.StartMessageMoveTaskOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.forbid("StartMessageMoveTask"); err != nil {
		return nil, err
	}
	if f.StartErr != nil {
		return nil, f.StartErr
	}
	f.Started = append(f.Started, in)
	h := fmt.Sprintf("task-%d", len(f.Started))
	f.MoveTasks = append([]types.ListMessageMoveTasksResultEntry{{TaskHandle: aws.String(h), Status: aws.String("RUNNING"),
		SourceArn: in.SourceArn, DestinationArn: in.DestinationArn, MaxNumberOfMessagesPerSecond: in.MaxNumberOfMessagesPerSecond}}, f.MoveTasks...)
	return &sqs.StartMessageMoveTaskOutput{TaskHandle: aws.String(h)}, nil
}

// ListMessageMoveTasks lists the move tasks of a source queue.
func (f *Fake) ListMessageMoveTasks(_ context.Context, in *sqs.ListMessageMoveTasksInput, _ ...func(*sqs.Options)) (*sqs.ListMessageMoveTasksOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.StartErr != nil {
		return nil, f.StartErr
	}
	var out []types.ListMessageMoveTasksResultEntry
	for _, t := range f.MoveTasks {
		if aws.ToString(t.SourceArn) == aws.ToString(in.SourceArn) {
			out = append(out, t)
		}
	}
	return &sqs.ListMessageMoveTasksOutput{Results: out}, nil
}

// CancelMessageMoveTask cancels a running move task.
func (f *Fake) CancelMessageMoveTask(_ context.Context, in *sqs.CancelMessageMoveTaskInput, _ ...func(*sqs.Options)) (*sqs.CancelMessageMoveTaskOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, t := range f.MoveTasks {
		if aws.ToString(t.TaskHandle) == aws.ToString(in.TaskHandle) {
			if aws.ToString(t.Status) != "RUNNING" {
				return nil, errors.New("task is not running")
			}
			f.MoveTasks[i].Status = aws.String("CANCELLING")
			f.Canceled = append(f.Canceled, aws.ToString(in.TaskHandle))
			return &sqs.CancelMessageMoveTaskOutput{ApproximateNumberOfMessagesMoved: t.ApproximateNumberOfMessagesMoved}, nil
		}
	}
	return nil, &types.ResourceNotFoundException{Message: aws.String("no such task")}
}

// Options says where the fake runs, as an *sqs.Client does: on this
// machine (a local endpoint: no caller check), or with InAWS on AWS's own.
func (f *Fake) Options() sqs.Options {
	if f.InAWS {
		return sqs.Options{}
	}
	return sqs.Options{BaseEndpoint: aws.String("http://127.0.0.1:4566")}
}

// Attributes are dead-letter attributes as SQS hands them out (an empty
// string value absent), for a seeded Message.
func Attributes(in map[string]deadletter.Attribute) map[string]types.MessageAttributeValue {
	out := make(map[string]types.MessageAttributeValue, len(in))
	for name, a := range in {
		v := types.MessageAttributeValue{DataType: aws.String(a.DataType), BinaryValue: a.BinaryValue}
		if a.StringValue != "" {
			v.StringValue = aws.String(a.StringValue)
		}
		out[name] = v
	}
	return out
}
