package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
	"github.com/agentdlq/agentdlq/testkit/localtest"
)

// runCLI runs agentdlq with args and returns stdout and the exit code.
func runCLI(t *testing.T, args ...string) (string, int) {
	t.Helper()
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append([]string{"--config", filepath.Join("..", "..", pipeline.DefaultFile)}, args...))
	err := root.ExecuteContext(context.Background())
	if err != nil {
		t.Logf("agentdlq %v: %v", args, err)
		return out.String(), exitCode(err)
	}
	return out.String(), 0
}

func auditLines(t *testing.T, path string) []audit.Entry {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer func() { _ = f.Close() }() // only read
	var recs []audit.Entry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r audit.Entry
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r))
		recs = append(recs, r)
	}
	return recs
}

func TestRedriveCLIBadInputIsRefusedAndAudited(t *testing.T) {
	auditFile := filepath.Join(t.TempDir(), "audit.jsonl")
	tests := []struct {
		name string
		args []string
	}{
		{"unknown reason", []string{"redrive", "select", "--pipeline", "agent-tasks", "--reason", "bogus", "--owner", "platform-oncall", "--why", "y", "--audit", auditFile}},
		{"no reason", []string{"redrive", "select", "--pipeline", "agent-tasks", "--owner", "platform-oncall", "--why", "y", "--audit", auditFile}},
		{"override without justification", []string{"redrive", "start", "--pipeline", "agent-tasks", "--owner", "platform-oncall", "--why", "y", "--override", "policy_limit=", "--audit", auditFile}},
		{"override of an unknown reason", []string{"redrive", "start", "--pipeline", "agent-tasks", "--owner", "platform-oncall", "--why", "y", "--override", "nope=x", "--audit", auditFile}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, code := runCLI(t, tt.args...)
			assert.Equal(t, exitRefused, code)
			recs := auditLines(t, auditFile)
			require.Len(t, recs, i+1)
			assert.Equal(t, audit.OutcomeRefused, recs[i].Outcome)
			// Refused before STS was asked: the OS user, not checked (or
			// local, when the refusal came after the endpoints were known).
			require.NotNil(t, recs[i].Caller)
			assert.Contains(t, []audit.CallerCheck{audit.CallerNotChecked, audit.CallerLocal}, recs[i].Caller.Check)
			assert.Empty(t, recs[i].Caller.ARN)
			assert.Equal(t, audit.OSUser(), recs[i].Caller.OSUser)
		})
	}
	_, code := runCLI(t, "redrive", "select", "--pipeline", "agent-tasks", "--rate", "abc")
	assert.Equal(t, exitRefused, code, "a flag that does not parse is bad input")
}

// A command refused before it reached a pipeline (none named, a name the
// definition does not have, a definition that does not load) writes
// nothing: no _unknown.jsonl, no file per typo; the refusal is on stderr
// once, and no audit line precedes it.
func TestRedriveCLIRefusedBeforeAPipelineWritesNothing(t *testing.T) {
	dir := t.TempDir()
	defs, err := filepath.Abs(filepath.Join("..", "..", pipeline.DefaultFile))
	require.NoError(t, err)
	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`[1,2]`), 0o644))
	tests := []struct {
		name string
		args []string
		says string
	}{
		{"mistyped pipeline", []string{"redrive", "select", "--pipeline", "agent-task", "--reason", "budget_exhausted", "--owner", "x", "--why", "y"}, "agent-task"},
		{"mistyped pipeline, bad reason too", []string{"redrive", "select", "--pipeline", "agent-task", "--reason", "bogus", "--owner", "x", "--why", "y"}, "bogus"},
		{"no pipeline", []string{"redrive", "plan"}, "--pipeline is required"},
		{"bad definition file", []string{"--config", bad, "redrive", "plan", "--pipeline", "agent-tasks"}, ""},
		{"pause, mistyped pipeline", []string{"pause", "--pipeline", "agent-task", "--owner", "x", "--why", "y"}, "agent-task"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Chdir(dir)
			var stdout, stderr bytes.Buffer
			root := newRootCmd()
			root.SetOut(&stdout)
			root.SetErr(&stderr)
			args := tt.args
			if args[0] != "--config" {
				args = append([]string{"--config", defs}, args...)
			}
			root.SetArgs(append(args, "--audit", filepath.Join(dir, "out", "audit.jsonl")))
			err := root.ExecuteContext(context.Background())
			require.Error(t, err)
			assert.Equal(t, exitRefused, exitCode(err))
			assert.Contains(t, err.Error(), tt.says)
			assert.NoDirExists(t, filepath.Join(dir, "out"), "nothing written")
			assert.Empty(t, stderr.String(), "no audit line on stderr before the refusal")
		})
	}
}

