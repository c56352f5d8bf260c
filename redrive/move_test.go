package redrive

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/report"
)

func transientGroups(n int) []Group { return []Group{{deadletter.ReasonBudgetExhausted, "fp-be", n}} }

func TestStartRefusals(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	ok := StartRequest{Who: Who{Owner: p.Owner, Why: "upstream 503s over"}, Rate: 50, Groups: transientGroups(3)}
	tests := []struct {
		name  string
		setup func(f *fakeSQS, q pipeline.Queues, r *Redriver)
		req   func(StartRequest) StartRequest
		code  redrivetype.Code // want: the refusal code
	}{
		{"wrong owner", nil, func(s StartRequest) StartRequest { s.Owner = "mallory"; return s }, redrivetype.CodeOwner},
		{"missing why", nil, func(s StartRequest) StartRequest { s.Why = ""; return s }, redrivetype.CodeWhy},
		{"rate 0", nil, func(s StartRequest) StartRequest { s.Rate = 0; return s }, redrivetype.CodeRate},
		{"rate above 500", nil, func(s StartRequest) StartRequest { s.Rate = 501; return s }, redrivetype.CodeRate},
		{"forbidden group without override", nil, func(s StartRequest) StartRequest {
			s.Groups = append(s.Groups, Group{deadletter.ReasonPolicyLimit, "fp-pl", 1})
			return s
		}, redrivetype.CodeForbidden},
		{"poison without the fix", nil, func(s StartRequest) StartRequest {
			s.Groups = append(s.Groups, Group{deadletter.ReasonSchemaInvalid, "fp-si", 1})
			return s
		}, redrivetype.CodeForbidden},
		{"owner tag mismatch", func(f *fakeSQS, q pipeline.Queues, _ *Redriver) {
			f.Queue(q.DLQURL).Tags[pipeline.TagOwner] = "someone-else"
		}, nil, redrivetype.CodeOwnerTag},
		{"another destination", nil, func(s StartRequest) StartRequest {
			s.Destination = "arn:aws:sqs:us-east-1:000000000000:other"
			return s
		}, redrivetype.CodeDestination},
		{"hot queue dead-letters elsewhere", func(f *fakeSQS, q pipeline.Queues, _ *Redriver) {
			f.Queue(q.HotURL).Attributes["RedrivePolicy"] = `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:other-dlq","maxReceiveCount":4}`
		}, nil, redrivetype.CodeDestination},
		{"a task is running", func(f *fakeSQS, q pipeline.Queues, _ *Redriver) {
			f.MoveTasks = []sqstypes.ListMessageMoveTasksResultEntry{{TaskHandle: aws.String("t0"), Status: aws.String("RUNNING"), SourceArn: aws.String(q.DLQARN)}}
		}, nil, redrivetype.CodeTaskActive},
		{"empty DLQ", nil, func(s StartRequest) StartRequest { s.Groups = nil; return s }, redrivetype.CodeDLQEmpty},
		{"DLQ missing", func(f *fakeSQS, q pipeline.Queues, _ *Redriver) { f.RemoveQueue(q.DLQURL) }, nil, redrivetype.CodeDLQMissing},
		{"AWS: caller is not the redrive role", func(f *fakeSQS, q pipeline.Queues, r *Redriver) {
			f.Queue(q.DLQURL).Tags[pipeline.TagRedriveRole] = "AgentTasksRedrive"
			r.local, r.cfg.STS = false, fakeSTS{arn: "arn:aws:sts::123456789012:assumed-role/Developer/bob"}
		}, nil, redrivetype.CodeIdentity},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeSQS()
			q := f.addPair(p)
			r, store, _ := newRedriver(t, p, f, q)
			if tt.setup != nil {
				tt.setup(f, q, r)
			}
			req := ok
			if tt.req != nil {
				req = tt.req(ok)
			}
			_, err := r.Start(context.Background(), req)
			require.ErrorIs(t, err, ErrRefused)
			assert.Equal(t, tt.code, RefusalCode(err), err)
			assert.Empty(t, f.Started, "nothing started")
			recs := store.all()
			require.Len(t, recs, 1, "the refusal is audited")
			assert.Equal(t, audit.OutcomeRefused, recs[0].Outcome)
			assert.Equal(t, audit.ActionStart, recs[0].Action)
			assert.NotEmpty(t, recs[0].Error)
		})
	}
}

