package breaker_test

import (
	"errors"
	"testing"

	"github.com/agentdlq/agentdlq/breaker"
	"github.com/agentdlq/agentdlq/breaker/breakertest"
)

func TestMemoryConformance(t *testing.T) {
	t.Parallel()
	breakertest.Run(t, func(*testing.T) breaker.Store { return breaker.NewMemory() })
}

// onlyStore is a Store that does not list.
type onlyStore struct{ breaker.Store }

func TestListNeedsALister(t *testing.T) {
	t.Parallel()
	if _, err := breaker.List(t.Context(), onlyStore{breaker.NewMemory()}, "p"); !errors.Is(err, breaker.ErrNotListed) {
		t.Fatalf("List on a store that does not list: %v, want ErrNotListed", err)
	}
}
