package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/report"
	"github.com/agentdlq/agentdlq/triage/store"
)

// emfProcessed is a worker's main EMF document (functions/batch's form).
func emfProcessed(pipelineName string, at time.Time, processed int) string {
	return fmt.Sprintf(`{"_aws":{"Timestamp":%d,"CloudWatchMetrics":[{"Namespace":"AgentDLQ","Dimensions":[["Pipeline"]],"Metrics":[{"Name":"Processed","Unit":"Count"}]}]},"Pipeline":%q,"Processed":%d}`,
		at.UnixMilli(), pipelineName, processed)
}

// TestTriageProcessedSource: --processed-from's file; else CloudWatch
// against AWS (or a CloudWatch endpoint set); else, on local endpoints,
// none. (--processed, when given, is used before any source: run.)
func TestTriageProcessedSource(t *testing.T) {
	t.Parallel()
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	local := []string{"AWS_ENDPOINT_URL_SQS", "http://127.0.0.1:9324", "AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:8000"}
	tests := []struct {
		name, from string
		env        []string
		want       string // the source's type, "" for none
	}{
		{"AWS", "", nil, "processed.CloudWatch"},
		{"AWS, a file given", "w.log", nil, "processed.EMFFile"},
		{"local endpoints", "", local, ""},
		{"local endpoints, a file given", "w.log", local, "processed.EMFFile"},
		{"one endpoint for all", "", []string{"AWS_ENDPOINT_URL", "http://127.0.0.1:4566"}, ""},
		{"a CloudWatch endpoint set", "", append(slices.Clone(local), "AWS_ENDPOINT_URL_CLOUDWATCH", "http://127.0.0.1:4566"), "processed.CloudWatch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := &triageFlags{processed: -1, processedFrom: tt.from}
			src := f.processedSource(aws.Config{}, env(tt.env...), slog.New(slog.DiscardHandler))
			if tt.want == "" {
				assert.Nil(t, src)
				return
			}
			assert.Equal(t, tt.want, fmt.Sprintf("%T", src))
		})
	}
}

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
		"negative processed count": {"triage", "--pipeline", "agent-tasks", "--processed", "-2"},
		"processed-from missing":   {"triage", "--pipeline", "agent-tasks", "--processed-from", "/nonexistent/worker.log"},
		"processed-from a folder":  {"triage", "--pipeline", "agent-tasks", "--processed-from", os.TempDir()},
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
	var r report.Report
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

	// The SLO: the target, and with the period's processed count the budget spent.
	assert.Equal(t, 99.9, r.SLO.TargetPercent)
	assert.Nil(t, r.SLO.BudgetSpentPercent, "without --processed, triage does not know it")
	require.NotEmpty(t, r.Tenants)
	stdout, code = runCLI(t, "triage", "--pipeline", "agent-tasks", "--json", "--processed", "996", "--reports", "", "--no-progress")
	require.Equal(t, 0, code, stdout)
	var withCount report.Report
	require.NoError(t, json.Unmarshal([]byte(stdout), &withCount))
	require.NotNil(t, withCount.SLO.Processed)
	assert.Equal(t, 996, *withCount.SLO.Processed)
	require.NotNil(t, withCount.SLO.BudgetSpentPercent)
	dl := float64(withCount.SLO.DeadLettered)
	assert.InDelta(t, 100*(100*dl/(996+dl))/0.1, *withCount.SLO.BudgetSpentPercent, 0.1)

	// Locally there is no CloudWatch: the EMF lines a local worker wrote
	// (agentdlq work's stderr), the pipeline's Processed of the period
	// summed; another pipeline's, an old one and a malformed line skipped.
	now := time.Now()
	emf := filepath.Join(t.TempDir(), "worker.log")
	require.NoError(t, os.WriteFile(emf, []byte(strings.Join([]string{
		emfProcessed("agent-tasks", now.Add(-5*time.Minute), 990),
		`{"time":"x","level":"INFO","msg":"batch done"}`,
		emfProcessed("agent-tasks", now.Add(-time.Minute), 6),
		emfProcessed("agent-steps", now.Add(-time.Minute), 5000),
		emfProcessed("agent-tasks", now.Add(-3*time.Hour), 7000),
		"not json",
	}, "\n")+"\n"), 0o600))
	stdout, stderr, code := runArgs(t, "triage", "--pipeline", "agent-tasks", "--json", "--processed-from", emf, "--reports", "", "--no-progress")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "EMF lines skipped", "the malformed line is said, not fatal")
	var fromEMF report.Report
	require.NoError(t, json.Unmarshal([]byte(stdout), &fromEMF))
	require.NotNil(t, fromEMF.SLO.Processed)
	assert.Equal(t, 996, *fromEMF.SLO.Processed)
	require.NotNil(t, fromEMF.SLO.BudgetSpentPercent)
	assert.InDelta(t, *withCount.SLO.BudgetSpentPercent, *fromEMF.SLO.BudgetSpentPercent, 1e-9, "the same count, the same budget")
	assert.Contains(t, fromEMF.SLO.ProcessedSource, emf)
	// --processed wins over --processed-from.
	stdout, stderr, code = runArgs(t, "triage", "--pipeline", "agent-tasks", "--json", "--processed", "5", "--processed-from", emf, "--reports", "", "--no-progress")
	require.Equal(t, 0, code, stderr)
	var both report.Report
	require.NoError(t, json.Unmarshal([]byte(stdout), &both))
	require.NotNil(t, both.SLO.Processed)
	assert.Equal(t, 5, *both.SLO.Processed)
	assert.Empty(t, both.SLO.ProcessedSource)

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

