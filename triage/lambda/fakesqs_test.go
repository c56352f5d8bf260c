package main

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/internal/triagetest"
)

// fakeSQS is an in-memory queue with SQS's visibility semantics on a fake
// clock. It fails the test on any call that would change the queue's
// contents (delete, send, purge, move), whatever interface reaches it.
type fakeSQS struct {
	t     testing.TB
	clock *triagetest.Clock

	mu   sync.Mutex
	msgs []*fakeMsg
	// Behaviour switches.
	receiveTakes time.Duration // the clock moves this much per receive
	missing      bool          // the queue does not exist
	failReceive  int           // the n-th receive fails (1-based; 0: never)
	fifo         bool          // a message group with a message in flight hands out nothing more
	retention    time.Duration // MessageRetentionPeriod to report (0: not reported)
	visibility   time.Duration // the queue's VisibilityTimeout to report (0: not reported)
	loseReceive  int           // the n-th receive takes messages but its response is lost: it returns none (1-based; 0: never)
	// Observations.
	receives int
	released int
	changes  int
}

type fakeMsg struct {
	id, body    string
	attrs       map[string]types.MessageAttributeValue
	sent        time.Time
	group       string
	hiddenUntil time.Time
	receives    int
	handle      string
}

var _ triage.ScanAPI = (*fakeSQS)(nil)

func newFakeSQS(t testing.TB, clock *triagetest.Clock, msgs []triage.Message) *fakeSQS {
	f := &fakeSQS{t: t, clock: clock}
	for _, m := range msgs {
		fm := &fakeMsg{id: m.MessageID, body: m.Body, sent: m.SentTimestamp, group: m.MessageGroupID, attrs: map[string]types.MessageAttributeValue{}}
		for name, a := range m.Attributes {
			fm.attrs[name] = types.MessageAttributeValue{DataType: aws.String(a.DataType), StringValue: nilIfEmpty(a.StringValue), BinaryValue: a.BinaryValue}
		}
		f.msgs = append(f.msgs, fm)
	}
	return f
}

func nilIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return aws.String(s)
}

func (f *fakeSQS) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.receives++
	if f.missing {
		return nil, &types.QueueDoesNotExist{Message: aws.String("The specified queue does not exist.")}
	}
	if f.failReceive == f.receives {
		return nil, errors.New("connection reset by peer")
	}
	if in.MaxNumberOfMessages < 1 || in.MaxNumberOfMessages > 10 {
		f.t.Errorf("MaxNumberOfMessages %d", in.MaxNumberOfMessages)
	}
	if !slices.Contains(in.MessageSystemAttributeNames, types.MessageSystemAttributeNameAll) || !slices.Contains(in.MessageAttributeNames, "All") {
		f.t.Errorf("receive does not ask for all attributes: %+v", in)
	}
	now := f.clock.Now()
	out := &sqs.ReceiveMessageOutput{}
	locked := map[string]bool{} // FIFO groups with a message in flight before this receive
	if f.fifo {
		for _, m := range f.msgs {
			if m.hiddenUntil.After(now) {
				locked[m.group] = true
			}
		}
	}
	for _, m := range f.msgs {
		if len(out.Messages) == int(in.MaxNumberOfMessages) {
			break
		}
		if m.hiddenUntil.After(now) || locked[m.group] {
			continue
		}
		m.receives++
		m.hiddenUntil = now.Add(time.Duration(in.VisibilityTimeout) * time.Second)
		m.handle = m.id + "#" + strconv.Itoa(m.receives)
		sys := map[string]string{
			"SentTimestamp":           strconv.FormatInt(m.sent.UnixMilli(), 10),
			"ApproximateReceiveCount": strconv.Itoa(m.receives),
			"SenderId":                "AIDATEST",
		}
		if m.group != "" {
			sys["MessageGroupId"] = m.group
		}
		out.Messages = append(out.Messages, types.Message{
			MessageId: aws.String(m.id), ReceiptHandle: aws.String(m.handle), Body: aws.String(m.body),
			MessageAttributes: m.attrs, Attributes: sys,
		})
	}
	f.clock.Advance(f.receiveTakes)
	if f.loseReceive == f.receives {
		return &sqs.ReceiveMessageOutput{}, nil // taken and hidden on the server's side, never seen by the client
	}
	return out, nil
}

