package redrive

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/triage"
)

// countingSTS answers GetCallerIdentity (or fails with err) and counts the calls.
type countingSTS struct {
	arn   string
	err   error
	calls atomic.Int32
}

func (s *countingSTS) GetCallerIdentity(context.Context, *sts.GetCallerIdentityInput, ...func(*sts.Options)) (*sts.GetCallerIdentityOutput, error) {
	s.calls.Add(1)
	if s.err != nil {
		return nil, s.err
	}
	return &sts.GetCallerIdentityOutput{Arn: aws.String(s.arn), Account: aws.String("000000000000")}, nil
}

func TestLocality(t *testing.T) {
	t.Parallel()
	const (
		lo     = "http://127.0.0.1:4566"
		lo6    = "http://[::1]:8000"
		host   = "http://localhost:9000"
		awsSQS = "https://sqs.us-east-1.amazonaws.com"
		awsSTS = "https://sts.us-east-1.amazonaws.com"
		remote = "http://10.0.0.7:4566" // an emulator on another machine: not this one
	)
	ep := func(svc, url string) endpoint {
		return endpoint{Service: svc, URL: url, AWSOnly: svc == "STS" || svc == "Lambda"}
	}
	tests := []struct {
		name  string
		eps   []endpoint
		local bool
		code  Code // a refusal, "" for none
	}{
		{"all local, STS unset (make local-env)", []endpoint{ep("SQS", lo), ep("DynamoDB", host), ep("S3", lo6), ep("STS", "")}, true, ""},
		{"all local, STS local too", []endpoint{ep("SQS", lo), ep("DynamoDB", lo), ep("STS", lo)}, true, ""},
		{"all local, Lambda unset (pause uses the local switch)", []endpoint{ep("SQS", lo), ep("DynamoDB", lo), ep("STS", ""), ep("Lambda", "")}, true, ""},
		{"all AWS defaults", []endpoint{ep("SQS", ""), ep("DynamoDB", ""), ep("STS", "")}, false, ""},
		{"AWS, STS pinned to a regional AWS endpoint", []endpoint{ep("SQS", ""), ep("DynamoDB", ""), ep("STS", awsSTS)}, false, ""},
		// The hole of issue 12: the SQS endpoint alone decided.
		{"SQS local, DynamoDB AWS: mixed, checked", []endpoint{ep("SQS", lo), ep("DynamoDB", ""), ep("STS", "")}, false, ""},
		{"SQS local, S3 audit in AWS: mixed, checked", []endpoint{ep("SQS", lo), ep("DynamoDB", lo), ep("S3", ""), ep("STS", "")}, false, ""},
		{"local, but Lambda set to AWS: mixed, checked", []endpoint{ep("SQS", lo), ep("DynamoDB", lo), ep("STS", ""), ep("Lambda", "https://lambda.us-east-1.amazonaws.com")}, false, ""},
		{"local, but STS set to AWS: mixed, checked", []endpoint{ep("SQS", lo), ep("DynamoDB", lo), ep("STS", awsSTS)}, false, ""},
		{"an emulator on another host is not local", []endpoint{ep("SQS", remote), ep("DynamoDB", remote), ep("STS", "")}, false, ""},
		// A fake STS is never believed once the check must run.
		{"AWS SQS, local STS: refused", []endpoint{ep("SQS", awsSQS), ep("DynamoDB", ""), ep("STS", lo)}, false, CodeSTSEndpoint},
		{"AWS SQS, STS elsewhere: refused", []endpoint{ep("SQS", ""), ep("DynamoDB", ""), ep("STS", "https://sts.example.com")}, false, CodeSTSEndpoint},
		{"SQS local, DynamoDB AWS, STS local: refused", []endpoint{ep("SQS", lo), ep("DynamoDB", ""), ep("STS", lo)}, false, CodeSTSEndpoint},
		{"STS on an API Gateway host: refused", []endpoint{ep("SQS", ""), ep("DynamoDB", ""), ep("STS", "https://abc123.execute-api.us-east-1.amazonaws.com")}, false, CodeSTSEndpoint},
		{"STS over plain http: refused", []endpoint{ep("SQS", ""), ep("DynamoDB", ""), ep("STS", "http://sts.amazonaws.com")}, false, CodeSTSEndpoint},
		{"no STS named", []endpoint{ep("SQS", "")}, false, CodeSTSEndpoint},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			local, err := localityOf(tt.eps)
			assert.Equal(t, tt.local, local)
			if tt.code == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, ErrRefused)
			assert.Equal(t, tt.code, RefusalCode(err), err)
			assert.NotContains(t, err.Error(), "\n")
		})
	}
}

