package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/redrive"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
)

func TestParseOverrides(t *testing.T) {
	t.Parallel()
	got, err := parseOverrides([]string{"effect_unknown=reconciled INC-1", "redrive_loop = fixed the loop"})
	require.NoError(t, err)
	assert.Equal(t, map[deadletter.Reason]string{deadletter.ReasonEffectUnknown: "reconciled INC-1", deadletter.ReasonRedriveLoop: "fixed the loop"}, got)
	for _, bad := range []string{"effect_unknown", "effect_unknown=", "effect_unknown=  ", "nope=x"} {
		_, err := parseOverrides([]string{bad})
		assert.ErrorIs(t, err, redrive.ErrRefused, bad)
	}
	_, err = parseOverrides([]string{"nope=x"})
	assert.Equal(t, redrivetype.CodeUnknownReason, redrive.RefusalCode(err))
}

func TestParseReasons(t *testing.T) {
	t.Parallel()
	got, err := parseReasons([]string{"schema_invalid,tool_unknown", "schema_invalid"})
	require.NoError(t, err)
	assert.Equal(t, []deadletter.Reason{deadletter.ReasonSchemaInvalid, deadletter.ReasonToolUnknown}, got)
	_, err = parseReasons([]string{"schema_invalid,bogus"})
	assert.Equal(t, redrivetype.CodeUnknownReason, redrive.RefusalCode(err))
}
