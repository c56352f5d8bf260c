package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/internal/esm"
	"github.com/agentdlq/agentdlq/internal/localtest"
	"github.com/agentdlq/agentdlq/internal/topology"
	"github.com/agentdlq/agentdlq/internal/workload"
	"github.com/agentdlq/agentdlq/pipeline"
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
	var got struct {
		Pipeline string `json:"pipeline"`
		esm.Stats
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &got), out.String())
	assert.Equal(t, "agent-tasks", got.Pipeline)
	assert.Equal(t, int64(2), got.Received)
	assert.Equal(t, int64(2), got.Deleted, "processed, and dead-lettered then acknowledged")
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

// The table shows every count the JSON has (receive errors were missing).
func TestWorkTableHasEveryCount(t *testing.T) {
	stats := esm.Stats{Batches: 1, Received: 2, Deleted: 3, Failed: 4, BatchErrors: 5, DeleteErrors: 6, ReceiveErrors: 7}
	var b bytes.Buffer
	writeWorkTable(&b, "p", stats)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 2, b.String())
	js, err := json.Marshal(stats)
	require.NoError(t, err)
	var fields map[string]any
	require.NoError(t, json.Unmarshal(js, &fields))
	assert.Len(t, strings.Fields(lines[1]), len(fields)+1, "the pipeline and one column per JSON field: %q", b.String())
	assert.Equal(t, []string{"p", "1", "2", "3", "4", "5", "6", "7"}, strings.Fields(lines[1]))
	assert.Contains(t, lines[0], "RECEIVE ERRORS")
}