// TestTriageCLIPartialScan: letters held in flight by another reader (here
// the test, with a long visibility timeout) make the scan partial, made so
// deterministically: `triage --keys` then prints no key and exits 1 with why
// and when to rerun; -o json is one document with the report, "complete":
// false, as its result; the report is kept, marked; nothing is taken.
func TestTriageCLIPartialScan(t *testing.T) {
	cfg, _, q, table := onEmulators(t, "agent-tasks")
	client := sqs.NewFromConfig(cfg)
	ctx := t.Context()
	for i := range 3 {
		attrs, err := deadletter.EncodeDeadLetter(deadletter.Meta{Reason: deadletter.ReasonEffectUnknown, Tool: "email.send", ToolVersion: "1.0.0", SchemaVersion: 1,
			IdempotencyKey: fmt.Sprintf("key-%d", i), Error: "timeout after the send started"}, nil)
		require.NoError(t, err)
		in := &sqs.SendMessageInput{QueueUrl: aws.String(q.DLQURL), MessageAttributes: map[string]sqstypes.MessageAttributeValue{},
			MessageBody: aws.String(fmt.Sprintf(`{"task_id":"t%d","run_id":"r","tenant":"acme","idempotency_key":"key-%d","tool":"email.send","tool_version":"1.0.0","trace_id":"x","created_at":"2026-11-29T00:00:00Z","schema_version":1,"args":{}}`, i, i))}
		for k, a := range attrs {
			in.MessageAttributes[k] = sqstypes.MessageAttributeValue{DataType: aws.String(a.DataType), StringValue: aws.String(a.StringValue)}
		}
		_, err = client.SendMessage(ctx, in)
		require.NoError(t, err)
	}
	// Another reader holds one letter for ten minutes: in flight, unseen by any scan.
	held, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.DLQURL), MaxNumberOfMessages: 1, VisibilityTimeout: 600})
	require.NoError(t, err)
	require.Len(t, held.Messages, 1)
	t.Cleanup(func() {
		_, _ = client.ChangeMessageVisibility(context.Background(), &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(q.DLQURL), ReceiptHandle: held.Messages[0].ReceiptHandle})
	})

	reports := t.TempDir()
	stdout, stderr, code := runArgs(t, "triage", "--pipeline", "agent-tasks", "--keys", "--ledger-table", table, "--reports", reports, "--no-progress")
	assert.Equal(t, exitFailed, code, stderr)
	assert.Empty(t, stdout, "no keys: a list of some of them would look whole")
	for _, want := range []string{
		"the scan did not see every dead letter",
		"saw 2 of about 3: 2 visible and 1 in flight at the start",
		"held by another reader until their visibility timeout lapses",
		"no keys printed",
		"rerun in about ", "agentdlq triage --pipeline agent-tasks --keys",
	} {
		assert.Contains(t, stderr, want)
	}

	stdout, _, code = runArgs(t, "triage", "--pipeline", "agent-tasks", "-o", "json", "--ledger-table", table, "--reports", reports, "--no-progress")
	assert.Equal(t, exitFailed, code)
	var doc struct {
		Error    string        `json:"error"`
		Code     string        `json:"code"`
		ExitCode int           `json:"exit_code"`
		Result   report.Report `json:"result"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc), "one JSON document: %s", stdout)
	assert.Equal(t, "scan_partial", doc.Code, "a partial scan is the same outcome whether triage or redrive scanned")
	assert.Equal(t, exitFailed, doc.ExitCode)
	assert.Contains(t, doc.Error, "the report's counts are a lower bound")
	assert.False(t, doc.Result.Complete)
	assert.Equal(t, triage.CauseInFlight, doc.Result.Scan.PartialCause)
	assert.Positive(t, doc.Result.Scan.RetryAfterSeconds)
	assert.Equal(t, 2, doc.Result.Totals.Messages)

	// The table names it at the top; the kept reports say so too.
	stdout, _, code = runArgs(t, "triage", "--pipeline", "agent-tasks", "--reports", reports, "--no-progress")
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, stdout, "!!! PARTIAL SCAN: saw 2 of about 3 dead letters")
	hist, err := triage.History(ctx, store.Folder{Root: reports}, "agent-tasks", 0)
	require.NoError(t, err)
	require.Len(t, hist, 3)
	for _, h := range hist {
		assert.True(t, h.Partial, "every kept report of a partial scan is marked")
	}

	visible, inFlight := dlqDepth(t, client, q.DLQURL)
	assert.Equal(t, "2", visible, "triage gave back what it read")
	assert.Equal(t, "1", inFlight, "the other reader's letter is still its own")
}

func dlqDepth(t *testing.T, client *sqs.Client, url string) (visible, inFlight string) {
	t.Helper()
	got, err := client.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{"All"}})
	require.NoError(t, err)
	return got.Attributes["ApproximateNumberOfMessages"], got.Attributes["ApproximateNumberOfMessagesNotVisible"]
}
