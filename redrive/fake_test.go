package redrive

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/testkit/sqsfake"
)

// fakeSQS is the shared in-memory SQS (testkit/sqsfake) on its own clock,
// with the pipelines' queues as the CDK app makes them (addPair).
type fakeSQS struct{ *sqsfake.Fake }

var (
	_ API       = (*fakeSQS)(nil)
	_ selectAPI = (*fakeSQS)(nil)
	_ moveAPI   = (*fakeSQS)(nil)
)

func newFakeSQS() *fakeSQS { return &fakeSQS{sqsfake.New(nil)} }

// addPair creates a hot queue and DLQ for p as the CDK app and the local
// topology do: redrive policy, redrive allow policy, tags.
func (f *fakeSQS) addPair(p *pipeline.Pipeline) pipeline.Queues {
	hot := &sqsfake.Queue{URL: "http://fake/q/" + p.HotQueueName(), ARN: "arn:aws:sqs:us-east-1:000000000000:" + p.HotQueueName()}
	dlq := &sqsfake.Queue{URL: "http://fake/q/" + p.DLQName(), ARN: "arn:aws:sqs:us-east-1:000000000000:" + p.DLQName()}
	hot.Attributes = map[string]string{"QueueArn": hot.ARN, "RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":%d}`, dlq.ARN, p.MaxReceiveCount)}
	dlq.Attributes = map[string]string{"QueueArn": dlq.ARN, "RedriveAllowPolicy": fmt.Sprintf(`{"redrivePermission":"byQueue","sourceQueueArns":[%q]}`, hot.ARN)}
	hot.Tags = map[string]string{pipeline.TagPipeline: p.Name, pipeline.TagOwner: p.Owner, pipeline.TagRole: "hot"}
	dlq.Tags = map[string]string{pipeline.TagPipeline: p.Name, pipeline.TagOwner: p.Owner, pipeline.TagRole: "dlq"}
	f.AddQueue(hot)
	f.AddQueue(dlq)
	return pipeline.Queues{HotURL: hot.URL, HotARN: hot.ARN, DLQURL: dlq.URL, DLQARN: dlq.ARN, FIFO: p.FIFO}
}

// put enqueues a message directly (a seeded dead letter).
func (f *fakeSQS) put(url, body string, attrs map[string]deadletter.Attribute, group string) string {
	return f.Put(url, sqsfake.Message{Body: body, Attributes: attributesToSQS(attrs), Group: group})
}

// fakeMsg is a message of a snapshot, as the tests read it.
type fakeMsg struct {
	id, body  string
	attrs     map[string]sqstypes.MessageAttributeValue
	group     string
	sent      time.Time
	visibleAt time.Time
	receipt   string
	receives  int
}

// snapshot returns the messages of a queue (visible or not).
func (f *fakeSQS) snapshot(url string) []*fakeMsg {
	var out []*fakeMsg
	for _, m := range f.Snapshot(url) {
		out = append(out, &fakeMsg{id: m.ID, body: m.Body, attrs: m.Attributes, group: m.Group, sent: m.Sent, visibleAt: m.VisibleAt, receipt: m.Receipt, receives: m.Receives})
	}
	return out
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