// A move task moves everything: on a partial scan start does not run, and
// says so as its own outcome (not a refusal of the request).
func TestStartOnAPartialScan(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f := newFakeSQS()
	q := f.addPair(p)
	r, store, _ := newRedriver(t, p, f, q)
	_, err := r.Start(context.Background(), StartRequest{Who: Who{Owner: p.Owner, Why: "503s over"}, Rate: 10,
		Groups: transientGroups(2), ScanPartial: "stopped at the message bound (10)"})
	require.ErrorIs(t, err, triage.ErrScanPartial)
	assert.NotErrorIs(t, err, ErrRefused)
	assert.Contains(t, err.Error(), "stopped at the message bound (10)")
	assert.Empty(t, f.Started, "nothing started")
	recs := store.all()
	require.Len(t, recs, 1)
	assert.Equal(t, audit.OutcomePartial, recs[0].Outcome)
}

func TestStartWithOverrideStatusAndCancel(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f := newFakeSQS()
	q := f.addPair(p)
	r, store, _ := newRedriver(t, p, f, q)
	r.local, r.cfg.STS = false, fakeSTS{arn: "arn:aws:sts::000000000000:assumed-role/AgentTasksRedrive/alice"}
	f.Queue(q.DLQURL).Tags[pipeline.TagRedriveRole] = "arn:aws:iam::000000000000:role/AgentTasksRedrive"
	ctx := context.Background()
	req := StartRequest{Who: Who{Owner: p.Owner, Why: "cap raised for tenant acme"}, Rate: 500,
		Groups: append(transientGroups(2), Group{deadletter.ReasonPolicyLimit, "fp-pl", 1}),
		Ack:    Ack{Overrides: map[deadletter.Reason]string{deadletter.ReasonPolicyLimit: "cap raised, INC-7"}}}
	task, err := r.Start(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, "task-1", task.TaskHandle)
	require.Len(t, f.Started, 1)
	assert.Equal(t, q.DLQARN, aws.ToString(f.Started[0].SourceArn))
	assert.Equal(t, q.HotARN, aws.ToString(f.Started[0].DestinationArn))
	assert.Equal(t, int32(500), aws.ToInt32(f.Started[0].MaxNumberOfMessagesPerSecond))

	_, err = r.Start(ctx, req)
	assert.Equal(t, redrivetype.CodeTaskActive, RefusalCode(err), "one active task a queue")

	tasks, err := r.Status(ctx, StatusRequest{Actor: "alice"})
	require.NoError(t, err)
	require.Len(t, tasks, 1)
	assert.Equal(t, "RUNNING", tasks[0].Status)
	assert.Equal(t, "0/?", progress(tasks[0]))

	_, err = r.Cancel(ctx, CancelRequest{Who: Who{Owner: "mallory", Why: "x"}})
	assert.Equal(t, redrivetype.CodeOwner, RefusalCode(err))
	_, err = r.Cancel(ctx, CancelRequest{Who: Who{Owner: p.Owner, Why: "wrong fix, stop"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"task-1"}, f.Canceled)
	_, err = r.Cancel(ctx, CancelRequest{Who: Who{Owner: p.Owner, Why: "again"}})
	assert.Equal(t, redrivetype.CodeNoTask, RefusalCode(err))

	var actions []string
	for _, rec := range store.all() {
		actions = append(actions, string(rec.Action)+":"+string(rec.Outcome))
	}
	assert.Equal(t, []string{"start:ok", "start:refused", "status:shown", "cancel:refused", "cancel:canceled", "cancel:refused"}, actions)
	first := store.all()[0]
	assert.Equal(t, "cap raised, INC-7", first.Detail["override.policy_limit"])
	assert.Equal(t, "task-1", first.Detail["task_handle"])
	assert.Equal(t, q.HotARN, first.Detail["destination_arn"])
}

// sqsServer is an httptest SQS endpoint speaking the AWS JSON 1.0 protocol:
// it answers the gate's and the destination check's calls for a hot queue
// and DLQ pair and records every request.
type sqsServer struct {
	mu       sync.Mutex
	requests map[string][]capturedRequest // by operation
	q        pipeline.Queues
	p        *pipeline.Pipeline
	// unsupported answers move task operations like fauxqs does.
	unsupported bool
}

type capturedRequest struct {
	header http.Header
	body   []byte
}

func (s *sqsServer) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	op := strings.TrimPrefix(req.Header.Get("X-Amz-Target"), "AmazonSQS.")
	s.mu.Lock()
	s.requests[op] = append(s.requests[op], capturedRequest{header: req.Header.Clone(), body: body})
	s.mu.Unlock()
	var in struct{ QueueUrl string }
	_ = json.Unmarshal(body, &in)
	reply := func(v any) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_ = json.NewEncoder(w).Encode(v)
	}
	switch op {
	case "ListQueueTags":
		reply(map[string]any{"Tags": map[string]string{pipeline.TagOwner: s.p.Owner, pipeline.TagPipeline: s.p.Name}})
	case "GetQueueAttributes":
		if in.QueueUrl == s.q.HotURL {
			reply(map[string]any{"Attributes": map[string]string{"QueueArn": s.q.HotARN,
				"RedrivePolicy": `{"deadLetterTargetArn":"` + s.q.DLQARN + `","maxReceiveCount":4}`}})
			return
		}
		reply(map[string]any{"Attributes": map[string]string{"QueueArn": s.q.DLQARN, "ApproximateNumberOfMessages": "3",
			"RedriveAllowPolicy": `{"redrivePermission":"byQueue","sourceQueueArns":["` + s.q.HotARN + `"]}`}})
	case "ListMessageMoveTasks", "StartMessageMoveTask", "CancelMessageMoveTask":
		if s.unsupported {
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"__type":"com.amazonaws.sqs#InvalidAction","message":"Unknown action: ` + op + `"}`))
			return
		}
		if op == "ListMessageMoveTasks" {
			reply(map[string]any{"Results": []any{}})
			return
		}
		reply(map[string]any{"TaskHandle": "eyJ0YXNrSWQiOiJ4In0="})
	default:
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"__type":"com.amazonaws.sqs#InvalidAction","message":"unexpected"}`))
	}
}

