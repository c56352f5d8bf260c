package redrive

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
	"github.com/agentdlq/agentdlq/triage/report"
)

// hiddenSQS is an SQS client that does not say where it runs (a wrapper
// without the SDK client's Options).
type hiddenSQS struct{ API }

// New decides whether the caller check runs from the clients it is given;
// no Config field turns it off.
func TestNewDecidesLocality(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f := newFakeSQS()
	q := f.addPair(p)
	lo, aws_ := aws.String("http://127.0.0.1:4566"), aws.String("https://dynamodb.us-east-1.amazonaws.com")
	ddb := func(ep *string) ledger.Ledger {
		return ledger.NewDynamo(dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: ep}), "t")
	}
	tests := []struct {
		name  string
		mod   func(*Config)
		local bool             // want: the check is skipped
		code  redrivetype.Code // want: New's refusal
	}{
		{"every client on loopback", func(*Config) {}, true, ""},
		{"the ledger's DynamoDB on loopback too", func(c *Config) { c.Ledger = ddb(lo) }, true, ""},
		{"SQS in AWS, STS the SDK's", func(c *Config) {
			c.SQS, c.STS = sqs.New(sqs.Options{Region: "us-east-1"}), sts.New(sts.Options{Region: "us-east-1"})
		}, false, ""},
		{"SQS local, the ledger in AWS, STS the SDK's: not local", func(c *Config) {
			c.Ledger, c.STS = ddb(aws_), sts.New(sts.Options{Region: "us-east-1"})
		}, false, ""},
		{"SQS local, the ledger in AWS, STS local: refused", func(c *Config) {
			c.Ledger, c.STS = ddb(aws_), sts.New(sts.Options{Region: "us-east-1", BaseEndpoint: lo})
		}, false, redrivetype.CodeSTSEndpoint},
		{"a client that does not say where it runs, with STS", func(c *Config) { c.SQS, c.STS = hiddenSQS{f}, fakeSTS{} }, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := Config{Pipeline: p, Queues: q, SQS: f, Ledger: ledger.NewMemory(), Audit: &audit.Auditor{Store: &memStore{}}}
			tt.mod(&cfg)
			r, err := New(cfg)
			if tt.code != "" {
				assert.Equal(t, tt.code, RefusalCode(err), err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.local, r.local)
		})
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f := newFakeSQS()
	q := f.addPair(p)
	valid := func() Config {
		return Config{Pipeline: p, Queues: q, SQS: f, Ledger: ledger.NewMemory(), Audit: &audit.Auditor{Store: &memStore{}}}
	}
	tests := []struct {
		name     string
		mod      func(*Config)
		wantErr  string // a fragment of the error; "" for a valid Config
		noLedger bool   // want: errors.Is ErrNoLedger
	}{
		{name: "valid, defaults applied", mod: func(*Config) {}},
		{name: "no pipeline", mod: func(c *Config) { c.Pipeline = nil }, wantErr: "Pipeline is required"},
		{name: "no DLQ ARN", mod: func(c *Config) { c.Queues.DLQARN = "" }, wantErr: "Queues needs"},
		{name: "no SQS", mod: func(c *Config) { c.SQS = nil }, wantErr: "SQS is required"},
		{name: "no ledger", mod: func(c *Config) { c.Ledger = nil }, wantErr: "no redrive without it", noLedger: true},
		{name: "no audit", mod: func(c *Config) { c.Audit = nil }, wantErr: "Audit is required"},
		{name: "no STS in AWS", mod: func(c *Config) { c.SQS = sqs.New(sqs.Options{Region: "us-east-1"}) }, wantErr: "STS is required"},
		{name: "no STS, a client that does not say where it runs", mod: func(c *Config) { c.SQS = hiddenSQS{c.SQS} }, wantErr: "STS is required"},
		{name: "every problem named", mod: func(c *Config) { c.SQS, c.Ledger, c.Audit = nil, nil, nil }, wantErr: "Audit is required", noLedger: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := valid()
			tt.mod(&cfg)
			r, err := New(cfg)
			if tt.wantErr == "" {
				require.NoError(t, err)
				assert.NotNil(t, r.tag, "tagging is triage's")
				assert.NotNil(t, r.cfg.Scan, "Scan defaults to a triage scan")
				assert.Equal(t, p, r.cfg.Pipeline)
				return
			}
			require.Error(t, err)
			assert.Nil(t, r)
			assert.ErrorIs(t, err, errConfig)
			assert.ErrorIs(t, err, ErrRefused, "a Config New refuses moves nothing")
			assert.Equal(t, redrivetype.CodeBadInput, RefusalCode(err))
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.Equal(t, tt.noLedger, errors.Is(err, ErrNoLedger))
		})
	}
}

