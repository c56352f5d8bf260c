package main

import (
	"os/user"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestActorWithoutUSER: `plan` with $USER unset records the OS user, not
// "unknown" (issue 12).
func TestActorWithoutUSER(t *testing.T) {
	t.Setenv("USER", "")
	got := actorOr("")
	assert.NotEqual(t, "unknown", got)
	assert.NotEmpty(t, got)
	if u, err := user.Current(); err == nil && u.Username != "" {
		assert.Equal(t, u.Username, got)
	}
	assert.Equal(t, "platform-oncall", actorOr("platform-oncall"), "the declared owner first")
}
