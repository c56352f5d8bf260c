package ledger

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
)

// refusingComplete is a ledger whose Complete fails for one key.
type refusingComplete struct {
	*Memory
	key string
}

func (r refusingComplete) Complete(ctx context.Context, key, owner, receipt string, now time.Time) error {
	if key == r.key {
		return ErrUnavailable
	}
	return r.Memory.Complete(ctx, key, owner, receipt, now)
}

func TestCountingCountsSucceededEffectsAndEveryCall(t *testing.T) {
	t.Parallel()
	ctx, now := context.Background(), time.Now()
	c := NewCounting(refusingComplete{Memory: NewMemory(), key: "k2"})
	for _, key := range []string{"k1", "k2"} {
		_, err := c.Begin(ctx, key, "m-"+key, "", now, time.Minute)
		require.NoError(t, err)
		require.NoError(t, c.StartEffect(ctx, key, "m-"+key, now))
	}
	require.NoError(t, c.Complete(ctx, "k1", "m-k1", "r1", now))
	require.True(t, errors.Is(c.Complete(ctx, "k2", "m-k2", "r2", now), ErrUnavailable))
	require.NoError(t, c.Release(ctx, "k2", "m-k2", now))
	_, err := c.DeadLettered(ctx, "k2", deadletter.ReasonUnclassified, now)
	require.NoError(t, err)
	_, _, err = c.Get(ctx, "k1") // not a worker call: not counted
	require.NoError(t, err)

	started, completed, calls := c.Counts()
	assert.Equal(t, map[string]int{"k1": 1, "k2": 1}, started)
	assert.Equal(t, map[string]int{"k1": 1}, completed, "a Complete that failed recorded no effect")
	assert.Equal(t, 8, calls, "2 Begin + 2 StartEffect + 2 Complete + Release + DeadLettered")

	started["k1"] = 99
	again, _, _ := c.Counts()
	assert.Equal(t, 1, again["k1"], "Counts returns copies")
}
