package main

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
	"github.com/agentdlq/agentdlq/triage/dlq"
)

// The library's next steps are data; the CLI spells them as the command
// lines an operator runs.
func TestStepCommand(t *testing.T) {
	p := &pipeline.Pipeline{Name: "agent-tasks", Owner: "platform-oncall"}
	tests := []struct {
		name string
		step redrivetype.Step
		want string
	}{
		{"select with a canary", redrivetype.Step{Action: audit.ActionSelect, Reason: deadletter.ReasonBudgetExhausted, Fingerprint: "fp-be", Canary: 5},
			"agentdlq redrive select --pipeline agent-tasks --reason budget_exhausted --fingerprint fp-be --owner platform-oncall --why '<why>' --rate 10 --canary 5"},
		{"select after the fix", redrivetype.Step{Action: audit.ActionSelect, Reason: deadletter.ReasonSchemaInvalid, Canary: 4, Needs: []string{"Ack.FixDeployed"}},
			"agentdlq redrive select --pipeline agent-tasks --reason schema_invalid --owner platform-oncall --why '<why>' --rate 10 --fix-deployed '<deployed fix ref>' --canary 4"},
		{"select after a review", redrivetype.Step{Action: audit.ActionSelect, Reason: deadletter.ReasonReceiveLimit, Canary: 1, Needs: []string{"Ack.Reviewed"}},
			"agentdlq redrive select --pipeline agent-tasks --reason receive_limit --owner platform-oncall --why '<why>' --rate 10 --reviewed '<what the review found>' --canary 1"},
		{"select with an override", redrivetype.Step{Action: audit.ActionSelect, Reason: deadletter.ReasonPolicyLimit, Needs: []string{"Ack.Overrides"}},
			"agentdlq redrive select --pipeline agent-tasks --reason policy_limit --owner platform-oncall --why '<why>' --rate 10 --override policy_limit=JUSTIFICATION"},
		{"reject", redrivetype.Step{Action: audit.ActionReject, Reason: deadletter.ReasonPolicyLimit, Fingerprint: "fp-pl"},
			"agentdlq redrive reject --pipeline agent-tasks --reason policy_limit --fingerprint fp-pl --owner platform-oncall --why '<why>'"},
		{"reconcile", redrivetype.Step{Action: audit.ActionReconcile, Reason: deadletter.ReasonEffectUnknown, Needs: []string{"Key", "Outcome"}},
			"agentdlq triage --pipeline agent-tasks --keys; agentdlq ledger get --key K; agentdlq ledger reconcile --pipeline agent-tasks --key K --no-effect|--effect-confirmed RECEIPT --owner platform-oncall --why '<what the external system shows>'"},
		{"start", redrivetype.Step{Action: audit.ActionStart}, "agentdlq redrive start --pipeline agent-tasks --owner platform-oncall --why '<why>' --rate 10"},
		{"plan", redrivetype.Step{Action: audit.ActionPlan}, "agentdlq redrive plan --pipeline agent-tasks"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, stepCommand(p, tt.step))
		})
	}
	assert.Equal(t, "nothing to do: already rejected", stepsCommand(p, nil, dlq.Filter{}))
	assert.Contains(t, stepsCommand(p, []redrivetype.Step{tests[5].step, tests[0].step}, dlq.Filter{}), "; then (moves only the keys reconciled as no effect): agentdlq redrive select")
	assert.Equal(t, "'on call'", shq("on call"))
}

// A refusal is told with the flag at fault and its next steps as commands;
// errors.Is and the exit code see through it.
func TestInFlags(t *testing.T) {
	p := &pipeline.Pipeline{Name: "agent-tasks", Owner: "platform-oncall"}
	rf := &redrive.Refusal{Code: redrivetype.CodeUnknownGroup, Field: "Fingerprints", Reason: "abc: no group has it",
		Next: []redrivetype.Step{{Action: audit.ActionPlan}}}
	err := inFlags(fmt.Errorf("select: %w", rf), p)
	assert.Equal(t, "select: refused (unknown_fingerprint): --fingerprint abc: no group has it\n  next: agentdlq redrive plan --pipeline agent-tasks", err.Error())
	assert.ErrorIs(t, err, redrive.ErrRefused)
	assert.Equal(t, exitRefused, exitCode(err))
	plain := errors.New("throttled")
	assert.Equal(t, plain, inFlags(plain, p))
}
