package topology_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/local/topology"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/testkit/localtest"
)

func testPipeline(t *testing.T, name string, fifo bool) *pipeline.Pipeline {
	t.Helper()
	p := &pipeline.Pipeline{Name: name, Owner: "platform-oncall", FIFO: fifo, MaxReceiveCount: 4}
	p.ApplyDefaults()
	require.NoError(t, p.Validate())
	return p
}

func TestAttributes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		fifo    bool
		wantHot map[string]string
		wantDLQ map[string]string
	}{
		{
			name: "standard",
			wantHot: map[string]string{
				"MessageRetentionPeriod": "345600",  // 96 h
				"VisibilityTimeout":      "180",     // 6 x 30 s worker timeout
				"MaximumMessageSize":     "1032192", // 1 MiB less the dead-letter reserve
				"RedrivePolicy":          `{"deadLetterTargetArn":"arn:dlq","maxReceiveCount":4}`,
			},
			wantDLQ: map[string]string{"MessageRetentionPeriod": "1209600", "MaximumMessageSize": "1048576"}, // 14 days, 1 MiB
		},
		{
			name: "fifo",
			fifo: true,
			wantHot: map[string]string{
				"MessageRetentionPeriod":    "345600",
				"VisibilityTimeout":         "180",
				"MaximumMessageSize":        "1032192",
				"RedrivePolicy":             `{"deadLetterTargetArn":"arn:dlq","maxReceiveCount":4}`,
				"FifoQueue":                 "true",
				"ContentBasedDeduplication": "true",
			},
			wantDLQ: map[string]string{"MessageRetentionPeriod": "1209600", "MaximumMessageSize": "1048576", "FifoQueue": "true"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := testPipeline(t, "agent-tasks", tt.fifo)
			if d := cmp.Diff(tt.wantHot, topology.HotAttributes(p, "arn:dlq")); d != "" {
				t.Errorf("HotAttributes (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.wantDLQ, topology.DLQAttributes(p)); d != "" {
				t.Errorf("DLQAttributes (-want +got):\n%s", d)
			}
		})
	}
	assert.JSONEq(t, `{"redrivePermission":"byQueue","sourceQueueArns":["arn:hot"]}`, topology.RedriveAllowPolicy("arn:hot"))
}

// fakeSQS is a hand-written ResolveAPI: queues by name, with tags and ARNs.
type fakeSQS struct {
	queues map[string]map[string]string // url -> tags
	names  map[string]string            // name -> url
	err    error                        // returned by every call when set
}

var _ topology.ResolveAPI = (*fakeSQS)(nil)

func (f *fakeSQS) GetQueueUrl(_ context.Context, in *sqs.GetQueueUrlInput, _ ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) {
	if f.err != nil {
		return nil, f.err
	}
	url, ok := f.names[aws.ToString(in.QueueName)]
	if !ok {
		return nil, &types.QueueDoesNotExist{Message: aws.String("no such queue")}
	}
	return &sqs.GetQueueUrlOutput{QueueUrl: aws.String(url)}, nil
}

func (f *fakeSQS) GetQueueAttributes(_ context.Context, in *sqs.GetQueueAttributesInput, _ ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	if f.err != nil {
		return nil, f.err
	}
	if _, ok := f.queues[aws.ToString(in.QueueUrl)]; !ok {
		return nil, &types.QueueDoesNotExist{Message: aws.String("no such queue")}
	}
	return &sqs.GetQueueAttributesOutput{Attributes: map[string]string{"QueueArn": "arn:" + aws.ToString(in.QueueUrl)}}, nil
}

func (f *fakeSQS) ListQueues(_ context.Context, _ *sqs.ListQueuesInput, _ ...func(*sqs.Options)) (*sqs.ListQueuesOutput, error) {
	if f.err != nil {
		return nil, f.err
	}
	out := &sqs.ListQueuesOutput{}
	for url := range f.queues {
		out.QueueUrls = append(out.QueueUrls, url)
	}
	return out, nil
}

func (f *fakeSQS) ListQueueTags(_ context.Context, in *sqs.ListQueueTagsInput, _ ...func(*sqs.Options)) (*sqs.ListQueueTagsOutput, error) {
	if f.err != nil {
		return nil, f.err
	}
	return &sqs.ListQueueTagsOutput{Tags: f.queues[aws.ToString(in.QueueUrl)]}, nil
}

