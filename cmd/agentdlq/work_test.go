package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/functions/batch"
	"github.com/agentdlq/agentdlq/local/esm"
	"github.com/agentdlq/agentdlq/local/topology"
	"github.com/agentdlq/agentdlq/local/workload"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/testkit/localtest"
)

// `agentdlq work --until-idle` on queues given by the Lambda environment
// variables: the valid task is processed, the poison one dead-lettered, and
// it stops by itself once the hot queue is drained.
func TestWorkUntilIdle(t *testing.T) {
	cfg := localtest.AWS(t)
	configPath := filepath.Join("..", "..", pipeline.DefaultFile)
	file, err := pipeline.Load(configPath)
	require.NoError(t, err)
	p, err := file.Get("agent-tasks")
	require.NoError(t, err)
	q := localtest.Queues(t, cfg, p)
	table := localtest.Table(t, cfg)
	t.Setenv(topology.EnvHotQueueURL, q.HotURL)
	t.Setenv(topology.EnvDLQURL, q.DLQURL)

	client := sqs.NewFromConfig(cfg)
	prefix := localtest.Unique("work")
	_, err = workload.Send(context.Background(), client, q.HotURL, false,
		[]workload.Task{workload.Make(prefix, 0, workload.OK, 0), workload.Make(prefix, 1, workload.ToolUnknown, 0)}, 1)
	require.NoError(t, err)

	var out, logs bytes.Buffer
	g := &globalFlags{configPath: configPath}
	f := &workFlags{pipeline: "agent-tasks", untilIdle: true, idleTimeout: 20 * time.Second, pollers: 2, table: table, logLevel: "warn"}
	require.NoError(t, runWork(context.Background(), g, f, &out, &logs))
	var got workSummary
	require.NoError(t, json.Unmarshal(out.Bytes(), &got), out.String())
	assert.Equal(t, "agent-tasks", got.Pipeline)
	assert.Equal(t, int64(2), got.Received)
	assert.Equal(t, int64(2), got.Deleted, "processed, and dead-lettered then acknowledged")
	assert.Equal(t, int64(1), got.Processed)
	assert.Equal(t, int64(1), got.DeadLettered)
	assert.Equal(t, map[string]int64{"tool_unknown": 1}, got.DeadLetteredByReason)
	assert.Zero(t, got.Retried)
	assert.Contains(t, logs.String(), `"reason":"tool_unknown"`)
	n, err := esm.Depth(context.Background(), client, q.DLQURL)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
}

// A misnamed DLQ: work fails before receiving anything.
func TestWorkFailsFastWithoutItsDLQ(t *testing.T) {
	cfg := localtest.AWS(t)
	configPath := filepath.Join("..", "..", pipeline.DefaultFile)
	file, err := pipeline.Load(configPath)
	require.NoError(t, err)
	p, err := file.Get("agent-tasks")
	require.NoError(t, err)
	q := localtest.Queues(t, cfg, p)
	t.Setenv(topology.EnvHotQueueURL, q.HotURL)
	t.Setenv(topology.EnvDLQURL, q.DLQURL+"-misnamed")
	client := sqs.NewFromConfig(cfg)
	_, err = workload.Send(context.Background(), client, q.HotURL, false, []workload.Task{workload.Make(localtest.Unique("nodlq"), 0, workload.OK, 0)}, 1)
	require.NoError(t, err)

	var out, logs bytes.Buffer
	f := &workFlags{pipeline: "agent-tasks", untilIdle: true, idleTimeout: 5 * time.Second, logLevel: "warn"}
	err = runWork(context.Background(), &globalFlags{configPath: configPath}, f, &out, &logs)
	require.ErrorIs(t, err, topology.ErrNotFound)
	n, err := esm.Depth(context.Background(), client, q.HotURL)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "nothing received")
}

