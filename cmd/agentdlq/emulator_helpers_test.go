package main

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/local/esm"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/testkit/localtest"
)

// onEmulators gives a CLI test the repository's pipeline of that name with a
// fresh pair of local queues and a fresh ledger table, and points the CLI at
// the queues (the AGENTDLQ_* overrides topology.OverrideFromEnv reads). It skips
// without the emulators (fails under AGENTDLQ_REQUIRE_EMULATORS=1).
func onEmulators(t *testing.T, name string) (aws.Config, *pipeline.Pipeline, pipeline.Queues, string) {
	t.Helper()
	cfg := localtest.AWS(t)
	f, err := pipeline.Load(filepath.Join("..", "..", pipeline.DefaultFile))
	require.NoError(t, err)
	p, err := f.Get(name)
	require.NoError(t, err)
	q := localtest.Queues(t, cfg, p)
	table := localtest.Table(t, cfg)
	t.Setenv("AGENTDLQ_HOT_QUEUE_URL", q.HotURL)
	t.Setenv("AGENTDLQ_HOT_QUEUE_ARN", q.HotARN)
	t.Setenv("AGENTDLQ_DLQ_URL", q.DLQURL)
	t.Setenv("AGENTDLQ_DLQ_ARN", q.DLQARN)
	return cfg, p, q, table
}

// workUntilIdle runs the local worker (agentdlq work) of the repository's
// pipeline agent-tasks on ledger table until its hot queue is idle.
func workUntilIdle(t *testing.T, table string) {
	t.Helper()
	var out, logs bytes.Buffer
	f := &workFlags{pipeline: "agent-tasks", untilIdle: true, idleTimeout: 10 * time.Second, pollers: 1, table: table, logLevel: "warn"}
	require.NoError(t, runWork(context.Background(), &globalFlags{configPath: filepath.Join("..", "..", pipeline.DefaultFile)}, f, &out, &logs))
}

// depthOf is the number of messages in the queue at url, visible and in
// flight (esm.Depth).
func depthOf(t *testing.T, client esm.AttributesAPI, url string) int {
	t.Helper()
	n, err := esm.Depth(context.Background(), client, url)
	require.NoError(t, err)
	return n
}
