package breaker_test

import (
	"testing"

	"github.com/agentdlq/agentdlq/breaker"
	"github.com/agentdlq/agentdlq/breaker/breakertest"
)

func TestMemoryConformance(t *testing.T) {
	t.Parallel()
	breakertest.Run(t, func(*testing.T) breaker.Store { return breaker.NewMemory() })
}
