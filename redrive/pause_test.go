package redrive

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
)

// fakeLambda is LambdaAPI with behaviour switches: how many mappings the
// hot queue has, and whether the update fails.
type fakeLambda struct {
	mappings  int
	updateErr error
	enabled   map[string]bool // UUID → Enabled after the last update
}

var _ LambdaAPI = (*fakeLambda)(nil)

func (f *fakeLambda) ListEventSourceMappings(_ context.Context, in *lambda.ListEventSourceMappingsInput, _ ...func(*lambda.Options)) (*lambda.ListEventSourceMappingsOutput, error) {
	out := &lambda.ListEventSourceMappingsOutput{}
	for i := range f.mappings {
		out.EventSourceMappings = append(out.EventSourceMappings, lambdatypes.EventSourceMappingConfiguration{
			UUID: aws.String("uuid-" + string(rune('a'+i))), EventSourceArn: in.EventSourceArn})
	}
	return out, nil
}

func (f *fakeLambda) UpdateEventSourceMapping(_ context.Context, in *lambda.UpdateEventSourceMappingInput, _ ...func(*lambda.Options)) (*lambda.UpdateEventSourceMappingOutput, error) {
	if f.updateErr != nil {
		return nil, f.updateErr
	}
	f.enabled[aws.ToString(in.UUID)] = aws.ToBool(in.Enabled)
	state := "Enabling"
	if !aws.ToBool(in.Enabled) {
		state = "Disabling"
	}
	return &lambda.UpdateEventSourceMappingOutput{UUID: in.UUID, State: aws.String(state), FunctionArn: aws.String("arn:aws:lambda:us-east-1:1:function:worker")}, nil
}

func TestPauseAndResume(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, "agent-tasks")
	tests := []struct {
		name    string
		lambda  *fakeLambda
		who     Who
		paused  bool
		code    redrivetype.Code // the refusal's code, "" when none
		failed  bool             // an error that is not a refusal
		enabled *bool            // want: the mapping's Enabled afterwards (nil: untouched)
		outcome audit.Outcome    // want: the audit entry's outcome
		wantAct audit.Action
	}{
		{name: "pause disables the mapping", lambda: &fakeLambda{mappings: 1}, who: Who{Owner: p.Owner, Why: "INC-9: stop the bleeding"}, paused: true,
			enabled: aws.Bool(false), outcome: audit.OutcomeOK, wantAct: audit.ActionPause},
		{name: "resume enables it", lambda: &fakeLambda{mappings: 1}, who: Who{Owner: p.Owner, Why: "fix deployed"}, paused: false,
			enabled: aws.Bool(true), outcome: audit.OutcomeOK, wantAct: audit.ActionResume},
		{name: "not the owner", lambda: &fakeLambda{mappings: 1}, who: Who{Owner: "mallory", Why: "x"}, paused: true,
			code: redrivetype.CodeOwner, outcome: audit.OutcomeRefused, wantAct: audit.ActionPause},
		{name: "no why", lambda: &fakeLambda{mappings: 1}, who: Who{Owner: p.Owner}, paused: true,
			code: redrivetype.CodeWhy, outcome: audit.OutcomeRefused, wantAct: audit.ActionPause},
		{name: "no mapping", lambda: &fakeLambda{}, who: Who{Owner: p.Owner, Why: "x"}, paused: true,
			code: redrivetype.CodeNoMapping, outcome: audit.OutcomeRefused, wantAct: audit.ActionPause},
		{name: "two mappings", lambda: &fakeLambda{mappings: 2}, who: Who{Owner: p.Owner, Why: "x"}, paused: true,
			code: redrivetype.CodeNoMapping, outcome: audit.OutcomeRefused, wantAct: audit.ActionPause},
		{name: "the update fails", lambda: &fakeLambda{mappings: 1, updateErr: errors.New("AccessDenied")}, who: Who{Owner: p.Owner, Why: "x"}, paused: true,
			failed: true, outcome: audit.OutcomeFailed, wantAct: audit.ActionPause},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeSQS()
			q := f.addPair(p)
			r, store, _ := newRedriver(t, p, f, q)
			tt.lambda.enabled = map[string]bool{}
			r.cfg.Lambda = tt.lambda
			res, err := r.Pause(context.Background(), PauseRequest{Who: tt.who, Paused: tt.paused})
			assert.Equal(t, tt.code, RefusalCode(err), "err: %v", err)
			assert.Equal(t, tt.failed, err != nil && tt.code == "", "err: %v", err)
			if tt.enabled != nil {
				require.NotNil(t, res)
				assert.Equal(t, map[string]bool{"uuid-a": *tt.enabled}, tt.lambda.enabled)
				assert.Equal(t, tt.paused, res.Paused)
			} else {
				assert.Empty(t, tt.lambda.enabled, "the mapping is untouched")
			}
			recs := store.all()
			require.Len(t, recs, 1)
			assert.Equal(t, tt.wantAct, recs[0].Action)
			assert.Equal(t, tt.outcome, recs[0].Outcome)
			assert.Empty(t, f.snapshot(q.DLQURL), "pause and resume never touch the DLQ")
			assert.Empty(t, f.snapshot(q.HotURL))
		})
	}
}
