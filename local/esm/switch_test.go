package esm_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/local/esm"
	"github.com/agentdlq/agentdlq/testkit/localtest"
)

// The kill switch locally: while the mapping is disabled, messages wait on
// the hot queue (not one received, receive counts untouched); once enabled
// they are processed, and nothing comes from the DLQ.
func TestSwitchPausesTheMapping(t *testing.T) {
	t.Parallel()
	cfg := localtest.AWS(t)
	client := sqs.NewFromConfig(cfg)
	p := emuPipeline(t, false)
	q := localtest.Queues(t, cfg, p)
	ctx := context.Background()
	sw := esm.Switch{Dir: t.TempDir()}

	// Pause through the Lambda calls, as agentdlq pause makes them.
	list, err := sw.ListEventSourceMappings(ctx, &lambda.ListEventSourceMappingsInput{EventSourceArn: aws.String(q.HotARN)})
	require.NoError(t, err)
	require.Len(t, list.EventSourceMappings, 1)
	uuid := list.EventSourceMappings[0].UUID
	up, err := sw.UpdateEventSourceMapping(ctx, &lambda.UpdateEventSourceMappingInput{UUID: uuid, Enabled: aws.Bool(false)})
	require.NoError(t, err)
	assert.Equal(t, "Disabled", aws.ToString(up.State))
	assert.False(t, sw.Enabled(q.HotARN))

	for _, body := range []string{"a", "b", "c"} {
		_, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.HotURL), MessageBody: aws.String(body)})
		require.NoError(t, err)
	}
	_, err = client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.DLQURL), MessageBody: aws.String("dead")})
	require.NoError(t, err)

	var handled atomic.Int64
	handler := func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		handled.Add(int64(len(ev.Records)))
		return events.SQSEventResponse{}, nil
	}
	mc := esm.FromPipeline(p, q, "us-east-1")
	var logs lockedBuffer
	mc.WaitTime, mc.Logger, mc.Enabled = time.Second, slog.New(slog.NewJSONHandler(&logs, nil)), sw.Enabled
	m, err := esm.New(client, handler, mc)
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan esm.Stats, 1)
	go func() { st, _ := m.Run(runCtx); done <- st }()

	// Paused for a while: nothing is received.
	time.Sleep(2 * time.Second)
	assert.Zero(t, handled.Load(), "a paused mapping receives nothing")
	depth, err := esm.Depth(ctx, client, q.HotURL)
	require.NoError(t, err)
	assert.Equal(t, 3, depth, "the messages wait on the hot queue")
	assert.Equal(t, 1, strings.Count(logs.String(), `"msg":"paused: `), "a pause is logged once, not once a poller or a look: %s", logs.String())

	// Resume: the three are processed.
	_, err = sw.UpdateEventSourceMapping(ctx, &lambda.UpdateEventSourceMappingInput{UUID: uuid, Enabled: aws.Bool(true)})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		n, err := esm.Depth(ctx, client, q.HotURL)
		return err == nil && n == 0
	}, 30*time.Second, 200*time.Millisecond)
	stop()
	st := <-done
	assert.Equal(t, int64(3), handled.Load())
	assert.Equal(t, int64(3), st.Deleted)
	dlq, err := esm.Depth(ctx, client, q.DLQURL)
	require.NoError(t, err)
	assert.Equal(t, 1, dlq, "resuming pulls nothing from the DLQ")
	assert.Equal(t, 1, strings.Count(logs.String(), `"msg":"resumed: `), "the resume is logged once: %s", logs.String())
}

// lockedBuffer is a log sink the test reads while the pollers write to it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