// Outside the emulators, with no ledger table named, redrive refuses before
// it touches a queue: without the ledger no redrive is counted, and a key
// that keeps coming back would never become redrive_loop.
func TestRedriveCLIRefusesWithoutLedgerTable(t *testing.T) {
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_ENDPOINT_URL_SQS", "")
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", "")
	t.Setenv("AGENTDLQ_LEDGER_TABLE", "")
	t.Setenv("AWS_REGION", "us-east-1")
	auditFile := filepath.Join(t.TempDir(), "audit.jsonl")
	_, code := runCLI(t, "redrive", "select", "--pipeline", "agent-tasks", "--reason", "budget_exhausted",
		"--owner", "platform-oncall", "--why", "503s over", "--audit", auditFile)
	assert.Equal(t, exitRefused, code)
	recs := auditLines(t, auditFile)
	require.Len(t, recs, 1)
	assert.Equal(t, audit.OutcomeRefused, recs[0].Outcome)
	assert.Contains(t, recs[0].Error, "no ledger table")
}

// The caller check used to be skipped whenever the SQS endpoint was
// loopback, and believed any AWS_ENDPOINT_URL_STS. Now a local SQS beside an
// AWS DynamoDB is not local, and then a loopback STS is refused before any
// call (the audit says so, caller not checked).
func TestRedriveCLIMixedEndpointsAreNotLocal(t *testing.T) {
	for _, tt := range []struct {
		name string
		env  map[string]string
	}{
		{"SQS local, DynamoDB AWS, STS local", map[string]string{
			"AWS_ENDPOINT_URL_SQS": "http://127.0.0.1:9", "AWS_ENDPOINT_URL_DYNAMODB": "https://dynamodb.us-east-1.amazonaws.com",
			"AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9", "AWS_ENDPOINT_URL_STS": "http://127.0.0.1:9"}},
		{"all AWS, STS elsewhere", map[string]string{
			"AWS_ENDPOINT_URL_SQS": "", "AWS_ENDPOINT_URL_DYNAMODB": "", "AWS_ENDPOINT_URL_S3": "",
			"AWS_ENDPOINT_URL_STS": "https://sts.example.net"}},
		{"SQS local, S3 audit in AWS, STS local", map[string]string{
			"AWS_ENDPOINT_URL_SQS": "http://127.0.0.1:9", "AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:9",
			"AWS_ENDPOINT_URL_S3": "https://s3.us-east-1.amazonaws.com", "AWS_ENDPOINT_URL_STS": "http://localhost:9"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("AWS_ENDPOINT_URL", "")
			t.Setenv("AWS_REGION", "us-east-1")
			t.Setenv("AWS_ACCESS_KEY_ID", "test")
			t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			auditFile := filepath.Join(t.TempDir(), "audit.jsonl")
			out, code := runCLI(t, "redrive", "select", "--pipeline", "agent-tasks", "--reason", "budget_exhausted",
				"--owner", "platform-oncall", "--why", "503s over", "--audit", auditFile, "--ledger-table", "agentdlq-ledger")
			assert.Equal(t, exitRefused, code, out)
			recs := auditLines(t, auditFile)
			require.Len(t, recs, 1)
			assert.Equal(t, audit.OutcomeRefused, recs[0].Outcome)
			assert.Equal(t, string(redrivetype.CodeSTSEndpoint), redriveCode(recs[0].Error), recs[0].Error)
			assert.Equal(t, audit.CallerNotChecked, recs[0].Caller.Check)
		})
	}
}

