package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/internal/loadbench"
	"github.com/agentdlq/agentdlq/internal/localtest"
)

// TestLoadBenchUnderChaos is make test's one toxic scenario: a few hundred
// tasks of the load bench's mix through a proxy that resets 5% of the SQS
// connections at their first response (a ReceiveMessage whose messages are
// then hidden for the visibility timeout, a DeleteMessage or DLQ send the
// worker cannot tell happened). Nothing may be lost, no side effect may
// happen twice; the extra receives are what it costs. make bench-chaos runs
// every toxic over 20,000 tasks.
func TestLoadBenchUnderChaos(t *testing.T) {
	localtest.AWS(t) // the running emulators, or skip
	out, err := invokeCLI(t, "--config", "../../pipelines.json", "local", "bench", "--tasks", "240", "--raw-messages", "50",
		"--chaos", "reset", "--chaos-path", "sqs", "--json")
	require.NoError(t, err, out)
	var res loadbench.Result
	line := out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:]
	require.NoError(t, json.Unmarshal([]byte(line), &res), out)
	assert.Equal(t, "reset on sqs", res.Chaos)
	assert.Zero(t, res.Lost, "lost")
	assert.Zero(t, res.DuplicateEffects, "duplicate side effects")
	assert.True(t, res.AddsUp(), "every message accounted for: %s", res.Line())
	assert.GreaterOrEqual(t, res.Receives, res.Tasks, "every message was received")
	t.Logf("%s; %d extra receives, %.0f messages/s active", res.Line(), res.ExtraReceives, res.ActiveMsgsPerSec)
}
