package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/triage"
)

func TestTriageCLIBadInput(t *testing.T) {
	for name, args := range map[string][]string{
		"no pipeline":              {"triage"},
		"unknown pipeline":         {"triage", "--pipeline", "nope"},
		"json and markdown":        {"triage", "--pipeline", "agent-tasks", "--json", "--markdown"},
		"bad destination":          {"triage", "--pipeline", "agent-tasks", "--export-evals", "ftp://x/y"},
		"s3 without bucket":        {"triage", "--pipeline", "agent-tasks", "--export-evals", "s3://"},
		"negative bound":           {"triage", "--pipeline", "agent-tasks", "--max-messages", "-1"},
		"visibility out of range":  {"triage", "--pipeline", "agent-tasks", "--visibility", "500ms"},
		"flag that does not parse": {"triage", "--pipeline", "agent-tasks", "--receivers", "many"},
	} {
		t.Run(name, func(t *testing.T) {
			_, code := runCLI(t, args...)
			assert.Equal(t, 2, code)
		})
	}
}

// TestTriageCLIEmulator runs `agentdlq triage` on a seeded local DLQ: JSON
// out, an export to a folder, a destination that refuses the write (exit 1,
// the report still printed), a missing DLQ (exit 2), and the DLQ unchanged.
func TestTriageCLIEmulator(t *testing.T) {
	cfg, _, q, table := onEmulators(t, "agent-tasks")
	client := sqs.NewFromConfig(cfg)
	ctx := t.Context()
	for i := range 4 {
		attrs, err := deadletter.EncodeDeadLetter(deadletter.Meta{Reason: deadletter.ReasonToolUnknown, Tool: "web.crawl", ToolVersion: "1", SchemaVersion: 1,
			Error: "tool web.crawl is not in the catalog"}, nil)
		require.NoError(t, err)
		in := &sqs.SendMessageInput{QueueUrl: aws.String(q.DLQURL), MessageAttributes: map[string]sqstypes.MessageAttributeValue{},
			MessageBody: aws.String(`{"task_id":"t","run_id":"r","tenant":"acme","idempotency_key":"k` + string(rune('0'+i)) + `","tool":"web.crawl","tool_version":"1","trace_id":"x","created_at":"2026-11-29T00:00:00Z","schema_version":1,"args":{"n":` + string(rune('0'+i%2)) + `}}`)}
		for k, a := range attrs {
			in.MessageAttributes[k] = sqstypes.MessageAttributeValue{DataType: aws.String(a.DataType), StringValue: aws.String(a.StringValue)}
		}
		_, err = client.SendMessage(ctx, in)
		require.NoError(t, err)
	}
	_, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.DLQURL), MessageBody: aws.String("not json")})
	require.NoError(t, err)

	out, reports := t.TempDir(), t.TempDir()
	stdout, code := runCLI(t, "triage", "--pipeline", "agent-tasks", "--json", "--ledger-table", table, "--export-evals", out, "--reports", reports, "--no-progress")
	require.Equal(t, 0, code, stdout)
	var r triage.Report
	require.NoError(t, json.Unmarshal([]byte(stdout), &r))
	assert.Equal(t, 5, r.Totals.Messages)
	assert.False(t, r.Partial, r.PartialReasons)
	require.NotNil(t, r.Export)
	assert.Equal(t, 2, r.Export.Exported, "two distinct cases of tool_unknown")
	files, err := filepath.Glob(filepath.Join(out, "agent-tasks", "*", "evals-*.jsonl"))
	require.NoError(t, err)
	assert.Len(t, files, 1)
	kept, err := filepath.Glob(filepath.Join(reports, "agent-tasks", "reports", "*"))
	require.NoError(t, err)
	assert.Len(t, kept, 3, "one report per run: JSON, Markdown, HTML")

	// A destination that refuses the write: the report is printed, marked partial; exit 1.
	file := filepath.Join(t.TempDir(), "a-file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	stdout, code = runCLI(t, "triage", "--pipeline", "agent-tasks", "--markdown", "--ledger-table", table, "--export-evals", file, "--reports", "", "--no-progress")
	assert.Equal(t, 1, code)
	assert.Contains(t, stdout, "**partial**: eval export failed")
	assert.Contains(t, stdout, "| **tool_unknown** | 4 |")

	// Nothing was taken: the queue still holds its five messages.
	got, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(q.DLQURL), AttributeNames: []sqstypes.QueueAttributeName{"All"}})
	require.NoError(t, err)
	assert.Equal(t, "5", got.Attributes["ApproximateNumberOfMessages"])
	assert.Equal(t, "0", got.Attributes["ApproximateNumberOfMessagesNotVisible"])

	// A DLQ that does not exist.
	t.Setenv("AGENTDLQ_DLQ_URL", q.DLQURL+"-missing")
	t.Setenv("AGENTDLQ_DLQ_ARN", "")
	_, code = runCLI(t, "triage", "--pipeline", "agent-tasks", "--no-progress")
	assert.Equal(t, 2, code)
}
