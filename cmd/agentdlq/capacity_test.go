package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/capacity"
)

func TestCapacityCommand(t *testing.T) {
	out, errOut, code := runArgs(t, "capacity", "--pipeline", "agent-steps", "--rate", "400", "--tool-latency", "150,900ms", "-o", "json")
	require.Equal(t, 0, code, errOut)
	var plan capacity.Plan
	require.NoError(t, json.Unmarshal([]byte(out), &plan))
	assert.Equal(t, "agent-steps", plan.Pipeline)
	assert.True(t, plan.FIFO)
	assert.Equal(t, 150.0, plan.ToolP50Ms, "a bare number is milliseconds")
	assert.Equal(t, 900.0, plan.ToolP99Ms)
	assert.Equal(t, "FIFO throughput (not high-throughput)", plan.FirstQuota)
	assert.NotEmpty(t, plan.Quotas)

	out, errOut, code = runArgs(t, "capacity", "--pipeline", "agent-tasks", "--rate", "50")
	require.Equal(t, 0, code, errOut)
	for _, want := range []string{"maximum concurrency", "reserved concurrency", "billed GB-seconds", "cost per million tasks", "first quota:", "https://docs.aws.amazon.com/"} {
		assert.Contains(t, out, want)
	}
	// At 200 tasks/s agent-tasks's reserved concurrency of 10 is too low,
	// and the command says so.
	out, errOut, code = runArgs(t, "capacity", "--pipeline", "agent-tasks", "--rate", "200")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "the pipeline's settings at this rate")
	assert.Regexp(t, `FAIL reserved_concurrency +10 \(recommended \d+\)`, out)
	assert.Contains(t, out, "the rate needs at p99")

	for name, args := range map[string][]string{
		"no rate":            {"capacity", "--pipeline", "agent-tasks"},
		"no pipeline":        {"capacity", "--rate", "5"},
		"unknown pipeline":   {"capacity", "--pipeline", "nope", "--rate", "5"},
		"bad latency":        {"capacity", "--pipeline", "agent-tasks", "--rate", "5", "--tool-latency", "fast"},
		"p99 below p50":      {"capacity", "--pipeline", "agent-tasks", "--rate", "5", "--tool-latency", "2s,1s"},
		"payload over limit": {"capacity", "--pipeline", "agent-tasks", "--rate", "5", "--payload-bytes", "9000000"},
	} {
		_, errOut, code := runArgs(t, args...)
		assert.Equal(t, 2, code, "%s: %s", name, errOut)
		assert.True(t, strings.HasPrefix(errOut, "agentdlq: "), "%s: %s", name, errOut)
	}
}

// local bench refuses a --mix it does not know, and a mix with a workload
// file, before it starts anything.
func TestLoadBenchMixRefused(t *testing.T) {
	_, errOut, code := runArgs(t, "local", "bench", "--tasks", "10", "--mix", "nope")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, `--mix "nope": one of demo, failures-40, mostly-ok, outage, or cost`)
	_, errOut, code = runArgs(t, "local", "bench", "--mix", "outage", "--workload", "tasks.jsonl")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--mix and --workload: one or the other")
}

// --measured takes the requests per task of a bench run (its JSON lines):
// the mostly-ok mix's line, and the plan scales those counts.
func TestCapacityMeasured(t *testing.T) {
	dir := t.TempDir()
	lines := `{"mix":"failures-40","requests":{"mix":"failures-40","per_task":{"ledger_write_units":9,"invocations":0.2,"deliveries":1.5,"ledger_calls":9}}}
{"mix":"mostly-ok","requests":{"mix":"mostly-ok","per_task":{"sqs_requests":0.25,"ledger_write_units":3,"ledger_read_units":0.5,"invocations":0.1,"deliveries":1,"ledger_calls":3.5,"worker_sqs_requests":0.05}}}
{"mix":"outage","requests":{"mix":"outage","per_task":{"ledger_write_units":5,"invocations":0.25,"deliveries":2.5,"ledger_calls":5}}}
`
	file := filepath.Join(dir, "cost.jsonl")
	require.NoError(t, os.WriteFile(file, []byte(lines), 0o644))
	out, errOut, code := runArgs(t, "capacity", "--pipeline", "agent-tasks", "--rate", "100", "--measured", file, "-o", "json")
	require.Equal(t, 0, code, errOut)
	var plan capacity.Plan
	require.NoError(t, json.Unmarshal([]byte(out), &plan))
	assert.InDelta(t, 300.0, plan.Predict.LedgerWriteUnitsPerS, 1e-9, "100 tasks/s at the mostly-ok line's 3 write units a task")
	assert.InDelta(t, 50.0, plan.Predict.LedgerReadUnitsPerS, 1e-9)

	bad := filepath.Join(dir, "bad.jsonl")
	require.NoError(t, os.WriteFile(bad, []byte(`{"tasks":3}`+"\n"), 0o644))
	_, errOut, code = runArgs(t, "capacity", "--pipeline", "agent-tasks", "--rate", "100", "--measured", bad)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "no line of agentdlq local bench -o json with requests")
}
