package breaker

import (
	"context"
	"errors"
	"sync"
)

// ErrConflict is returned by Store.Put when the stored version is not the
// one the write was based on: another worker changed the state first.
var ErrConflict = errors.New("breaker: state changed concurrently")

// Store keeps each (pipeline, dependency) breaker's State. Memory is one for
// tests and a single process; dynamostore.Store keeps it in DynamoDB, shared
// by every worker instance. breakertest.Run is the suite an implementation
// must pass.
type Store interface {
	// Get returns the stored state, or the zero State (closed, Version 0)
	// when there is none.
	Get(ctx context.Context, pipeline, dependency string) (State, error)
	// Put stores s as version s.Version+1 if, and only if, the stored
	// version is s.Version (0: nothing stored yet); otherwise it returns
	// ErrConflict and stores nothing. It returns the state as stored.
	Put(ctx context.Context, pipeline, dependency string, s State) (State, error)
}

// Memory is a Store in memory, safe for concurrent use.
type Memory struct {
	mu sync.Mutex
	m  map[[2]string]State
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty Memory.
func NewMemory() *Memory { return &Memory{m: map[[2]string]State{}} }

// Get implements Store.
func (m *Memory) Get(_ context.Context, pipeline, dependency string) (State, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.m[[2]string{pipeline, dependency}], nil
}

// Put implements Store.
func (m *Memory) Put(_ context.Context, pipeline, dependency string, s State) (State, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [2]string{pipeline, dependency}
	if m.m[k].Version != s.Version {
		return State{}, ErrConflict
	}
	s.Version++
	m.m[k] = s
	return s, nil
}