func TestIsAWSSTSEndpoint(t *testing.T) {
	t.Parallel()
	for url, want := range map[string]bool{
		"https://sts.amazonaws.com":                                              true,
		"https://sts.eu-west-1.amazonaws.com/":                                   true,
		"https://sts-fips.us-east-1.amazonaws.com":                               true,
		"https://sts.cn-north-1.amazonaws.com.cn":                                true,
		"https://sts.us-gov-west-1.amazonaws.com:443":                            true,
		"https://sts.us-east-1.api.aws":                                          true,
		"https://vpce-0a1b2c3d-4e5f.sts.eu-west-1.vpce.amazonaws.com":            true,
		"https://vpce-0a1b2c3d-4e5f-eu-west-1a.sts.eu-west-1.vpce.amazonaws.com": true,
		"https://STS.AMAZONAWS.COM":                                              true,
		"":                                                                       false,
		"http://sts.amazonaws.com":                                               false,
		"https://sts.amazonaws.com:8443":                                         false,
		"https://user:pw@sts.amazonaws.com":                                      false,
		"https://sts.amazonaws.com.evil.example":                                 false,
		"https://evilsts.amazonaws.com":                                          false,
		"https://x.execute-api.us-east-1.amazonaws.com":                          false,
		"https://sts.us-east-1.amazonaws.com.attacker.net":                       false,
		"https://bucket.s3.amazonaws.com":                                        false,
		"http://127.0.0.1:4566":                                                  false,
		"::not a url":                                                            false,
	} {
		assert.Equal(t, want, isAWSSTSEndpoint(url), url)
	}
}

// In AWS every record of a command carries the STS caller, and STS is asked
// once however many records the command writes.
func TestEveryRecordCarriesTheCaller(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	const arn = "arn:aws:sts::000000000000:assumed-role/AgentTasksRedrive/alice"
	inAWS := func(t *testing.T, st *countingSTS) (*Redriver, *memStore, *fakeSQS, pipeline.Queues) {
		f := newFakeSQS()
		q := f.addPair(p)
		seed(t, f, q, 2, deadletter.ReasonBudgetExhausted)
		f.Queue(q.DLQURL).Tags[pipeline.TagRedriveRole] = "arn:aws:iam::000000000000:role/AgentTasksRedrive"
		r, store, _ := newRedriver(t, p, f, q)
		r.local, r.cfg.STS = false, st
		return r, store, f, q
	}
	want := &audit.Caller{Check: audit.CallerSTS, ARN: arn, Account: "000000000000", OSUser: audit.OSUser()}

	t.Run("select: begun and done", func(t *testing.T) {
		t.Parallel()
		st := &countingSTS{arn: arn}
		r, store, _, _ := inAWS(t, st)
		res, err := r.Select(context.Background(), selReq(p, deadletter.ReasonBudgetExhausted))
		require.NoError(t, err)
		assert.Equal(t, 2, res.Moved)
		recs := store.all()
		require.Len(t, recs, 2)
		for _, rec := range recs {
			assert.Equal(t, want, rec.Caller, rec.Outcome)
		}
		assert.EqualValues(t, 1, st.calls.Load(), "one STS call per command")
	})
	t.Run("plan and status: not gated, still identified", func(t *testing.T) {
		t.Parallel()
		st := &countingSTS{arn: arn}
		r, store, _, _ := inAWS(t, st)
		r.cfg.Scan = func(context.Context) (*triage.Report, error) { return &triage.Report{}, nil }
		_, err := r.Plan(context.Background(), PlanRequest{Actor: "alice"})
		require.NoError(t, err)
		_, err = r.Status(context.Background(), StatusRequest{Actor: "alice"})
		require.NoError(t, err)
		for _, rec := range store.all() {
			assert.Equal(t, want, rec.Caller, rec.Action)
		}
		assert.EqualValues(t, 1, st.calls.Load())
	})
	t.Run("refused before STS: OS user, not checked, no call", func(t *testing.T) {
		t.Parallel()
		st := &countingSTS{arn: arn}
		r, store, _, _ := inAWS(t, st)
		req := selReq(p, deadletter.ReasonBudgetExhausted)
		req.Why = " "
		_, err := r.Select(context.Background(), req)
		assert.Equal(t, CodeWhy, RefusalCode(err))
		recs := store.all()
		require.Len(t, recs, 1)
		assert.Equal(t, &audit.Caller{Check: audit.CallerNotChecked, OSUser: audit.OSUser()}, recs[0].Caller)
		assert.Zero(t, st.calls.Load())
	})
	t.Run("identified first: a refusal of the pure checks names the STS caller", func(t *testing.T) {
		t.Parallel()
		st := &countingSTS{arn: arn}
		r, store, _, _ := inAWS(t, st)
		c, err := r.Identify(context.Background())
		require.NoError(t, err)
		assert.Equal(t, *want, c)
		_, err = r.Reconcile(context.Background(), ReconcileRequest{Who: Who{Owner: "mallory", Why: "x"}, Key: "k", Outcome: ledger.OutcomeNoEffect})
		assert.Equal(t, CodeOwner, RefusalCode(err))
		recs := store.all()
		require.Len(t, recs, 1)
		assert.Equal(t, want, recs[0].Caller)
		assert.EqualValues(t, 1, st.calls.Load(), "the gate asks no more")
	})
	t.Run("refused by the identity check: the ARN refused is recorded", func(t *testing.T) {
		t.Parallel()
		st := &countingSTS{arn: "arn:aws:sts::000000000000:assumed-role/PowerUser/mallory"}
		r, store, f, q := inAWS(t, st)
		_, err := r.Select(context.Background(), selReq(p, deadletter.ReasonBudgetExhausted))
		assert.Equal(t, CodeIdentity, RefusalCode(err))
		recs := store.all()
		require.Len(t, recs, 1)
		assert.Equal(t, audit.OutcomeRefused, recs[0].Outcome)
		assert.Equal(t, "arn:aws:sts::000000000000:assumed-role/PowerUser/mallory", recs[0].Caller.ARN)
		assert.Equal(t, audit.CallerSTS, recs[0].Caller.Check)
		assert.Empty(t, f.snapshot(q.HotURL))
	})
	t.Run("STS fails: refused, the failure recorded", func(t *testing.T) {
		t.Parallel()
		st := &countingSTS{err: errors.New("ExpiredToken: the security token included in the request is expired")}
		r, store, _, _ := inAWS(t, st)
		_, err := r.Select(context.Background(), selReq(p, deadletter.ReasonBudgetExhausted))
		assert.Equal(t, CodeIdentity, RefusalCode(err))
		recs := store.all()
		require.Len(t, recs, 1)
		assert.Equal(t, audit.CallerSTSFailed, recs[0].Caller.Check)
		assert.Contains(t, recs[0].Caller.Error, "ExpiredToken")
		assert.Empty(t, recs[0].Caller.ARN)
	})
	t.Run("local: the OS user, no STS", func(t *testing.T) {
		t.Parallel()
		f := newFakeSQS()
		q := f.addPair(p)
		seed(t, f, q, 1, deadletter.ReasonBudgetExhausted)
		r, store, _ := newRedriver(t, p, f, q)
		_, err := r.Select(context.Background(), selReq(p, deadletter.ReasonBudgetExhausted))
		require.NoError(t, err)
		for _, rec := range store.all() {
			assert.Equal(t, &audit.Caller{Check: audit.CallerLocal, OSUser: audit.OSUser()}, rec.Caller)
		}
	})
}

