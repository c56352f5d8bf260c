package agenttask_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/agenttask"
)

func TestArgsDigest(t *testing.T) {
	t.Parallel()
	base := `{"to":["a@example.com","b@example.com"],"subject":"x","n":1}`
	want, err := agenttask.ArgsDigest([]byte(base))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(want, agenttask.DigestPrefix), want)
	assert.Len(t, want, len(agenttask.DigestPrefix)+64)
	for _, tt := range []struct {
		name string
		args string
		same bool // the same digest as base
	}{
		{name: "spacing", args: " {\n \"to\" : [ \"a@example.com\" , \"b@example.com\" ],\t\"subject\":\"x\", \"n\":1 }", same: true},
		{name: "member order", args: `{"n":1,"subject":"x","to":["a@example.com","b@example.com"]}`, same: true},
		{name: "escapes", args: `{"to":["a@example.com","b@example.com"],"subject":"\u0078","n":1}`, same: true},
		{name: "number spelling", args: `{"to":["a@example.com","b@example.com"],"subject":"x","n":1.0E0}`, same: true},
		{name: "another value", args: `{"to":["a@example.com","b@example.com"],"subject":"y","n":1}`},
		{name: "array order", args: `{"to":["b@example.com","a@example.com"],"subject":"x","n":1}`},
		{name: "another key", args: `{"to":["a@example.com","b@example.com"],"subject":"x","m":1}`},
		{name: "a member more", args: `{"to":["a@example.com","b@example.com"],"subject":"x","n":1,"cc":[]}`},
		{name: "a number as a string", args: `{"to":["a@example.com","b@example.com"],"subject":"x","n":"1"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := agenttask.ArgsDigest([]byte(tt.args))
			require.NoError(t, err)
			if tt.same {
				assert.Equal(t, want, got)
			} else {
				assert.NotEqual(t, want, got)
			}
		})
	}
}

func TestArgsDigestRefusesBadJSON(t *testing.T) {
	t.Parallel()
	for _, args := range []string{``, `{`, `{"a":}`, `{"a":1}x`, "{\"a\":\"\xff\"}"} {
		_, err := agenttask.ArgsDigest([]byte(args))
		assert.Error(t, err, "%q", args)
	}
}