// TestRedriveCLIOnEmulators drives the CLI against a seeded local DLQ.
func TestRedriveCLIOnEmulators(t *testing.T) {
	cfg, _, q, table := onEmulators(t, "agent-tasks")
	client := sqs.NewFromConfig(cfg)
	ctx := context.Background()
	seed := func(key string, reason deadletter.Reason) {
		body := `{"task_id":"t","run_id":"r","tenant":"acme","idempotency_key":"` + key + `","tool":"web.search","tool_version":"1","trace_id":"x","created_at":"2026-11-29T10:00:00Z","schema_version":1,"args":{}}`
		attrs, err := deadletter.EncodeDeadLetter(deadletter.Meta{Reason: reason, IdempotencyKey: key, MessageID: "orig-" + key, Tool: "web.search"}, map[string]deadletter.Attribute{"src": {DataType: "String", StringValue: "t"}})
		require.NoError(t, err)
		_, err = client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.DLQURL), MessageBody: aws.String(body), MessageAttributes: localtest.SQSAttributes(attrs)})
		require.NoError(t, err)
	}
	for i := range 3 {
		seed("be-"+strconv.Itoa(i), deadletter.ReasonBudgetExhausted)
	}
	seed("pl-0", deadletter.ReasonPolicyLimit)
	depth := func(url string) int {
		out, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"}})
		require.NoError(t, err)
		a, _ := strconv.Atoi(out.Attributes["ApproximateNumberOfMessages"])
		b, _ := strconv.Atoi(out.Attributes["ApproximateNumberOfMessagesNotVisible"])
		return a + b
	}
	auditFile := filepath.Join(t.TempDir(), "audit.jsonl")
	common := []string{"--pipeline", "agent-tasks", "--audit", auditFile, "--ledger-table", table}

	out, code := runCLI(t, append([]string{"redrive", "plan", "--json"}, common...)...)
	require.Equal(t, 0, code, out)
	var plan redrivetype.Plan
	require.NoError(t, json.Unmarshal([]byte(out), &plan), out)
	assert.Equal(t, 4, plan.Total)
	require.Len(t, plan.Groups, 2)

	_, code = runCLI(t, append([]string{"redrive", "select", "--reason", "budget_exhausted", "--owner", "mallory", "--why", "x"}, common...)...)
	assert.Equal(t, exitRefused, code)
	_, code = runCLI(t, append([]string{"redrive", "select", "--reason", "budget_exhausted", "--owner", "platform-oncall", "--why", "x", "--rate", "501"}, common...)...)
	assert.Equal(t, exitRefused, code)
	_, code = runCLI(t, append([]string{"redrive", "select", "--reason", "policy_limit", "--owner", "platform-oncall", "--why", "x"}, common...)...)
	assert.Equal(t, exitRefused, code)
	_, code = runCLI(t, append([]string{"redrive", "start", "--owner", "platform-oncall", "--why", "x"}, common...)...)
	assert.Equal(t, exitRefused, code, "the DLQ holds policy_limit")
	// A refusal names the flag at fault, once, and what to do.
	msg := cliErr(t, append([]string{"redrive", "start", "--why", "x"}, common...)...)
	assert.Contains(t, msg, `refused (owner_missing): --owner is required: only the owner of pipeline "agent-tasks" ("platform-oncall") may redrive it`)
	assert.Equal(t, 0, depth(q.HotURL), "nothing moved")
	assert.Equal(t, 4, depth(q.DLQURL))

	out, code = runCLI(t, append([]string{"redrive", "select", "--reason", "budget_exhausted", "--owner", "platform-oncall", "--why", "503s over", "--dry-run"}, common...)...)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "would move 3")
	assert.Equal(t, 0, depth(q.HotURL))

	out, code = runCLI(t, append([]string{"redrive", "select", "--reason", "budget_exhausted", "--owner", "platform-oncall", "--why", "503s over", "--rate", "50"}, common...)...)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "moved 3")
	assert.Equal(t, 3, depth(q.HotURL))
	assert.Equal(t, 1, depth(q.DLQURL))

	out, code = runCLI(t, append([]string{"redrive", "start", "--owner", "platform-oncall", "--why", "x", "--override", "policy_limit=cap raised"}, common...)...)
	assert.Equal(t, 1, code, out)

	var actions []string
	for _, r := range auditLines(t, auditFile) {
		actions = append(actions, string(r.Action)+":"+string(r.Outcome))
		// Every endpoint is an emulator: the caller is the OS user, local;
		// a missing --owner is refused before anything is resolved, so its
		// caller is not checked.
		want := audit.CallerLocal
		if strings.Contains(r.Error, "owner_missing") {
			want = audit.CallerNotChecked
		}
		if assert.NotNil(t, r.Caller, r.Action) {
			assert.Equal(t, audit.Caller{Check: want, OSUser: audit.OSUser()}, *r.Caller, r.Action)
		}
	}
	assert.Equal(t, []string{"plan:shown", "select:refused", "select:refused", "select:refused", "start:refused", "start:refused",
		"select:dry_run", "select:begun", "select:ok", "start:failed"}, actions)
}