func (f *fakeSQS) ChangeMessageVisibilityBatch(_ context.Context, in *sqs.ChangeMessageVisibilityBatchInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.changes++
	if len(in.Entries) > 10 {
		f.t.Errorf("ChangeMessageVisibilityBatch with %d entries", len(in.Entries))
	}
	out := &sqs.ChangeMessageVisibilityBatchOutput{}
	for _, e := range in.Entries {
		found := false
		for _, m := range f.msgs {
			if m.handle == aws.ToString(e.ReceiptHandle) && m.hiddenUntil.After(f.clock.Now()) {
				m.hiddenUntil = f.clock.Now().Add(time.Duration(e.VisibilityTimeout) * time.Second)
				found = true
				if e.VisibilityTimeout == 0 {
					f.released++
				}
			}
		}
		if found {
			out.Successful = append(out.Successful, types.ChangeMessageVisibilityBatchResultEntry{Id: e.Id})
		} else {
			out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String("ReceiptHandleIsInvalid"), SenderFault: true})
		}
	}
	return out, nil
}

func (f *fakeSQS) GetQueueAttributes(_ context.Context, in *sqs.GetQueueAttributesInput, _ ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.missing {
		return nil, &types.QueueDoesNotExist{Message: aws.String("The specified queue does not exist.")}
	}
	visible, hidden := f.counts()
	out := &sqs.GetQueueAttributesOutput{Attributes: map[string]string{
		"ApproximateNumberOfMessages":           strconv.Itoa(visible),
		"ApproximateNumberOfMessagesNotVisible": strconv.Itoa(hidden),
		"FifoQueue":                             strconv.FormatBool(f.fifo),
	}}
	if f.visibility > 0 {
		out.Attributes["VisibilityTimeout"] = strconv.Itoa(int(f.visibility / time.Second))
	}
	if f.retention > 0 {
		out.Attributes["MessageRetentionPeriod"] = strconv.Itoa(int(f.retention / time.Second))
	}
	return out, nil
}

func (f *fakeSQS) counts() (visible, hidden int) {
	for _, m := range f.msgs {
		if m.hiddenUntil.After(f.clock.Now()) {
			hidden++
		} else {
			visible++
		}
	}
	return visible, hidden
}

// The calls that change a queue: a scan must never make them.
func (f *fakeSQS) DeleteMessage(context.Context, *sqs.DeleteMessageInput, ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	f.t.Errorf("triage called DeleteMessage")
	return nil, errors.New("forbidden")
}

func (f *fakeSQS) DeleteMessageBatch(context.Context, *sqs.DeleteMessageBatchInput, ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	f.t.Errorf("triage called DeleteMessageBatch")
	return nil, errors.New("forbidden")
}

func (f *fakeSQS) SendMessage(context.Context, *sqs.SendMessageInput, ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	f.t.Errorf("triage called SendMessage")
	return nil, errors.New("forbidden")
}

func (f *fakeSQS) SendMessageBatch(context.Context, *sqs.SendMessageBatchInput, ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	f.t.Errorf("triage called SendMessageBatch")
	return nil, errors.New("forbidden")
}

func (f *fakeSQS) PurgeQueue(context.Context, *sqs.PurgeQueueInput, ...func(*sqs.Options)) (*sqs.PurgeQueueOutput, error) {
	f.t.Errorf("triage called PurgeQueue")
	return nil, errors.New("forbidden")
}

func (f *fakeSQS) StartMessageMoveTask(context.Context, *sqs.StartMessageMoveTaskInput, ...func(*sqs.Options)) (*sqs.StartMessageMoveTaskOutput, error) {
	f.t.Errorf("triage called StartMessageMoveTask")
	return nil, errors.New("forbidden")
}

// snapshot is the queue's content for before/after comparisons.
func (f *fakeSQS) snapshot() map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]string{}
	for _, m := range f.msgs {
		out[m.id] = m.body
	}
	return out
}