func newServerRedriver(t *testing.T, unsupported bool) (*Redriver, *sqsServer, *memStore) {
	t.Helper()
	p := testPipeline(t, "agent-tasks")
	srv := &sqsServer{requests: map[string][]capturedRequest{}, p: p, unsupported: unsupported}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	srv.q = pipeline.Queues{
		HotURL: ts.URL + "/000000000000/agent-tasks", HotARN: "arn:aws:sqs:us-east-1:000000000000:agent-tasks",
		DLQURL: ts.URL + "/000000000000/agent-tasks-dlq", DLQARN: "arn:aws:sqs:us-east-1:000000000000:agent-tasks-dlq",
	}
	client := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(ts.URL),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	r, store, _ := newRedriver(t, p, newFakeSQS(), srv.q)
	r.cfg.SQS = client
	local, err := Locality(r.cfg)
	require.NoError(t, err)
	require.True(t, local, "httptest listens on loopback")
	return r, srv, store
}

// The local emulator has no move tasks, so the request start sends is
// checked as the SDK serializes it.
func TestStartSerializedRequest(t *testing.T) {
	t.Parallel()
	r, srv, _ := newServerRedriver(t, false)
	task, err := r.Start(context.Background(), StartRequest{Who: Who{Owner: r.cfg.Pipeline.Owner, Why: "503s over"}, Rate: 37, Groups: transientGroups(3)})
	require.NoError(t, err)
	assert.Equal(t, "eyJ0YXNrSWQiOiJ4In0=", task.TaskHandle)
	reqs := srv.requests["StartMessageMoveTask"]
	require.Len(t, reqs, 1)
	got := reqs[0]
	assert.Equal(t, "AmazonSQS.StartMessageMoveTask", got.header.Get("X-Amz-Target"))
	assert.Equal(t, "application/x-amz-json-1.0", got.header.Get("Content-Type"))
	assert.Contains(t, got.header.Get("Authorization"), "AWS4-HMAC-SHA256")
	var body map[string]any
	require.NoError(t, json.Unmarshal(got.body, &body), string(got.body))
	assert.Equal(t, map[string]any{
		"SourceArn":                    "arn:aws:sqs:us-east-1:000000000000:agent-tasks-dlq",
		"DestinationArn":               "arn:aws:sqs:us-east-1:000000000000:agent-tasks",
		"MaxNumberOfMessagesPerSecond": float64(37),
	}, body)
	// The gate and the checks ran before it, in this order.
	assert.Len(t, srv.requests["ListQueueTags"], 1)
	assert.Len(t, srv.requests["ListMessageMoveTasks"], 1)
}