func TestRedriveCLIEmptyAndMissingDLQ(t *testing.T) {
	_, _, q, table := onEmulators(t, "agent-tasks")
	auditFile := filepath.Join(t.TempDir(), "audit.jsonl")
	args := []string{"redrive", "select", "--pipeline", "agent-tasks", "--reason", "budget_exhausted", "--owner", "platform-oncall",
		"--why", "x", "--audit", auditFile, "--ledger-table", table}

	_, code := runCLI(t, args...)
	assert.Equal(t, exitRefused, code, "empty DLQ")
	_, code = runCLI(t, "redrive", "start", "--pipeline", "agent-tasks", "--owner", "platform-oncall", "--why", "x",
		"--audit", auditFile, "--ledger-table", table)
	assert.Equal(t, exitRefused, code, "empty DLQ")

	t.Setenv("AGENTDLQ_DLQ_URL", q.DLQURL+"-missing")
	t.Setenv("AGENTDLQ_DLQ_ARN", q.DLQARN+"-missing")
	_, code = runCLI(t, args...)
	assert.Equal(t, exitRefused, code, "missing DLQ")

	var got []string
	for _, r := range auditLines(t, auditFile) {
		got = append(got, string(r.Action)+":"+string(r.Outcome)+":"+redriveCode(r.Error))
	}
	assert.Equal(t, []string{"select:refused:dlq_empty", "start:refused:dlq_empty", "select:refused:dlq_missing"}, got)
}

// redriveCode extracts the refusal code from an audited error text.
func redriveCode(s string) string {
	const p = "refused ("
	i := strings.Index(s, p)
	if i < 0 {
		return ""
	}
	rest := s[i+len(p):]
	if j := strings.Index(rest, ")"); j >= 0 {
		return rest[:j]
	}
	return ""
}

// With no worker consuming the hot queue, the canary's stdout says what is
// wrong (is the worker running?), and the run exits 3 with the rest left.
func TestRedriveCLICanaryWithoutAWorker(t *testing.T) {
	cfg, _, q, table := onEmulators(t, "agent-tasks")
	client := sqs.NewFromConfig(cfg)
	ctx := context.Background()
	for i := range 2 {
		key := "nw-" + strconv.Itoa(i)
		body := `{"task_id":"t","run_id":"r","tenant":"acme","idempotency_key":"` + key + `","tool":"web.search","tool_version":"1","trace_id":"x","created_at":"2026-11-29T10:00:00Z","schema_version":1,"args":{}}`
		attrs, err := deadletter.EncodeDeadLetter(deadletter.Meta{Reason: deadletter.ReasonBudgetExhausted, IdempotencyKey: key, MessageID: "orig-" + key, Tool: "web.search"}, nil)
		require.NoError(t, err)
		_, err = client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.DLQURL), MessageBody: aws.String(body), MessageAttributes: localtest.SQSAttributes(attrs)})
		require.NoError(t, err)
	}
	out, code := runCLI(t, "redrive", "select", "--pipeline", "agent-tasks", "--audit", filepath.Join(t.TempDir(), "audit.jsonl"), "--ledger-table", table,
		"--reason", "budget_exhausted", "--owner", "platform-oncall", "--why", "503s over", "--canary", "1", "--canary-timeout", "3s")
	assert.Equal(t, exitCanaryFailed, code, out)
	assert.Contains(t, out, "is the worker running?")
	assert.Contains(t, out, "agentdlq work --pipeline agent-tasks")
	assert.Contains(t, out, "canary: waiting up to 3s", "progress while it waits")
}

