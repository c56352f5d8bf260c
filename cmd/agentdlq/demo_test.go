package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/testkit/localtest"
)

// The demo end to end on the test emulators: it must exit cleanly, export
// the recurring poison, and close with a line whose numbers add up with
// nothing lost or in flight.
func TestDemoAccountsForEveryMessage(t *testing.T) {
	localtest.AWS(t) // skip or fail without emulators; the demo reads the same environment
	var out bytes.Buffer
	// The demo's out/ is ./out of the folder the runbook walk then runs in
	// (AGENTDLQ_CONFIG: the CLI's outputs go to ./out there).
	work := t.TempDir()
	dir := filepath.Join(work, "out")
	g := &globalFlags{configPath: filepath.Join("..", "..", "pipelines.json"), outDir: dir}
	f := &demoFlags{pipeline: "agent-tasks", out: dir}
	outTree(t, dir) // an earlier run's audit, evals, worker log and reports
	require.NoError(t, runDemo(context.Background(), g, f, &out, io.Discard), out.String())

	re := regexp.MustCompile(`sent (\d+) = processed (\d+) \(\d+ sharing an idempotency key\) \+ dead-lettered (\d+) \((.*)\) \+ in flight (\d+) \+ lost (\d+): adds up`)
	m := re.FindStringSubmatch(out.String())
	require.NotNil(t, m, out.String())
	n := func(i int) int { v, _ := strconv.Atoi(m[i]); return v }
	assert.Equal(t, n(1), n(2)+n(3)+n(5)+n(6))
	assert.Equal(t, 27, n(1))
	assert.Equal(t, 12, n(2), "9 processed at once, 3 after the outage ended and they were redriven")
	assert.Equal(t, 15, n(3))
	assert.NotContains(t, m[4], "dependency_open", "the outage's dead letters were redriven")
	assert.Zero(t, n(5))
	assert.Zero(t, n(6))
	assert.Contains(t, out.String(), "eval export to "+filepath.Join(dir, "evals")+": 4 new records", "the export, said once, as agentdlq triage says it")
	assert.Equal(t, 1, strings.Count(out.String(), "eval export"), out.String())
	assert.Contains(t, out.String(), "Redrive plan for agent-tasks")
	assert.Contains(t, out.String(), "agentdlq local dependency up search-api")
	assert.Contains(t, out.String(), "canary: 1 moved, 1 processed, 0 dead-lettered again")
	assert.Contains(t, out.String(), "redriven 3 dead letters of dependency_open")
	// The triage's report states the SLO period's budget spent, from the
	// worker's EMF lines in worker.log (locally there is no CloudWatch).
	slo := regexp.MustCompile(`SLO 99.9 % of tasks not dead-lettered: (\d+) dead letters in the last 1h0m of (\d+) tasks \([0-9.]+ % bad\): [0-9.]+ % of the period's error budget spent(?:, [0-9.]+× the rate the target allows)? \(processed: the EMF lines of (.*) \(a local worker's Processed\)\)`).FindStringSubmatch(out.String())
	require.NotNil(t, slo, out.String())
	sharing := regexp.MustCompile(`processed \d+ \((\d+) sharing an idempotency key\)`).FindStringSubmatch(out.String())
	require.NotNil(t, sharing)
	dup, _ := strconv.Atoi(sharing[1])
	dead, _ := strconv.Atoi(slo[1])
	tasks, _ := strconv.Atoi(slo[2])
	assert.Equal(t, n(3)+3, dead, "at the triage: the dead letters the demo ends with, and the 3 it redrives later")
	// workload.Demo sends one duplicate of a valid task: of the messages
	// sharing its key one is Processed, the others DuplicatesSkipped.
	assert.Equal(t, dead+n(2)-3-(dup-1), tasks, "and the tasks Processed before the redrive")
	assert.Equal(t, filepath.Join(dir, "worker.log"), slo[3])
	entries, err := os.ReadDir(filepath.Join(f.out, "evals", "agent-tasks"))
	require.NoError(t, err)
	assert.NotEmpty(t, entries)
	reports, err := filepath.Glob(filepath.Join(f.out, "agent-tasks", "reports", "*.html"))
	require.NoError(t, err)
	assert.Len(t, reports, 1, "the report is kept where agentdlq ui reads it, and only this run's")
	assert.Contains(t, out.String(), "start over: an earlier run's agent-tasks, audit, evals, worker.log moved from "+dir+" to "+filepath.Join(dir, "previous"))
	audit, err := os.ReadFile(g.auditPath("agent-tasks"))
	require.NoError(t, err)
	assert.NotContains(t, string(audit), "x\n", "the earlier run's audit is not in this run's")
	assert.FileExists(t, filepath.Join(dir, "mine.txt"), "what is not a run's output stays")
	assert.Contains(t, out.String(), "agentdlq ui ", "the demo ends with the console among the next commands")
	assert.True(t, strings.HasSuffix(out.String(), "then make demo (which sets them aside too).\n"), "and with how to start over")

	// RUNBOOK.md walks on what the demo left (walk_test.go).
	walkRunbook(t, work)
}
