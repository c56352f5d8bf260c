package esm_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/local/esm"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/testkit/localtest"
)

func emuPipeline(t *testing.T, fifo bool) *pipeline.Pipeline {
	t.Helper()
	p := &pipeline.Pipeline{Name: "esm-test", Owner: "o", FIFO: fifo, MaxReceiveCount: 3}
	p.ApplyDefaults()
	// Short timeouts so that retries happen within the test.
	p.WorkerTimeoutSeconds, p.VisibilityTimeoutSeconds = 2, 2
	return p
}

// The mapping against the SQS emulator, with a handler that fails some records
// always, some once (backing off 1 s with ChangeMessageVisibility), and
// succeeds with the rest. Must hold: successes are deleted after one attempt;
// a record that fails once is retried after its backoff and then deleted; a
// record that always fails gets exactly maxReceiveCount attempts and then the
// redrive policy moves it to the DLQ; nothing else is left anywhere.
func TestMappingOnEmulator(t *testing.T) {
	t.Parallel()
	cfg := localtest.AWS(t)
	client := sqs.NewFromConfig(cfg)
	p := emuPipeline(t, false)
	q := localtest.Queues(t, cfg, p)
	ctx := context.Background()

	kinds := map[string]int{"ok": 12, "once": 3, "always": 2}
	for kind, n := range kinds {
		for i := range n {
			_, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.HotURL),
				MessageBody: aws.String(fmt.Sprintf("%s-%d", kind, i)),
				MessageAttributes: map[string]types.MessageAttributeValue{
					"kind": {DataType: aws.String("String"), StringValue: aws.String(kind)},
				}})
			require.NoError(t, err)
		}
	}

	var mu sync.Mutex
	attempts := map[string]int{}
	handler := func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		var resp events.SQSEventResponse
		for _, r := range ev.Records {
			mu.Lock()
			attempts[r.Body]++
			n := attempts[r.Body]
			mu.Unlock()
			assert.Equal(t, strconv.Itoa(n), r.Attributes["ApproximateReceiveCount"], r.Body)
			assert.Equal(t, q.HotARN, r.EventSourceARN)
			assert.NotEmpty(t, r.Attributes["SentTimestamp"])
			kind := aws.ToString(r.MessageAttributes["kind"].StringValue)
			if kind == "always" || (kind == "once" && n == 1) {
				// Back off 1 s, as the worker does for a transient failure.
				_, err := client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
					QueueUrl: aws.String(q.HotURL), ReceiptHandle: aws.String(r.ReceiptHandle), VisibilityTimeout: 1})
				require.NoError(t, err)
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
			}
		}
		return resp, nil
	}
	mc := esm.FromPipeline(p, q, "us-east-1")
	mc.Pollers, mc.WaitTime, mc.UntilIdle, mc.IdleTimeout, mc.Logger = 4, time.Second, true, 20*time.Second, quiet()
	m, err := esm.New(client, handler, mc)
	require.NoError(t, err)
	stats, err := m.Run(ctx)
	require.NoError(t, err)

	for body, n := range attempts {
		switch {
		case strings.HasPrefix(body, "ok-"):
			assert.Equal(t, 1, n, body)
		case strings.HasPrefix(body, "once-"):
			assert.Equal(t, 2, n, body)
		case strings.HasPrefix(body, "always-"):
			assert.Equal(t, p.MaxReceiveCount, n, body)
		}
	}
	assert.Len(t, attempts, 17)
	assert.Equal(t, int64(12+3), stats.Deleted)
	assert.Equal(t, int64(3+2*3), stats.Failed)
	assert.Equal(t, stats.Received, stats.Deleted+stats.Failed)

	out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.DLQURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 30})
	require.NoError(t, err)
	var dead []string
	for _, m := range out.Messages {
		dead = append(dead, aws.ToString(m.Body))
	}
	assert.ElementsMatch(t, []string{"always-0", "always-1"}, dead)
}

// A FIFO queue with concurrent pollers: each message group is handled in order.
func TestMappingFIFOOrderOnEmulator(t *testing.T) {
	t.Parallel()
	cfg := localtest.AWS(t)
	client := sqs.NewFromConfig(cfg)
	p := emuPipeline(t, true)
	q := localtest.Queues(t, cfg, p)
	ctx := context.Background()
	const groups, per = 4, 6
	for i := range per {
		for g := range groups {
			_, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.HotURL),
				MessageBody: aws.String(strconv.Itoa(i)), MessageGroupId: aws.String("run-" + strconv.Itoa(g)),
				MessageDeduplicationId: aws.String(fmt.Sprintf("%d-%d", g, i))})
			require.NoError(t, err)
		}
	}
	var mu sync.Mutex
	seen := map[string][]string{}
	handler := func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range ev.Records {
			g := r.Attributes["MessageGroupId"]
			seen[g] = append(seen[g], r.Body)
		}
		return events.SQSEventResponse{}, nil
	}
	mc := esm.FromPipeline(p, q, "us-east-1")
	mc.Pollers, mc.WaitTime, mc.UntilIdle, mc.IdleTimeout, mc.Logger = 3, time.Second, true, 10*time.Second, quiet()
	m, err := esm.New(client, handler, mc)
	require.NoError(t, err)
	stats, err := m.Run(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(groups*per), stats.Deleted)
	require.Len(t, seen, groups)
	for g, bodies := range seen {
		assert.Equal(t, []string{"0", "1", "2", "3", "4", "5"}, bodies, g)
	}
}