func TestStartUnsupportedEndpoint(t *testing.T) {
	t.Parallel()
	r, srv, store := newServerRedriver(t, true)
	_, err := r.Start(context.Background(), StartRequest{Who: Who{Owner: r.cfg.Pipeline.Owner, Why: "503s over"}, Rate: 10, Groups: transientGroups(3)})
	require.ErrorIs(t, err, ErrUnsupported)
	assert.Contains(t, err.Error(), "redrive selectively")
	assert.Contains(t, err.Error(), "InvalidAction")
	assert.Empty(t, srv.requests["StartMessageMoveTask"], "refused at ListMessageMoveTasks, before any start")
	_, err = r.Status(context.Background(), StatusRequest{Actor: "alice"})
	assert.ErrorIs(t, err, ErrUnsupported)
	recs := store.all()
	require.Len(t, recs, 2)
	assert.Equal(t, audit.OutcomeFailed, recs[0].Outcome)
}

// start reads the owner's past rejections: a rejected group is told as
// rejected (a move task would move it anyway), and never offered a
// rejection again; the next steps are the others' selects.
func TestStartReadsPastRejections(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f := newFakeSQS()
	q := f.addPair(p)
	r, _, _ := newRedriver(t, p, f, q)
	r.cfg.Audit.Store = &audit.FileStore{Path: filepath.Join(t.TempDir(), "audit.jsonl")} // one that reads back
	ctx := context.Background()
	groups := append(transientGroups(3), Group{deadletter.ReasonPolicyLimit, "fp-pl", 1})
	who := Who{Owner: p.Owner, Why: "quota raised"}

	_, err := r.Start(ctx, StartRequest{Who: who, Rate: 10, Groups: groups})
	var rf *Refusal
	require.ErrorAs(t, err, &rf)
	assert.Equal(t, []redrivetype.Step{{Action: audit.ActionReject, Reason: deadletter.ReasonPolicyLimit}}, rf.Next, "before the rejection: reject it")

	_, err = r.Reject(ctx, RejectRequest{Who: who, Reasons: []deadletter.Reason{deadletter.ReasonPolicyLimit}, Groups: groups})
	require.NoError(t, err)
	_, err = r.Start(ctx, StartRequest{Who: who, Rate: 10, Groups: groups})
	require.ErrorAs(t, err, &rf)
	assert.Equal(t, redrivetype.CodeForbidden, rf.Code, "a move task would move the rejected group: still refused")
	assert.Contains(t, rf.Reason, "policy_limit 1 (rejected: never redriven, and a move task would move them anyway)")
	assert.Equal(t, []redrivetype.Step{{Action: audit.ActionSelect, Reason: deadletter.ReasonBudgetExhausted, Canary: 1}}, rf.Next, "no rejection again: the others, selectively")
	assert.Empty(t, f.Started)

	// Dead letters that arrived after the rejection: decide again, as the
	// plan says (the scan's report says when the group's latest arrived).
	r.cfg.Scan = func(context.Context) (*report.Report, error) {
		return &report.Report{Groups: []report.Group{
			{Reason: deadletter.ReasonBudgetExhausted, Fingerprint: "fp-be", Count: 3},
			{Reason: deadletter.ReasonPolicyLimit, Fingerprint: "fp-pl", Count: 2, LastSeen: time.Now().Add(time.Hour)},
		}}, nil
	}
	_, err = r.Start(ctx, StartRequest{Who: who, Rate: 10})
	require.ErrorAs(t, err, &rf)
	assert.Equal(t, []redrivetype.Step{{Action: audit.ActionReject, Reason: deadletter.ReasonPolicyLimit}}, rf.Next, "arrived since: reject again")
}

// Where move tasks do not exist (the local emulator), start says so, beside
// the groups a move task may not move, and points to select.
func TestStartWhereMoveTasksDoNotExist(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	f := newFakeSQS()
	q := f.addPair(p)
	f.StartErr = &smithy.GenericAPIError{Code: "UnknownOperationException", Message: "unknown operation"}
	r, _, _ := newRedriver(t, p, f, q)
	ctx := context.Background()
	who := Who{Owner: p.Owner, Why: "quota raised"}

	_, err := r.Start(ctx, StartRequest{Who: who, Rate: 10, Groups: transientGroups(3)})
	require.ErrorIs(t, err, ErrUnsupported)
	assert.Contains(t, err.Error(), "The local emulator (fauxqs) has no move tasks: redrive selectively")

	_, err = r.Start(ctx, StartRequest{Who: who, Rate: 10, Groups: append(transientGroups(3), Group{deadletter.ReasonPolicyLimit, "fp-pl", 1})})
	assert.Equal(t, redrivetype.CodeForbidden, RefusalCode(err))
	assert.Contains(t, err.Error(), "this endpoint has no message move tasks (the local emulator, fauxqs, has no StartMessageMoveTask): redrive selectively")
}
