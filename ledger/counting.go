package ledger

import (
	"context"
	"maps"
	"sync"
	"time"

	"github.com/agentdlq/agentdlq/events/deadletter"
)

// Counting wraps a Ledger and counts, per key, the effects it recorded
// (StartEffect, Complete and CompleteReadOnly calls that succeeded; more
// than one for a key is a duplicate side effect), and every call a worker
// makes (Begin, StartEffect, Complete, CompleteReadOnly, Release,
// DeadLettered). The load bench and the
// end-to-end tests count with it. It is safe for concurrent use.
type Counting struct {
	Ledger
	mu        sync.Mutex
	started   map[string]int
	completed map[string]int
	calls     int
}

var _ Ledger = (*Counting)(nil)

// NewCounting wraps l.
func NewCounting(l Ledger) *Counting {
	return &Counting{Ledger: l, started: map[string]int{}, completed: map[string]int{}}
}

// Counts returns copies of the per-key counts and the number of calls.
func (c *Counting) Counts() (started, completed map[string]int, calls int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.started), maps.Clone(c.completed), c.calls
}

// record counts a call and, when it succeeded and per is set, one for key.
func (c *Counting) record(per map[string]int, key string, err error) {
	c.mu.Lock()
	c.calls++
	if per != nil && err == nil {
		per[key]++
	}
	c.mu.Unlock()
}

// Begin calls the ledger's Begin and counts the call.
func (c *Counting) Begin(ctx context.Context, key, owner, digest string, now time.Time, lease time.Duration) (Entry, error) {
	e, err := c.Ledger.Begin(ctx, key, owner, digest, now, lease)
	c.record(nil, key, err)
	return e, err
}

// StartEffect calls the ledger's StartEffect and counts the call and, when it succeeds, the key.
func (c *Counting) StartEffect(ctx context.Context, key, owner string, now time.Time) error {
	err := c.Ledger.StartEffect(ctx, key, owner, now)
	c.record(c.started, key, err)
	return err
}

// Complete calls the ledger's Complete and counts the call and, when it succeeds, the key.
func (c *Counting) Complete(ctx context.Context, key, owner, receipt string, now time.Time) error {
	err := c.Ledger.Complete(ctx, key, owner, receipt, now)
	c.record(c.completed, key, err)
	return err
}

// CompleteReadOnly counts a call and, when it succeeded, a completion
// (an effect recorded, as Complete): more than one for a key is a
// duplicate.
func (c *Counting) CompleteReadOnly(ctx context.Context, key, owner, digest, receipt string, now time.Time) (Entry, error) {
	e, err := c.Ledger.CompleteReadOnly(ctx, key, owner, digest, receipt, now)
	c.record(c.completed, key, err)
	return e, err
}

// Release calls the ledger's Release and counts the call.
func (c *Counting) Release(ctx context.Context, key, owner string, now time.Time) error {
	err := c.Ledger.Release(ctx, key, owner, now)
	c.record(nil, key, err)
	return err
}

// DeadLettered calls the ledger's DeadLettered and counts the call.
func (c *Counting) DeadLettered(ctx context.Context, key string, reason deadletter.Reason, now time.Time) (Entry, error) {
	e, err := c.Ledger.DeadLettered(ctx, key, reason, now)
	c.record(nil, key, err)
	return e, err
}