// The summary names what became of the records: one retried three times
// and then dead-lettered is "retried" 3 and "dead_lettered" 1, never
// "failed" (the summary used to print esm's "failed":3 for it).
func TestWorkSummaryNamesRetriesAndDeadLetters(t *testing.T) {
	t.Parallel()
	var passed bytes.Buffer
	m := newMetricCounts(&passed)
	lines := []string{
		`{"_aws":{"Timestamp":1,"CloudWatchMetrics":[]},"Pipeline":"p","Processed":0,"Retried":1,"DeadLettered":0,"DLQSendFailures":0,"DuplicatesSkipped":0}`,
		`{"_aws":{"Timestamp":2,"CloudWatchMetrics":[]},"Pipeline":"p","Processed":2,"Retried":2,"DeadLettered":0,"DLQSendFailures":1,"DuplicatesSkipped":1}`,
		`{"_aws":{"Timestamp":3,"CloudWatchMetrics":[]},"Pipeline":"p","Processed":0,"Retried":0,"DeadLettered":2,"DLQSendFailures":0,"DuplicatesSkipped":0}` + "\n" +
			`{"_aws":{"Timestamp":3,"CloudWatchMetrics":[]},"Pipeline":"p","Reason":"budget_exhausted","DeadLettered":1}` + "\n" +
			`{"_aws":{"Timestamp":3,"CloudWatchMetrics":[]},"Pipeline":"p","Reason":"tool_unknown","DeadLettered":1}`,
		`{"time":"…","level":"WARN","msg":"not a metric","Processed":99}`,
	}
	for _, l := range lines {
		// A line may come in two writes: it is counted once, when whole.
		half := len(l) / 2
		_, err := m.Write([]byte(l[:half]))
		require.NoError(t, err)
		_, err = m.Write([]byte(l[half:] + "\n"))
		require.NoError(t, err)
	}
	assert.Equal(t, strings.Join(lines, "\n")+"\n", passed.String(), "every line passed on as it was")
	stats := esm.Stats{Batches: 3, Received: 8, Deleted: 5, Failed: 3}
	sum := newWorkSummary("p", stats, m)
	assert.Equal(t, workSummary{
		Pipeline: "p", Batches: 3, Received: 8, Processed: 2, DuplicatesSkipped: 1, DeadLettered: 2,
		DeadLetteredByReason: map[string]int64{"budget_exhausted": 1, "tool_unknown": 1},
		Retried:              3, DLQSendFailures: 1, Deleted: 5,
		EventSourceMapping: esm.EventCounts{PolledEventCount: 8, InvokedEventCount: 8, FailedInvokeEventCount: 3, DeletedEventCount: 5},
	}, sum)
	js, err := json.Marshal(sum)
	require.NoError(t, err)
	assert.NotContains(t, string(js), `"failed"`)
	assert.Contains(t, string(js), `"retried":3`)
	assert.Contains(t, string(js), `"dead_lettered":2`)

	var b bytes.Buffer
	sum.writeTable(&b)
	got := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, got, 4, b.String())
	assert.Contains(t, got[0], "RETRIED")
	assert.Contains(t, got[0], "DEAD-LETTERED")
	assert.NotContains(t, got[0], " FAILED ")
	assert.Equal(t, []string{"p", "3", "8", "2", "1", "2", "3", "1", "5", "0", "0", "0"}, strings.Fields(got[1]))
	// The event source mapping's metric names, as the dashboard shows them.
	assert.Equal(t, "event source mapping (as its metrics): PolledEventCount 8, InvokedEventCount 8, FailedInvokeEventCount 3 (retried), DroppedEventCount 0, DeletedEventCount 5", got[2])
	assert.Equal(t, "dead-lettered by reason: budget_exhausted 1, tool_unknown 1", got[3])
}

// The summary reads batch's metric names.
func TestEMFLineNamesBatchMetrics(t *testing.T) {
	t.Parallel()
	typ := reflect.TypeOf(emfLine{})
	var tags []string
	for i := 0; i < typ.NumField(); i++ {
		tags = append(tags, typ.Field(i).Tag.Get("json"))
	}
	for _, name := range []string{batch.MetricProcessed, batch.MetricRetried, batch.MetricDeadLettered, batch.MetricDLQSendFailures, batch.MetricDuplicatesSkipped, batch.MetricRequeued} {
		assert.Contains(t, tags, name)
	}
}

// Stopping a worker (Ctrl-C, or kill %1 as RUNBOOK.md does) spends no
// message's receive: the worker finishes its long poll instead of
// abandoning it. An abandoned poll stays open on fauxqs for its wait and
// takes the next message sent (given back at once by scripts/fauxqs.mjs, its
// receive count up by one): the next worker then saw that task first as
// attempt 2, and the runbook's four receives were three (issue 30).
func TestWorkStopSpendsNoReceive(t *testing.T) {
	cfg, _, q, table := onEmulators(t, "agent-tasks")
	client := sqs.NewFromConfig(cfg)
	prefix := localtest.Unique("stop")
	_, err := workload.Send(context.Background(), client, q.HotURL, false, []workload.Task{workload.Make(prefix, 0, workload.OK, 0)}, 1)
	require.NoError(t, err)

	ctx, interrupt := context.WithCancel(context.Background())
	defer interrupt()
	var out, logs bytes.Buffer
	f := &workFlags{pipeline: "agent-tasks", pollers: 1, wait: 3 * time.Second, table: table, logLevel: "info"}
	done := make(chan error, 1)
	go func() {
		done <- runWork(ctx, &globalFlags{configPath: filepath.Join("..", "..", pipeline.DefaultFile)}, f, &out, &logs)
	}()
	// The first task processed: the worker polls again, a long poll of 3 s.
	require.Eventually(t, func() bool { return depthOf(t, client, q.HotURL) == 0 }, time.Minute, 100*time.Millisecond)
	time.Sleep(300 * time.Millisecond) // let the poller start its next receive (no assertion on time)

	interrupt()
	_, err = workload.Send(context.Background(), client, q.HotURL, false, []workload.Task{workload.Make(prefix, 1, workload.OK, 0)}, 1)
	require.NoError(t, err)
	require.NoError(t, <-done)

	// The second task was either handled by the stopping worker or is on
	// the queue received by no one.
	if depthOf(t, client, q.HotURL) == 0 {
		var got workSummary
		require.NoError(t, json.Unmarshal(out.Bytes(), &got), out.String())
		assert.Equal(t, int64(2), got.Processed, "the stopping worker handled what its last receive brought")
		return
	}
	var msgs []string
	require.Eventually(t, func() bool {
		r, err := client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &q.HotURL, WaitTimeSeconds: 1,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameApproximateReceiveCount}})
		require.NoError(t, err)
		for _, m := range r.Messages {
			msgs = append(msgs, m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
		}
		return len(msgs) > 0
	}, 30*time.Second, 10*time.Millisecond)
	assert.Equal(t, []string{"1"}, msgs, "this receive is the task's first: no abandoned poll took one (worker log: %s)", logs.String())
}
