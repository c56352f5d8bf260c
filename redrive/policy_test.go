package redrive

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
)

func TestDecide(t *testing.T) {
	t.Parallel()
	over := func(r deadletter.Reason) Ack {
		return Ack{Overrides: map[deadletter.Reason]string{r: "reconciled with the CRM, INC-42"}}
	}
	tests := []struct {
		name    string
		reason  deadletter.Reason
		ack     Ack
		allowed bool   // want: may be redriven
		via     string // want: what allowed it
		needs   string // want: the flag that would allow it
	}{
		{"transient exhausted is redrivable", deadletter.ReasonBudgetExhausted, Ack{}, true, "policy", ""},
		{"dependency open is redrivable", deadletter.ReasonDependencyOpen, Ack{}, true, "policy", ""},
		{"poison needs the fix", deadletter.ReasonSchemaInvalid, Ack{}, false, "", "Ack.FixDeployed"},
		{"poison after the fix", deadletter.ReasonSchemaInvalid, Ack{FixDeployed: "v1.4.2"}, true, "fix_deployed", ""},
		{"blank fix ref is no fix", deadletter.ReasonToolUnknown, Ack{FixDeployed: "  "}, false, "", "Ack.FixDeployed"},
		{"unclassified needs the fix", deadletter.ReasonUnclassified, Ack{}, false, "", "Ack.FixDeployed"},
		{"auth_config after the fix", deadletter.ReasonAuthConfig, Ack{FixDeployed: "iam-change-7"}, true, "fix_deployed", ""},
		{"receive_limit needs a review", deadletter.ReasonReceiveLimit, Ack{}, false, "", "Ack.Reviewed"},
		{"receive_limit reviewed", deadletter.ReasonReceiveLimit, Ack{Reviewed: "OOM fixed: memory 512"}, true, "reviewed", ""},
		{"receive_limit: a fix ref is not a review", deadletter.ReasonReceiveLimit, Ack{FixDeployed: "x"}, false, "", "Ack.Reviewed"},
		{"effect_unknown never blindly", deadletter.ReasonEffectUnknown, Ack{FixDeployed: "x", Reviewed: "y"}, false, "", "Ack.Overrides"},
		{"effect_unknown overridden after reconciling", deadletter.ReasonEffectUnknown, over(deadletter.ReasonEffectUnknown), true, "override", ""},
		{"signature_invalid never", deadletter.ReasonSignatureInvalid, Ack{FixDeployed: "x"}, false, "", "Ack.Overrides"},
		{"guardrail_reject never", deadletter.ReasonGuardrailReject, Ack{}, false, "", "Ack.Overrides"},
		{"policy_limit never", deadletter.ReasonPolicyLimit, Ack{}, false, "", "Ack.Overrides"},
		{"redrive_loop never", deadletter.ReasonRedriveLoop, Ack{}, false, "", "Ack.Overrides"},
		{"redrive_loop overridden", deadletter.ReasonRedriveLoop, over(deadletter.ReasonRedriveLoop), true, "override", ""},
		{"an override of another reason does not count", deadletter.ReasonPolicyLimit, over(deadletter.ReasonRedriveLoop), false, "", "Ack.Overrides"},
		{"unknown reason", deadletter.Reason("nope"), Ack{}, false, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := Decide(tt.reason, tt.ack)
			assert.Equal(t, tt.allowed, v.Allowed, v.Why)
			assert.Equal(t, tt.via, v.Via)
			assert.Equal(t, tt.needs, v.Needs)
			assert.NotEmpty(t, v.Why)
		})
	}
}

func TestEveryReasonHasAPolicy(t *testing.T) {
	t.Parallel()
	for _, r := range deadletter.AllReasons() {
		v := Decide(r, Ack{})
		assert.Equal(t, r.Redrivable() == deadletter.RedriveYes, v.Allowed, r)
		full := Decide(r, Ack{FixDeployed: "f", Reviewed: "r", Overrides: map[deadletter.Reason]string{r: "j"}})
		assert.True(t, full.Allowed, "%s: every reason can be acknowledged by its owner", r)
	}
}

func TestCheckReasons(t *testing.T) {
	t.Parallel()
	err := checkReasons([]deadletter.Reason{deadletter.ReasonPolicyLimit, deadletter.ReasonBudgetExhausted, deadletter.ReasonSchemaInvalid}, Ack{})
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrRefused))
	assert.Equal(t, redrivetype.CodeForbidden, RefusalCode(err))
	assert.Contains(t, err.Error(), "schema_invalid")
	assert.Contains(t, err.Error(), "policy_limit")
	assert.NotContains(t, err.Error(), "budget_exhausted")
	assert.NoError(t, checkReasons([]deadletter.Reason{deadletter.ReasonBudgetExhausted}, Ack{}))
}