// Start without groups scans the DLQ itself, but only after the checks that
// need no AWS call: a wrong owner is refused, and audited, before any scan.
func TestStartScansAfterThePureGate(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f := newFakeSQS()
	q := f.addPair(p)
	scans := 0
	store := &memStore{}
	r, err := New(Config{Pipeline: p, Queues: q, SQS: f, Ledger: ledger.NewMemory(),
		Audit: &audit.Auditor{Store: store, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))}, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Scan: func(context.Context) (*report.Report, error) {
			scans++
			return &report.Report{Groups: []report.Group{{Reason: deadletter.ReasonPolicyLimit, Fingerprint: "fp", Count: 1}}}, nil
		}})
	require.NoError(t, err)
	r.tag = testTag
	ctx := context.Background()

	_, err = r.Start(ctx, StartRequest{Who: Who{Owner: "mallory", Why: "x"}, Rate: 10})
	assert.Equal(t, redrivetype.CodeOwner, RefusalCode(err))
	assert.Zero(t, scans, "no scan for a wrong owner")

	_, err = r.Start(ctx, StartRequest{Who: Who{Owner: p.Owner, Why: "x"}, Rate: 10})
	assert.Equal(t, redrivetype.CodeForbidden, RefusalCode(err), "the scan found policy_limit")
	assert.Equal(t, 1, scans)

	_, err = r.Reject(ctx, RejectRequest{Who: Who{Owner: p.Owner, Why: "over budget by design"}, Reasons: []deadletter.Reason{deadletter.ReasonPolicyLimit}})
	require.NoError(t, err)
	assert.Equal(t, 2, scans, "Reject scans when given no groups")

	pl, err := r.Plan(ctx, PlanRequest{Actor: "viewer"})
	require.NoError(t, err)
	assert.Equal(t, 1, pl.Total)
	assert.Equal(t, 3, scans)

	var got []string
	for _, e := range store.all() {
		got = append(got, string(e.Action)+":"+string(e.Outcome))
	}
	assert.Equal(t, []string{"start:refused", "start:refused", "reject:ok", "plan:shown"}, got)
	assert.Equal(t, map[string]int{string(deadletter.ReasonPolicyLimit): 1}, store.all()[1].Counts, "the refused start records what the scan found")
}

func TestRefuseAuditsEarlyRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name     string
		pipeline string
		err      error
		wantFile string // where the entry is filed: never a path from unchecked input
		wantCode redrivetype.Code
	}{
		{name: "plain error becomes bad input", pipeline: "agent-tasks", err: errors.New("--pipeline is required"), wantFile: "agent-tasks", wantCode: redrivetype.CodeBadInput},
		{name: "a refusal keeps its code", pipeline: "agent-tasks", err: refuse(redrivetype.CodeDLQMissing, "gone"), wantFile: "agent-tasks", wantCode: redrivetype.CodeDLQMissing},
		{name: "a path as a pipeline name", pipeline: "../../etc/passwd", err: errors.New("unknown pipeline"), wantFile: "_unknown", wantCode: redrivetype.CodeBadInput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, err := audit.Open("", tt.pipeline, nil, slog.New(slog.NewJSONHandler(io.Discard, nil)))
			require.NoError(t, err)
			fs := a.Store.(*audit.FileStore)
			assert.Equal(t, audit.DefaultPath(tt.wantFile), fs.Path)
			fs.Path = filepath.Join(dir, tt.wantFile+"-"+string(tt.wantCode)+".jsonl")
			got := Refuse(context.Background(), a, tt.pipeline, audit.ActionSelect, Who{Owner: "alice", Why: "why"}, tt.err)
			require.ErrorIs(t, got, ErrRefused)
			assert.Equal(t, tt.wantCode, RefusalCode(got))
		})
	}
	_, err := audit.Open("s3://bucket/prefix", "agent-tasks", nil, nil)
	assert.ErrorContains(t, err, "needs an S3 client")
	_, err = audit.Open("s3://", "agent-tasks", nil, nil)
	assert.ErrorContains(t, err, "no bucket")
}

// The typed codes: the list is complete, without
// duplicates, and each value is its JSON spelling.
func TestTypedValues(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, values []string, want int) {
		t.Helper()
		assert.Len(t, values, want)
		seen := map[string]bool{}
		for _, v := range values {
			assert.False(t, seen[v], "%s twice", v)
			seen[v] = true
			b, err := json.Marshal(v)
			require.NoError(t, err)
			assert.Equal(t, `"`+v+`"`, string(b))
		}
	}
	var codes []string
	for _, c := range allCodes() {
		codes = append(codes, string(c))
	}
	check(t, codes, 25)
}