func TestResolveWith(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks", false)
	byName := &fakeSQS{
		queues: map[string]map[string]string{"u/agent-tasks": nil, "u/agent-tasks-dlq": nil},
		names:  map[string]string{"agent-tasks": "u/agent-tasks", "agent-tasks-dlq": "u/agent-tasks-dlq"},
	}
	byTags := &fakeSQS{queues: map[string]map[string]string{
		"u/Stack-Hot-1": {pipeline.TagPipeline: "agent-tasks", pipeline.TagRole: "hot"},
		"u/Stack-DLQ-1": {pipeline.TagPipeline: "agent-tasks", pipeline.TagRole: "dlq"},
		"u/Other-DLQ":   {pipeline.TagPipeline: "agent-steps", pipeline.TagRole: "dlq"},
	}}
	noDLQ := &fakeSQS{queues: map[string]map[string]string{
		"u/Stack-Hot-1": {pipeline.TagPipeline: "agent-tasks", pipeline.TagRole: "hot"},
	}}
	outage := &fakeSQS{err: errors.New("connection refused")}
	tests := []struct {
		name     string
		api      *fakeSQS
		override topology.Override
		want     pipeline.Queues
		wantErr  error // errors.Is target; nil means success
		anyErr   bool  // an error that is not ErrNotFound
	}{
		{name: "local names", api: byName, want: pipeline.Queues{
			HotURL: "u/agent-tasks", HotARN: "arn:u/agent-tasks", DLQURL: "u/agent-tasks-dlq", DLQARN: "arn:u/agent-tasks-dlq"}},
		{name: "tags when the names do not exist", api: byTags, want: pipeline.Queues{
			HotURL: "u/Stack-Hot-1", HotARN: "arn:u/Stack-Hot-1", DLQURL: "u/Stack-DLQ-1", DLQARN: "arn:u/Stack-DLQ-1"}},
		{name: "override wins, ARNs looked up", api: byTags,
			override: topology.Override{HotURL: "u/Other-DLQ", DLQURL: "u/Stack-DLQ-1", DLQARN: "given"},
			want:     pipeline.Queues{HotURL: "u/Other-DLQ", HotARN: "arn:u/Other-DLQ", DLQURL: "u/Stack-DLQ-1", DLQARN: "given"}},
		{name: "overridden DLQ that does not exist", api: byName,
			override: topology.Override{HotURL: "u/agent-tasks", DLQURL: "u/misnamed-dlq"}, wantErr: topology.ErrNotFound},
		{name: "missing DLQ fails fast", api: noDLQ, wantErr: topology.ErrNotFound},
		{name: "nothing at all", api: &fakeSQS{}, wantErr: topology.ErrNotFound},
		{name: "SQS outage is not 'not found'", api: outage, anyErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := topology.ResolveWith(context.Background(), tt.api, p, tt.override)
			switch {
			case tt.wantErr != nil:
				require.ErrorIs(t, err, tt.wantErr)
			case tt.anyErr:
				require.Error(t, err)
				assert.NotErrorIs(t, err, topology.ErrNotFound)
			default:
				require.NoError(t, err)
				if d := cmp.Diff(tt.want, got); d != "" {
					t.Errorf("ResolveWith (-want +got):\n%s", d)
				}
			}
		})
	}
}

