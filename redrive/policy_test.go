package redrive

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events"
)

func TestDecide(t *testing.T) {
	t.Parallel()
	over := func(r events.Reason) Ack {
		return Ack{Overrides: map[events.Reason]string{r: "reconciled with the CRM, INC-42"}}
	}
	tests := []struct {
		name    string
		reason  events.Reason
		ack     Ack
		allowed bool   // want: may be redriven
		via     string // want: what allowed it
		needs   string // want: the flag that would allow it
	}{
		{"transient exhausted is redrivable", events.ReasonBudgetExhausted, Ack{}, true, "policy", ""},
		{"dependency open is redrivable", events.ReasonDependencyOpen, Ack{}, true, "policy", ""},
		{"poison needs the fix", events.ReasonSchemaInvalid, Ack{}, false, "", "--fix-deployed REF"},
		{"poison after the fix", events.ReasonSchemaInvalid, Ack{FixDeployed: "v1.4.2"}, true, "fix_deployed", ""},
		{"blank fix ref is no fix", events.ReasonToolUnknown, Ack{FixDeployed: "  "}, false, "", "--fix-deployed REF"},
		{"unclassified needs the fix", events.ReasonUnclassified, Ack{}, false, "", "--fix-deployed REF"},
		{"auth_config after the fix", events.ReasonAuthConfig, Ack{FixDeployed: "iam-change-7"}, true, "fix_deployed", ""},
		{"receive_limit needs a review", events.ReasonReceiveLimit, Ack{}, false, "", "--reviewed NOTE"},
		{"receive_limit reviewed", events.ReasonReceiveLimit, Ack{Reviewed: "OOM fixed: memory 512"}, true, "reviewed", ""},
		{"receive_limit: a fix ref is not a review", events.ReasonReceiveLimit, Ack{FixDeployed: "x"}, false, "", "--reviewed NOTE"},
		{"effect_unknown never blindly", events.ReasonEffectUnknown, Ack{FixDeployed: "x", Reviewed: "y"}, false, "", "--override effect_unknown=JUSTIFICATION"},
		{"effect_unknown overridden after reconciling", events.ReasonEffectUnknown, over(events.ReasonEffectUnknown), true, "override", ""},
		{"signature_invalid never", events.ReasonSignatureInvalid, Ack{FixDeployed: "x"}, false, "", "--override signature_invalid=JUSTIFICATION"},
		{"guardrail_reject never", events.ReasonGuardrailReject, Ack{}, false, "", "--override guardrail_reject=JUSTIFICATION"},
		{"policy_limit never", events.ReasonPolicyLimit, Ack{}, false, "", "--override policy_limit=JUSTIFICATION"},
		{"redrive_loop never", events.ReasonRedriveLoop, Ack{}, false, "", "--override redrive_loop=JUSTIFICATION"},
		{"redrive_loop overridden", events.ReasonRedriveLoop, over(events.ReasonRedriveLoop), true, "override", ""},
		{"an override of another reason does not count", events.ReasonPolicyLimit, over(events.ReasonRedriveLoop), false, "", "--override policy_limit=JUSTIFICATION"},
		{"unknown reason", events.Reason("nope"), Ack{}, false, "", ""},
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
	for _, r := range events.AllReasons() {
		v := Decide(r, Ack{})
		assert.Equal(t, r.Redrivable() == events.RedriveYes, v.Allowed, r)
		full := Decide(r, Ack{FixDeployed: "f", Reviewed: "r", Overrides: map[events.Reason]string{r: "j"}})
		assert.True(t, full.Allowed, "%s: every reason can be acknowledged by its owner", r)
	}
}

func TestParseOverrides(t *testing.T) {
	t.Parallel()
	got, err := ParseOverrides([]string{"effect_unknown=reconciled INC-1", "redrive_loop = fixed the loop"})
	require.NoError(t, err)
	assert.Equal(t, map[events.Reason]string{events.ReasonEffectUnknown: "reconciled INC-1", events.ReasonRedriveLoop: "fixed the loop"}, got)
	for _, bad := range []string{"effect_unknown", "effect_unknown=", "effect_unknown=  ", "nope=x"} {
		_, err := ParseOverrides([]string{bad})
		assert.ErrorIs(t, err, ErrRefused, bad)
	}
	_, err = ParseOverrides([]string{"nope=x"})
	assert.Equal(t, CodeUnknownReason, RefusalCode(err))
}

func TestParseReasons(t *testing.T) {
	t.Parallel()
	got, err := ParseReasons([]string{"schema_invalid,tool_unknown", "schema_invalid"})
	require.NoError(t, err)
	assert.Equal(t, []events.Reason{events.ReasonSchemaInvalid, events.ReasonToolUnknown}, got)
	_, err = ParseReasons([]string{"schema_invalid,bogus"})
	assert.Equal(t, CodeUnknownReason, RefusalCode(err))
}

func TestCheckReasons(t *testing.T) {
	t.Parallel()
	err := CheckReasons([]events.Reason{events.ReasonPolicyLimit, events.ReasonBudgetExhausted, events.ReasonSchemaInvalid}, Ack{})
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrRefused))
	assert.Equal(t, CodeForbidden, RefusalCode(err))
	assert.Contains(t, err.Error(), "schema_invalid")
	assert.Contains(t, err.Error(), "policy_limit")
	assert.NotContains(t, err.Error(), "budget_exhausted")
	assert.NoError(t, CheckReasons([]events.Reason{events.ReasonBudgetExhausted}, Ack{}))
}
