package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/local/esm"
	"github.com/agentdlq/agentdlq/redrive"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
	"github.com/agentdlq/agentdlq/testkit/localtest"
)

// The output conventions end to end on a seeded local DLQ: Markdown plan,
// JSON refusal with its code, and a failed canary as one JSON document with
// exit 3; nothing is lost on the way.
func TestOutputConventionsOnEmulators(t *testing.T) {
	cfg, _, q, table := onEmulators(t, "agent-tasks")
	client := sqs.NewFromConfig(cfg)
	ctx := context.Background()
	seed := func(key string, reason deadletter.Reason) {
		body := `{"task_id":"t","run_id":"r","tenant":"acme","idempotency_key":"` + key + `","tool":"web.search","tool_version":"1","trace_id":"x","created_at":"2026-11-29T10:00:00Z","schema_version":1,"args":{"q":"a<b & c>d"}}`
		attrs, err := deadletter.EncodeDeadLetter(deadletter.Meta{Reason: reason, IdempotencyKey: key, MessageID: "orig-" + key, Tool: "web.search"}, nil)
		require.NoError(t, err)
		_, err = client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.DLQURL), MessageBody: aws.String(body), MessageAttributes: localtest.SQSAttributes(attrs)})
		require.NoError(t, err)
	}
	for i := range 3 {
		seed("oc-"+strconv.Itoa(i), deadletter.ReasonBudgetExhausted)
	}
	seed("oc-pl", deadletter.ReasonPolicyLimit)
	common := []string{"--pipeline", "agent-tasks", "--audit", filepath.Join(t.TempDir(), "audit.jsonl"), "--ledger-table", table}

	stdout, stderr, code := runArgs(t, append([]string{"redrive", "plan", "-o", "markdown"}, common...)...)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "## Redrive plan: agent-tasks")
	assert.Contains(t, stdout, "| reason | fingerprint | count | redrive | why |")
	assert.Regexp(t, "\\| budget_exhausted \\| `[0-9a-f]+` \\| 3 \\| yes, canary first \\|", stdout)
	assert.Empty(t, stderr, "plan logs at info only with --verbose")

	_, stderr, code = runArgs(t, append([]string{"--verbose", "--log-format", "json", "redrive", "plan"}, common...)...)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, `"level":"INFO"`, "--verbose logs the plan's progress")

	stdout, _, code = runArgs(t, append([]string{"redrive", "select", "--reason", "budget_exhausted", "--owner", "mallory", "--why", "x", "-o", "json"}, common...)...)
	assert.Equal(t, 2, code)
	var je struct {
		Error    string `json:"error"`
		Code     string `json:"code"`
		ExitCode int    `json:"exit_code"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &je), stdout)
	assert.Equal(t, string(redrivetype.CodeOwner), je.Code)
	assert.Equal(t, 2, je.ExitCode)

	// No worker consumes the hot queue: the canary has no outcome, exit 3,
	// and stdout is one JSON document with the error and what was done.
	stdout, _, code = runArgs(t, append([]string{"redrive", "select", "--reason", "budget_exhausted", "--owner", "platform-oncall", "--why", "503s over",
		"--canary", "1", "--canary-timeout", "2s", "--json"}, common...)...)
	assert.Equal(t, 3, code, stdout)
	var doc struct {
		Code   string                `json:"code"`
		Result *redrive.SelectResult `json:"result"`
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	require.NoError(t, dec.Decode(&doc), stdout)
	assert.False(t, dec.More(), "one JSON document: %s", stdout)
	assert.Equal(t, "canary_failed", doc.Code)
	require.NotNil(t, doc.Result)
	require.NotNil(t, doc.Result.Canary)
	assert.Equal(t, 1, doc.Result.Canary.Moved)

	hot, err := esm.Depth(ctx, client, q.HotURL)
	require.NoError(t, err)
	dlq, err := esm.Depth(ctx, client, q.DLQURL)
	require.NoError(t, err)
	assert.Equal(t, 4, hot+dlq, "every message is in the hot queue or the DLQ")
	assert.Equal(t, 1, hot, "the canary alone moved")
}
