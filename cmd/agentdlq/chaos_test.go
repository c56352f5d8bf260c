package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/bench/loadbench"
	"github.com/agentdlq/agentdlq/testkit/localtest"
)

// The CLI's --chaos and --chaos-path reach the bench: with the proxy alone
// (none, on the DynamoDB path) every ledger call of the worker goes through
// it and nothing breaks. The toxic scenario of make test is
// bench/loadbench's TestRunUnderChaos; make bench-chaos runs every toxic
// over 20,000 tasks.
func TestLoadBenchChaosFlags(t *testing.T) {
	localtest.AWS(t) // the running emulators, or skip
	out, err := invokeCLI(t, "--config", "../../pipelines.json", "local", "bench", "--tasks", "60", "--raw-messages", "10",
		"--chaos", "none", "--chaos-path", "dynamodb", "--json")
	require.NoError(t, err, out)
	var res loadbench.Result
	line := out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:]
	require.NoError(t, json.Unmarshal([]byte(line), &res), out)
	assert.Equal(t, "none on dynamodb", res.Chaos)
	assert.GreaterOrEqual(t, res.ChaosRequests, int64(res.Processed), "the worker's ledger calls went through the proxy")
	assert.Zero(t, res.ChaosBroken, "no toxic, nothing broken")
	assert.Zero(t, res.Lost, "lost")
	assert.Zero(t, res.DuplicateEffects, "duplicate side effects")
	assert.True(t, res.AddsUp(), "every message accounted for: %s", res.Line())

	_, err = invokeCLI(t, "--config", "../../pipelines.json", "local", "bench", "--tasks", "1", "--chaos", "limit_data")
	assert.ErrorContains(t, err, `--chaos "limit_data": one of latency, none, reset, slicer, timeout, truncate`)
}
