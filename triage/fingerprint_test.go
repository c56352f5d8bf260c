package triage

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/agentdlq/agentdlq/events/deadletter"
)

func TestNormaliseError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"numbers", "status 503 after 3 tries", "status <n> after <n> tries"},
		{"decimal", "took 1.5s", "took <n>s"},
		{"uuid", "task 3f2b7c1e-9a4d-4c3b-8e2f-1a2b3c4d5e6f failed", "task <uuid> failed"},
		{"hex", "digest deadbeef01 at 0x7ffe12", "digest <hex> at <hex>"},
		{"ids", "run run42 of msg_7f3a and task-17", "run <id> of <id> and <id>"},
		{"quoted", `field "args.q" must be 'string'`, "field <q> must be <q>"},
		{"timestamp", "expired at 2026-11-29T12:00:00Z", "expired at <time>"},
		{"whitespace", "  a \n\t b  ", "a b"},
		{"redaction marker kept", "authorization: [REDACTED] rejected", "authorization: [REDACTED] rejected"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, normaliseError(tt.in))
		})
	}
}

func TestSignature(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "ThrottlingException: rate <n>", signatureOf("ThrottlingException", "rate 42"))
	assert.Equal(t, "HTTP503", signatureOf("HTTP503", ""), "the error code is kept as it is")
	assert.Equal(t, "x <n>", signatureOf("", "x 1"))
}

func TestFingerprint(t *testing.T) {
	t.Parallel()
	base := fingerprintOf(deadletter.ReasonSchemaInvalid, "web.search", "1", 1, signatureOf("", "args.q missing in task 42"))
	// Same problem, different ids: same fingerprint.
	assert.Equal(t, base, fingerprintOf(deadletter.ReasonSchemaInvalid, "web.search", "1", 1, signatureOf("", "args.q missing in task 97")))
	assert.Len(t, base, 16)
	assert.Equal(t, "187e4b6b239201cd", base, "fingerprints are stable across releases: a change here re-keys every eval case")
	// Each part matters.
	for name, other := range map[string]string{
		"reason":         fingerprintOf(deadletter.ReasonToolUnknown, "web.search", "1", 1, "args.q missing in task <n>"),
		"tool":           fingerprintOf(deadletter.ReasonSchemaInvalid, "http.fetch", "1", 1, "args.q missing in task <n>"),
		"tool version":   fingerprintOf(deadletter.ReasonSchemaInvalid, "web.search", "2", 1, "args.q missing in task <n>"),
		"schema version": fingerprintOf(deadletter.ReasonSchemaInvalid, "web.search", "1", 2, "args.q missing in task <n>"),
		"signature":      fingerprintOf(deadletter.ReasonSchemaInvalid, "web.search", "1", 1, "args.x missing in task <n>"),
		"field boundary": fingerprintOf(deadletter.ReasonSchemaInvalid, "web.search1", "", 1, "args.q missing in task <n>"),
	} {
		assert.NotEqual(t, base, other, name)
	}
}