// TestCreateOnEmulator builds the local topology on the SQS emulator and
// checks that the queues hold the definition: redrive policy, retentions,
// visibility timeout, tags and the DLQ's redrive allow policy; that Create is
// idempotent; and that Resolve finds what Create made.
func TestCreateOnEmulator(t *testing.T) {
	t.Parallel()
	cfg := localtest.AWS(t)
	client := sqs.NewFromConfig(cfg)
	for _, fifo := range []bool{false, true} {
		t.Run(map[bool]string{false: "standard", true: "fifo"}[fifo], func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			p := testPipeline(t, localtest.Unique("create"), fifo)
			q, err := topology.Create(ctx, client, p)
			require.NoError(t, err)
			t.Cleanup(func() {
				for _, u := range []string{q.HotURL, q.DLQURL} {
					_, _ = client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(u)})
				}
			})
			assert.Equal(t, fifo, q.FIFO)

			hot := attrs(t, client, q.HotURL)
			assert.JSONEq(t, topology.RedrivePolicy(q.DLQARN, 4), hot["RedrivePolicy"])
			assert.Equal(t, "180", hot["VisibilityTimeout"])
			assert.Equal(t, "345600", hot["MessageRetentionPeriod"])
			dlq := attrs(t, client, q.DLQURL)
			assert.Equal(t, "1209600", dlq["MessageRetentionPeriod"])
			assert.Equal(t, "1032192", hot["MaximumMessageSize"], "1 MiB less the dead-letter reserve")
			assert.Equal(t, "1048576", dlq["MaximumMessageSize"], "the hot queue's plus the reserve")
			assert.JSONEq(t, topology.RedriveAllowPolicy(q.HotARN), dlq["RedriveAllowPolicy"])
			for url, role := range map[string]string{q.HotURL: "hot", q.DLQURL: "dlq"} {
				tags, err := client.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: aws.String(url)})
				require.NoError(t, err)
				assert.Equal(t, map[string]string{pipeline.TagPipeline: p.Name, pipeline.TagOwner: p.Owner, pipeline.TagRole: role}, tags.Tags)
			}

			// The hot queue takes a body at its maximum and refuses one
			// byte more; the DLQ takes that body's dead letter.
			assertFits(t, client, p, q)

			// Idempotent, also after a definition change.
			p.VisibilityTimeoutSeconds = 240
			p.MaxMessageBytes = 256 * 1024
			again, err := topology.Create(ctx, client, p)
			require.NoError(t, err)
			assert.Equal(t, q, again)
			assert.Equal(t, "240", attrs(t, client, q.HotURL)["VisibilityTimeout"])
			assert.Equal(t, "262144", attrs(t, client, q.HotURL)["MaximumMessageSize"])
			assert.Equal(t, "278528", attrs(t, client, q.DLQURL)["MaximumMessageSize"])
			assertFits(t, client, p, q)

			got, err := topology.ResolveWith(ctx, client, p, topology.Override{})
			require.NoError(t, err)
			assert.Equal(t, q, got)
		})
	}
}

// assertFits sends a body of the hot queue's maximum size to the hot queue
// (and one a byte larger, which the emulator must refuse as SQS does), then
// the body's dead letter with the largest dead-letter attributes
// FitDeadLetter writes (escape-heavy identity fields, reduced to fit) to
// the DLQ, which must take it.
func assertFits(t *testing.T, client *sqs.Client, p *pipeline.Pipeline, q pipeline.Queues) {
	t.Helper()
	ctx := context.Background()
	send := func(url, body string, attrs map[string]types.MessageAttributeValue) error {
		in := &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body), MessageAttributes: attrs}
		if p.FIFO {
			in.MessageGroupId, in.MessageDeduplicationId = aws.String("g"), aws.String(localtest.Unique("d"))
		}
		_, err := client.SendMessage(ctx, in)
		return err
	}
	body := strings.Repeat("x", p.MaxMessageBytes)
	require.NoError(t, send(q.HotURL, body, nil), "a body at the hot queue's maximum")
	require.Error(t, send(q.HotURL, body+"x", nil), "a byte over the hot queue's maximum")

	ctl := strings.Repeat("\x01", 256) // six bytes each in dlq_meta
	meta := deadletter.Meta{
		Reason: deadletter.ReasonToolVersionUnsupported, Attempts: 1, MessageID: "0f8fad5b-d9cb-469f-a165-70867728950e",
		DeadLetteredAt: time.Now().UTC(), IdempotencyKey: ctl, TaskID: ctl, TraceID: ctl, InputSHA256: strings.Repeat("f", 64),
		Error: strings.Repeat("\x01", 1000), SourceQueueARN: q.HotARN,
	}
	fitted, _, err := deadletter.FitDeadLetter(meta, nil, len(body), p.DLQMaxMessageBytes(), "s3://agentdlq-evals/"+p.Name+"/evidence/x.json")
	require.NoError(t, err)
	letter := map[string]types.MessageAttributeValue{}
	for name, a := range fitted {
		letter[name] = types.MessageAttributeValue{DataType: aws.String(a.DataType), StringValue: aws.String(a.StringValue)}
	}
	require.NoError(t, send(q.DLQURL, body, letter), "the dead letter of a body at the hot queue's maximum, %d bytes",
		deadletter.MessageSize(len(body), fitted))
}

func attrs(t *testing.T, client *sqs.Client, url string) map[string]string {
	t.Helper()
	out, err := client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll},
	})
	require.NoError(t, err)
	return out.Attributes
}
