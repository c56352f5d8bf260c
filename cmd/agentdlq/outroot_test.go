package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/triage/report"
)

// checkoutTree is a temporary checkout: the repository's pipelines.json at
// its top and an empty docs/ folder. It returns the top folder.
func checkoutTree(t *testing.T) string {
	t.Helper()
	def, err := os.ReadFile(filepath.Join("..", "..", pipeline.DefaultFile))
	require.NoError(t, err)
	tree := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(tree, pipeline.DefaultFile), def, 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(tree, "docs"), 0o755))
	return tree
}

// runHere runs the CLI in the working directory, without the --config
// runArgs adds.
func runHere(args ...string) (stdout, stderr string, code int) {
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), code
}

// auditCount is the number of records in an audit file (0 when it is absent).
func auditCount(t *testing.T, path string) int {
	t.Helper()
	if _, err := os.Stat(path); os.IsNotExist(err) {
		return 0
	}
	return len(auditLines(t, path))
}

// An incident's commands share one audit whatever folder of the checkout
// they run from: with pipelines.json found by searching, the default audit
// is out/audit/ beside it; with --config or $AGENTDLQ_CONFIG, it is ./out
// of the working directory (nothing is written next to a config in /etc).
// The audited records here are refusals of bad flags on a defined pipeline,
// which every auditing command writes before any AWS call (a refusal that
// never reached a pipeline writes nothing).
func TestDefaultAuditBesidePipelinesJSON(t *testing.T) {
	tree := checkoutTree(t)
	docs := filepath.Join(tree, "docs")
	t.Setenv("AGENTDLQ_CONFIG", "")
	beside := filepath.Join(tree, "out", "audit", "agent-tasks.jsonl")
	here := filepath.Join(docs, "out", "audit", "agent-tasks.jsonl")
	refused := []string{"redrive", "select", "--pipeline", "agent-tasks", "--reason", "bogus", "--owner", "x", "--why", "y"}

	t.Chdir(docs)
	_, stderr, code := runHere(refused...)
	require.Equal(t, 2, code, stderr)
	_, stderr, code = runHere("redrive", "reject", "--pipeline", "agent-tasks", "--reason", "poison", "--owner", "x", "--why", "y")
	require.Equal(t, 2, code, stderr)
	assert.Equal(t, 2, auditCount(t, beside), "both refusals audited beside pipelines.json")
	assert.NoDirExists(t, filepath.Join(docs, "out"), "nothing written under the working directory")

	// From the top folder: the same file.
	t.Chdir(tree)
	_, stderr, code = runHere(refused...)
	require.Equal(t, 2, code, stderr)
	assert.Equal(t, 3, auditCount(t, beside))

	// --config given: ./out of the working directory.
	t.Chdir(docs)
	_, stderr, code = runHere(append([]string{"--config", filepath.Join(tree, pipeline.DefaultFile)}, refused...)...)
	require.Equal(t, 2, code, stderr)
	assert.Equal(t, 1, auditCount(t, here), "--config: ./out of the working directory")
	assert.Equal(t, 3, auditCount(t, beside), "--config: nothing beside the config")

	// $AGENTDLQ_CONFIG set: the same.
	t.Setenv("AGENTDLQ_CONFIG", filepath.Join(tree, pipeline.DefaultFile))
	_, stderr, code = runHere(refused...)
	require.Equal(t, 2, code, stderr)
	assert.Equal(t, 2, auditCount(t, here), "$AGENTDLQ_CONFIG: ./out of the working directory")
	assert.Equal(t, 3, auditCount(t, beside))

	// --audit given: used as given, relative to the working directory.
	t.Setenv("AGENTDLQ_CONFIG", "")
	_, stderr, code = runHere(append(refused, "--audit", "mine.jsonl")...)
	require.Equal(t, 2, code, stderr)
	assert.Equal(t, 1, auditCount(t, filepath.Join(docs, "mine.jsonl")))
	assert.Equal(t, 3, auditCount(t, beside))
}