// The summary says how many chosen letters stay because their claim check
// restored nothing, by cause, and names each one, apart from failed sends.
func TestWriteSelectResultClaimCheckLeft(t *testing.T) {
	res := &redrive.SelectResult{Seen: 3, Matched: 3, Moved: 1, DepthAtStart: 3, ByReason: map[deadletter.Reason]int{deadletter.ReasonUnclassified: 1},
		ClaimCheckFailed: 2, ClaimCheckFailedBy: map[redrivetype.ClaimCheckCause]int{redrivetype.ClaimCheckMissing: 1, redrivetype.ClaimCheckUnreadable: 1},
		Unrestored: []redrivetype.Unrestored{
			{DLQMessageID: "d-1", Reason: deadletter.ReasonUnclassified, Cause: redrivetype.ClaimCheckMissing, Error: "read claim check s3://b/k1: NoSuchKey: the dead letter stays in the DLQ"},
			{DLQMessageID: "d-2", Reason: deadletter.ReasonUnclassified, Cause: redrivetype.ClaimCheckUnreadable, Error: "read claim check s3://b/k2: AccessDenied: the dead letter stays in the DLQ"},
		}}
	var out strings.Builder
	writeSelectResult(&out, "agent-tasks", res, false)
	s := out.String()
	assert.Contains(t, s, "agent-tasks: moved 1; 2 chosen and left in the DLQ (below: why); the DLQ held 3 when the pass began")
	assert.Contains(t, s, "left in the DLQ: 2 whose claim check restored nothing (missing 1, unreadable 1)")
	assert.Contains(t, s, "  d-1  reason unclassified  missing: read claim check s3://b/k1: NoSuchKey")
	assert.Contains(t, s, "  d-2  reason unclassified  unreadable: ")
	assert.NotContains(t, s, "sends failed", "not a failed send")

	// A dry run says the same as a prediction: those letters would stay,
	// and would-move counts the others only (Select sets WouldMove so).
	res.DryRun, res.Moved, res.WouldMove = true, 0, 1
	out.Reset()
	writeSelectResult(&out, "agent-tasks", res, false)
	s = out.String()
	assert.Contains(t, s, "agent-tasks: would move 1 (a dry run: nothing moved); 2 chosen that would stay in the DLQ (below: why); the DLQ held 3 when the pass began")
	assert.Contains(t, s, "would stay in the DLQ: 2 whose claim check restores nothing (missing 1, unreadable 1)")
	assert.NotContains(t, s, "left in the DLQ")
}