// A refusal before any Redriver (bad flags) records the OS user, not
// checked; records written before the caller field still read.
func TestAuditCallerField(t *testing.T) {
	t.Parallel()
	store := &memStore{}
	a := &audit.Auditor{Store: store}
	err := Refuse(context.Background(), a, "agent-tasks", audit.ActionSelect, Who{Owner: "x"}, errors.New("--rate: not a number"))
	assert.Equal(t, CodeBadInput, RefusalCode(err))
	recs := store.all()
	require.Len(t, recs, 1)
	require.NotNil(t, recs[0].Caller)
	assert.Equal(t, audit.CallerNotChecked, recs[0].Caller.Check)
	assert.NotEmpty(t, recs[0].Caller.OSUser)

	b, err := json.Marshal(audit.Entry{Actor: "platform-oncall", Action: audit.ActionSelect, Outcome: audit.OutcomeOK,
		Caller: &audit.Caller{Check: audit.CallerSTS, ARN: "arn:aws:sts::1:assumed-role/R/s", Account: "1", OSUser: "alice"}})
	require.NoError(t, err)
	assert.Contains(t, string(b), `"caller":{"check":"sts","arn":"arn:aws:sts::1:assumed-role/R/s","account":"1","os_user":"alice"}`)

	var old audit.Entry
	require.NoError(t, json.Unmarshal([]byte(`{"time":"2026-11-29T12:00:00Z","actor":"platform-oncall","pipeline":"agent-tasks","action":"plan","outcome":"shown"}`), &old))
	assert.Nil(t, old.Caller)
	assert.Equal(t, audit.ActionPlan, old.Action)
	// An old reader (no caller field) reads a new record.
	var oldReader struct {
		Actor   string `json:"actor"`
		Outcome string `json:"outcome"`
	}
	require.NoError(t, json.Unmarshal(b, &oldReader))
	assert.Equal(t, "platform-oncall", oldReader.Actor)
}
