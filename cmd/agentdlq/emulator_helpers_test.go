package main

import (
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/internal/localtest"
	"github.com/agentdlq/agentdlq/pipeline"
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