// select reads a claim check only from the eval bucket (--evidence-bucket):
// named another bucket it leaves the letter in the DLQ, exit 1, and says
// why; named the bucket that holds it, it restores every attribute.
func TestRedriveCLIClaimCheckBucket(t *testing.T) {
	cfg, _, q, table := onEmulators(t, "agent-tasks")
	client := sqs.NewFromConfig(cfg)
	s3c := s3.NewFromConfig(cfg)
	bucket := localtest.Bucket(t, cfg)
	ctx := context.Background()
	const key = "cc-0"
	body := `{"task_id":"t","run_id":"r","tenant":"acme","idempotency_key":"` + key + `","tool":"web.search","tool_version":"1","trace_id":"x","created_at":"2026-11-29T10:00:00Z","schema_version":1,"args":{}}`
	kept := map[string]deadletter.Attribute{"src": {DataType: "String", StringValue: "t"}}
	all := map[string]deadletter.Attribute{"src": kept["src"], "given-up": {DataType: "String", StringValue: "large"}}
	meta := deadletter.Meta{Reason: deadletter.ReasonBudgetExhausted, IdempotencyKey: key, MessageID: "orig-" + key, Tool: "web.search"}
	ev, err := deadletter.MarshalEvidence(&deadletter.Evidence{Meta: meta, Attributes: all})
	require.NoError(t, err)
	ref := "agent-tasks/evidence/2026-11-29/orig-" + key + ".json"
	_, err = s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(ref), Body: bytes.NewReader(ev)})
	require.NoError(t, err)
	meta.Evidence, meta.Reduced = "s3://"+bucket+"/"+ref, []deadletter.Reduction{deadletter.ReducedFolded}
	attrs, err := deadletter.EncodeDeadLetter(meta, kept)
	require.NoError(t, err)
	_, err = client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.DLQURL), MessageBody: aws.String(body), MessageAttributes: localtest.SQSAttributes(attrs)})
	require.NoError(t, err)

	common := []string{"redrive", "select", "--pipeline", "agent-tasks", "--audit", filepath.Join(t.TempDir(), "audit.jsonl"), "--ledger-table", table,
		"--reason", "budget_exhausted", "--owner", "platform-oncall", "--why", "503s over", "--hold", "5s"}
	out, stderr, code := runArgs(t, append(common, "--evidence-bucket", bucket+"-other", "-o", "json")...)
	require.Equal(t, exitFailed, code, out+stderr)
	var je struct {
		Code   string               `json:"code"`
		Result redrive.SelectResult `json:"result"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &je), out)
	assert.Equal(t, codeFailed, je.Code)
	assert.Equal(t, 0, je.Result.Moved)
	assert.Equal(t, map[redrivetype.ClaimCheckCause]int{redrivetype.ClaimCheckOtherBucket: 1}, je.Result.ClaimCheckFailedBy)
	require.Len(t, je.Result.Unrestored, 1)
	assert.Contains(t, je.Result.Unrestored[0].Error, "is not in the eval bucket "+bucket+"-other")

	out, stderr, code = runArgs(t, append(common, "--evidence-bucket", bucket)...)
	require.Equal(t, 0, code, out+stderr)
	assert.Contains(t, out, "moved 1; the DLQ held 1 when the pass began")
	m, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.HotURL), MessageAttributeNames: []string{"All"}, WaitTimeSeconds: 1})
	require.NoError(t, err)
	require.Len(t, m.Messages, 1)
	assert.Equal(t, body, aws.ToString(m.Messages[0].Body))
	assert.Equal(t, all, localtest.Attributes(m.Messages[0].MessageAttributes), "the attribute the claim check held is back")
}

// One rule names the eval bucket select reads claim checks from.
func TestEvalBucketName(t *testing.T) {
	tests := []struct {
		name, flag, env, endpoint string
		want                      string // "" means none: select reads no claim check
	}{
		{"flag wins", "flag-bucket", "env-bucket", "http://127.0.0.1:4567", "flag-bucket"},
		{"then the environment", "", "env-bucket", "http://127.0.0.1:4567", "env-bucket"},
		{"local endpoints: the local bucket", "", "", "http://127.0.0.1:4567", "agentdlq-evals"},
		{"AWS with nothing named: none, never a guess", "", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("AGENTDLQ_EVAL_BUCKET", tt.env)
			t.Setenv("AWS_ENDPOINT_URL", "")
			t.Setenv("AWS_ENDPOINT_URL_S3", tt.endpoint)
			assert.Equal(t, tt.want, evalBucketName(tt.flag))
		})
	}
}

// select's progress bar counts what the DLQ holds, in flight included, as
// the result's depth_at_start; a depth that cannot be read is unknown (a bar
// without a total, or --limit), never a made-up 0, and the error is logged.
func TestSelectBarTotal(t *testing.T) {
	ctx := context.Background()
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	known := func(context.Context) (int, int, error) { return 2, 1, nil }
	assert.EqualValues(t, 3, selectBarTotal(ctx, known, 0, log), "visible and in flight")
	assert.EqualValues(t, 2, selectBarTotal(ctx, known, 2, log), "at most --limit")
	assert.EqualValues(t, 3, selectBarTotal(ctx, known, 10, log))
	assert.Empty(t, logs.String())

	unknown := func(context.Context) (int, int, error) {
		return 0, 0, errors.New("AccessDenied: sqs:GetQueueAttributes")
	}
	assert.EqualValues(t, 0, selectBarTotal(ctx, unknown, 0, log), "no total: the bar shows no made-up 0 to go")
	assert.EqualValues(t, 5, selectBarTotal(ctx, unknown, 5, log), "--limit, when given")
	assert.Contains(t, logs.String(), `"level":"INFO","msg":"DLQ depth unknown: the progress bar has no total","error":"AccessDenied: sqs:GetQueueAttributes"`)

	// On the emulators, with the Redriver's own depth call: a letter in
	// flight (held by another reader) is counted.
	cfg, p, q, _ := onEmulators(t, "agent-tasks")
	client := sqs.NewFromConfig(cfg)
	for i := range 3 {
		_, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.DLQURL), MessageBody: aws.String(strconv.Itoa(i))})
		require.NoError(t, err)
	}
	got, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.DLQURL), MaxNumberOfMessages: 1, VisibilityTimeout: 60})
	require.NoError(t, err)
	require.Len(t, got.Messages, 1)
	r, err := redrive.New(redrive.Config{Pipeline: p, Queues: q, SQS: client, Ledger: ledger.NewMemory(),
		Audit: &audit.Auditor{Store: &audit.FileStore{Path: filepath.Join(t.TempDir(), "audit.jsonl")}}})
	require.NoError(t, err)
	assert.EqualValues(t, 3, selectBarTotal(ctx, r.Depth, 0, log))
}

// --per-tenant on the emulators: a flooding tenant's letters move two a
// pass, the others' at once; the summary says what stays; a canary larger
// than the budget is refused.
func TestRedriveCLIPerTenant(t *testing.T) {
	cfg, _, q, table := onEmulators(t, "agent-tasks")
	client := sqs.NewFromConfig(cfg)
	ctx := context.Background()
	for i, tenant := range []string{"flood", "flood", "flood", "flood", "flood", "quiet"} {
		key := "pt-" + strconv.Itoa(i)
		body := `{"task_id":"t","run_id":"r","tenant":"` + tenant + `","idempotency_key":"` + key + `","tool":"web.search","tool_version":"1","trace_id":"x","created_at":"2026-11-29T10:00:00Z","schema_version":1,"args":{}}`
		attrs, err := deadletter.EncodeDeadLetter(deadletter.Meta{Reason: deadletter.ReasonBudgetExhausted, IdempotencyKey: key, MessageID: "orig-" + key, Tool: "web.search", Tenant: tenant}, nil)
		require.NoError(t, err)
		_, err = client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.DLQURL), MessageBody: aws.String(body), MessageAttributes: localtest.SQSAttributes(attrs)})
		require.NoError(t, err)
	}
	args := []string{"redrive", "select", "--pipeline", "agent-tasks", "--audit", filepath.Join(t.TempDir(), "audit.jsonl"), "--ledger-table", table,
		"--reason", "budget_exhausted", "--owner", "platform-oncall", "--why", "503s over", "--per-tenant", "2"}
	out, code := runCLI(t, append(args, "--canary", "3")...)
	assert.Equal(t, 2, code, "a canary larger than the per-tenant budget is refused: %s", out)
	out, code = runCLI(t, args...)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "agent-tasks: moved 3;") // select's counts in words (issue 30)
	assert.Contains(t, out, "the DLQ held 6 when the pass began")
	assert.Contains(t, out, "left in the DLQ: 3 over the per-tenant budget")
}

// redrive start on the local emulator: it says that move tasks do not
// exist here beside what a move task may not move, and after the owner
// rejected policy_limit it tells that group as rejected and offers the
// other group's select, never the rejection again (the plan says "nothing
// to do" for it).
func TestRedriveCLIStartReadsRejections(t *testing.T) {
	cfg, _, q, table := onEmulators(t, "agent-tasks")
	client := sqs.NewFromConfig(cfg)
	ctx := context.Background()
	for _, l := range []struct {
		key    string
		reason deadletter.Reason
	}{{"sr-be", deadletter.ReasonBudgetExhausted}, {"sr-pl", deadletter.ReasonPolicyLimit}} {
		body := `{"task_id":"t","run_id":"r","tenant":"acme","idempotency_key":"` + l.key + `","tool":"web.search","tool_version":"1","trace_id":"x","created_at":"2026-11-29T10:00:00Z","schema_version":1,"args":{}}`
		attrs, err := deadletter.EncodeDeadLetter(deadletter.Meta{Reason: l.reason, IdempotencyKey: l.key, MessageID: "orig-" + l.key, Tool: "web.search"}, nil)
		require.NoError(t, err)
		_, err = client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.DLQURL), MessageBody: aws.String(body), MessageAttributes: localtest.SQSAttributes(attrs)})
		require.NoError(t, err)
	}
	common := []string{"--pipeline", "agent-tasks", "--audit", filepath.Join(t.TempDir(), "audit.jsonl"), "--ledger-table", table}
	start := append([]string{"redrive", "start", "--owner", "platform-oncall", "--why", "quota raised"}, common...)

	msg := cliErr(t, start...)
	assert.Contains(t, msg, "policy_limit 1 (never, without an override)")
	assert.Contains(t, msg, "this endpoint has no message move tasks (the local emulator, fauxqs, has no StartMessageMoveTask): redrive selectively")
	assert.Contains(t, msg, "next: agentdlq redrive reject --pipeline agent-tasks --reason policy_limit")

	out, code := runCLI(t, append([]string{"redrive", "reject", "--reason", "policy_limit", "--owner", "platform-oncall", "--why", "cap is right"}, common...)...)
	require.Equal(t, 0, code, out)
	msg = cliErr(t, start...)
	assert.Contains(t, msg, "policy_limit 1 (rejected: never redriven, and a move task would move them anyway)")
	assert.NotContains(t, msg, "redrive reject", "rejected a minute ago: not offered again")
	assert.Contains(t, msg, "next: agentdlq redrive select --pipeline agent-tasks --reason budget_exhausted")
}