// The help of every flag whose default is under outRoot says where it is.
func TestOutDefaultsHelp(t *testing.T) {
	root := newRootCmd()
	for _, path := range [][]string{
		{"redrive", "plan", "audit"}, {"ledger", "reconcile", "audit"}, {"pause", "audit"}, {"resume", "audit"},
		{"ui", "audit"}, {"ui", "reports"}, {"triage", "reports"}, {"demo", "out"},
	} {
		c, _, err := root.Find(path[:len(path)-1])
		require.NoError(t, err, path)
		fl := c.Flag(path[len(path)-1])
		require.NotNil(t, fl, path)
		assert.Contains(t, fl.Usage, "beside the pipelines.json found", path)
		assert.Empty(t, fl.DefValue, "%v: the default is outRoot's, not a fixed folder", path)
	}
}

// triage keeps its report under out/ beside the pipelines.json found, from
// any folder of the checkout (where agentdlq ui reads it); --reports given
// is used as given.
func TestTriageReportsBesidePipelinesJSON(t *testing.T) {
	cfg, _, q, table := onEmulators(t, "agent-tasks")
	_, err := sqs.NewFromConfig(cfg).SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(q.DLQURL), MessageBody: aws.String("not json")})
	require.NoError(t, err)
	tree := checkoutTree(t)
	docs := filepath.Join(tree, "docs")
	t.Setenv("AGENTDLQ_CONFIG", "")
	t.Chdir(docs)

	stdout, stderr, code := runHere("triage", "--pipeline", "agent-tasks", "--json", "--ledger-table", table, "--no-progress")
	require.Equal(t, 0, code, stderr)
	var r report.Report
	require.NoError(t, json.Unmarshal([]byte(stdout), &r))
	assert.Equal(t, 1, r.Totals.Messages)
	kept, err := filepath.Glob(filepath.Join(tree, "out", "agent-tasks", "reports", "*"))
	require.NoError(t, err)
	assert.Len(t, kept, 3, "JSON, Markdown, HTML beside pipelines.json")
	assert.NoDirExists(t, filepath.Join(docs, "out"))

	_, stderr, code = runHere("triage", "--pipeline", "agent-tasks", "--json", "--ledger-table", table, "--no-progress", "--reports", "here")
	require.Equal(t, 0, code, stderr)
	kept, err = filepath.Glob(filepath.Join(docs, "here", "agent-tasks", "reports", "*"))
	require.NoError(t, err)
	assert.Len(t, kept, 3, "--reports as given, relative to the working directory")
}

// agentdlq ui, started from a subfolder, shows the audit that agentdlq
// redrive writes beside pipelines.json (not the console's own default under
// ./out of the working directory).
func TestUIAuditBesidePipelinesJSON(t *testing.T) {
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AGENTDLQ_CONFIG", "")
	tree := checkoutTree(t)
	docs := filepath.Join(tree, "docs")
	fs := &audit.FileStore{Path: filepath.Join(tree, "out", "audit", "agent-tasks.jsonl")}
	require.NoError(t, fs.Append(t.Context(), audit.Entry{Time: time.Now(), Actor: "platform-oncall", Pipeline: "agent-tasks",
		Action: audit.ActionReject, Reasons: []string{"tool_unknown"}, Why: "recorded-from-the-checkout-top", Outcome: audit.OutcomeOK}))
	t.Chdir(docs)

	root := newRootCmd()
	pr, pw := io.Pipe()
	root.SetOut(pw)
	root.SetErr(io.Discard)
	root.SetArgs([]string{"ui", "--no-browser"})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx); _ = pw.Close() }() // Close of a pipe's writer returns nil
	line, err := bufio.NewReader(pr).ReadString('\n')
	require.NoError(t, err)
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	m := regexp.MustCompile(`(http://127\.0\.0\.1:\d+/)\?token=([0-9a-f]{64})`).FindStringSubmatch(line)
	require.NotNil(t, m, line)

	jar, _ := cookiejar.New(nil)
	resp, err := (&http.Client{Jar: jar}).Get(m[1] + "audit?p=agent-tasks&token=" + m[2])
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), "recorded-from-the-checkout-top", "the audit beside pipelines.json")
	cancel()
	require.NoError(t, <-done)
	assert.NoDirExists(t, filepath.Join(docs, "out"))
}
