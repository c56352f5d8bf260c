package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/redrive"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
	"github.com/agentdlq/agentdlq/testkit/localtest"
	"github.com/agentdlq/agentdlq/triage/dlq"
	"github.com/agentdlq/agentdlq/triage/report"
)

func TestFilterArgs(t *testing.T) {
	f, err := (&filterFlags{tool: "web.search", since: "2h", contains: "rate limit"}).parse(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
	require.NoError(t, err)
	assert.Equal(t, " --tool web.search --since 2026-12-02T08:00:00Z --contains 'rate limit'", filterArgs(f))
	assert.Equal(t, "", filterArgs(dlq.Filter{}))
	_, err = (&filterFlags{since: "soon"}).parse(time.Now())
	assert.EqualError(t, err, `--since: bad filter: "soon" is neither an RFC 3339 time (2026-12-02T08:00:00Z) nor a duration ago (2h, 90m, 7d)`)
	_, err = (&filterFlags{since: "1h", until: "soon"}).parse(time.Now())
	assert.EqualError(t, err, `--until: bad filter: "soon" is neither an RFC 3339 time (2026-12-02T08:00:00Z) nor a duration ago (2h, 90m, 7d)`, "a good --since, a bad --until: the flag at fault")
	_, err = (&filterFlags{since: "1h", until: "2h"}).parse(time.Now())
	assert.ErrorContains(t, err, "--since/--until: bad filter: since ")
}

// TestFiltersOnEmulators walks the filters on the emulators: triage, plan
// and select choose by tool, tenant, time and error text alike; a bad or
// empty filter is refused and audited, and moves nothing; a select by
// filter is audited with the filter and moves only what it chose.
func TestFiltersOnEmulators(t *testing.T) {
	cfg, _, q, table := onEmulators(t, "agent-tasks")
	client := sqs.NewFromConfig(cfg)
	ctx := context.Background()
	now := time.Now().UTC()
	seed := func(key, tool, tenant, errText string, at time.Time) {
		t.Helper()
		body := `{"task_id":"t-` + key + `","run_id":"r","tenant":"` + tenant + `","idempotency_key":"` + key + `","tool":"` + tool + `","tool_version":"1","trace_id":"x","created_at":"2026-11-29T10:00:00Z","schema_version":1,"args":{}}`
		attrs, err := deadletter.EncodeDeadLetter(deadletter.Meta{Reason: deadletter.ReasonBudgetExhausted, IdempotencyKey: key, MessageID: "orig-" + key,
			Tool: tool, ToolVersion: "1", Tenant: tenant, Error: errText, DeadLetteredAt: at}, nil)
		require.NoError(t, err)
		_, err = client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.DLQURL), MessageBody: aws.String(body), MessageAttributes: localtest.SQSAttributes(attrs)})
		require.NoError(t, err)
	}
	seed("ws-old", "web.search", "acme", "search API: 503 Service Unavailable", now.Add(-5*time.Hour))
	seed("ws-1", "web.search", "acme", "search API: 429 rate limit", now.Add(-time.Minute))
	seed("ws-2", "web.search", "globex", "search API: 429 rate limit", now.Add(-time.Minute))
	seed("sql-1", "sql.query", "acme", "sql: connection refused", now.Add(-time.Minute))
	require.Equal(t, 4, depthOf(t, client, q.DLQURL))
	auditFile := filepath.Join(t.TempDir(), "audit.jsonl")
	common := []string{"--pipeline", "agent-tasks", "--audit", auditFile, "--ledger-table", table}

	// triage: the report of the chosen letters only, said so.
	out, code := runCLI(t, "triage", "--pipeline", "agent-tasks", "--ledger-table", table, "--reports", "", "--no-progress", "--tool", "web.search", "--since", "2h", "-o", "json")
	require.Equal(t, 0, code, out)
	var rep report.Report
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.NotNil(t, rep.Filter)
	assert.Equal(t, 2, rep.Totals.Messages)
	assert.Equal(t, 4, rep.Filter.Scanned)
	out, code = runCLI(t, "triage", "--pipeline", "agent-tasks", "--ledger-table", table, "--reports", "", "--no-progress", "--contains", "RATE LIMIT", "--tenant", "globex")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "FILTERED: tenant=globex contains=\"RATE LIMIT\": 1 of 4 dead letters seen")
	// A filtered report is neither kept nor exported from.
	_, code = runCLI(t, "triage", "--pipeline", "agent-tasks", "--no-progress", "--tool", "web.search", "--export-evals", t.TempDir())
	assert.Equal(t, exitRefused, code)
	_, code = runCLI(t, "triage", "--pipeline", "agent-tasks", "--no-progress", "--since", "yesterday")
	assert.Equal(t, exitRefused, code)

	// plan: the groups of the chosen letters, and commands that keep the filter.
	out, code = runCLI(t, append([]string{"redrive", "plan", "--tool", "web.search", "--contains", "429", "-o", "json"}, common...)...)
	require.Equal(t, 0, code, out)
	var pl struct {
		redrivetype.Plan
		Groups []struct {
			Count   int    `json:"count"`
			Command string `json:"command"`
		} `json:"groups"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &pl), out)
	assert.Equal(t, 2, pl.Total)
	require.Len(t, pl.Groups, 1)
	assert.Contains(t, pl.Groups[0].Command, "agentdlq redrive select --pipeline agent-tasks --reason budget_exhausted --fingerprint ")
	assert.Contains(t, pl.Groups[0].Command, " --tool web.search --contains 429 --owner platform-oncall")
	assert.Nil(t, pl.Start)

	// Refusals change nothing: a stranger, a bad window, a filter that chooses none.
	owner := []string{"--owner", "platform-oncall", "--why", "search quota raised (INC-9)"}
	_, code = runCLI(t, append([]string{"redrive", "select", "--reason", "budget_exhausted", "--tool", "web.search", "--owner", "mallory", "--why", "x"}, common...)...)
	assert.Equal(t, exitRefused, code)
	_, code = runCLI(t, append(append([]string{"redrive", "select", "--reason", "budget_exhausted", "--since", "1h", "--until", "2h"}, owner...), common...)...)
	assert.Equal(t, exitRefused, code)
	msg := cliErr(t, append(append([]string{"redrive", "select", "--reason", "budget_exhausted", "--tool", "email.send"}, owner...), common...)...)
	assert.Contains(t, msg, "refused (nothing_selected): --tool/--tenant/--since/--until/--contains tool=email.send")
	assert.Contains(t, msg, "next: agentdlq redrive plan --pipeline agent-tasks")
	assert.Equal(t, 4, depthOf(t, client, q.DLQURL), "nothing moved")
	assert.Equal(t, 0, depthOf(t, client, q.HotURL), "nothing moved")

	// A dry run, then the move: only the letters chosen.
	out, code = runCLI(t, append(append([]string{"redrive", "select", "--reason", "budget_exhausted", "--tool", "web.search", "--since", "2h", "--dry-run"}, owner...), common...)...)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "would move 2 (a dry run: nothing moved); 2 seen and left in the DLQ (not chosen); the DLQ held 4 when the pass began")
	assert.Equal(t, 4, depthOf(t, client, q.DLQURL), "a dry run moves nothing")
	out, code = runCLI(t, append(append([]string{"redrive", "select", "--reason", "budget_exhausted", "--tool", "web.search", "--since", "2h", "-o", "json"}, owner...), common...)...)
	require.Equal(t, 0, code, out)
	var res redrive.SelectResult
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	assert.Equal(t, 2, res.Moved)
	var keys []string
	for _, l := range res.Letters {
		keys = append(keys, l.IdempotencyKey)
	}
	assert.ElementsMatch(t, []string{"ws-1", "ws-2"}, keys)
	assert.Equal(t, 2, depthOf(t, client, q.DLQURL))
	assert.Equal(t, 2, depthOf(t, client, q.HotURL))

	var got []string
	for _, r := range auditLines(t, auditFile) {
		line := string(r.Action) + ":" + string(r.Outcome)
		if f := r.Detail["filter"]; f != "" {
			// The pipeline hashes tenants: a filter names none in the clear.
			assert.NotContains(t, f, "globex")
			line += ":" + strings.Fields(f)[0]
		}
		got = append(got, line)
	}
	assert.Equal(t, []string{"plan:shown:tool=web.search", "select:refused:tool=web.search", "select:refused", "select:begun:tool=email.send", "select:refused:tool=email.send",
		"select:dry_run:tool=web.search", "select:begun:tool=web.search", "select:ok:tool=web.search"}, got)
}
