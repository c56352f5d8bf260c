package breaker

import (
	"context"
	"errors"
	"slices"
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

// Lister is what a Store may implement beside Store so that an operator can
// see every breaker of a pipeline without knowing the dependencies' names
// (agentdlq breaker status without --dependency, the console). Memory and
// dynamostore.Store implement it; breakertest.Run checks it on a store that
// does.
type Lister interface {
	// Dependencies returns, sorted, the dependencies of pipeline whose
	// breaker state was ever stored (a Put from version 0 succeeded): each
	// has failed at least once, or was forced by its owner. A dependency
	// is listed before its first state is stored, so a stored state is
	// always listed; a dependency whose first Put failed may be listed
	// with no state (Get: version 0). None stored: an empty list, no error.
	Dependencies(ctx context.Context, pipeline string) ([]string, error)
}

// ErrNotListed is returned by List for a Store that does not implement Lister.
var ErrNotListed = errors.New("breaker: the store does not list its dependencies (breaker.Lister)")

// Entry is one dependency's breaker, as List reads it.
type Entry struct {
	Dependency string `json:"dependency"`
	State      State  `json:"state"`
}

// List reads the state of every dependency of pipeline that s lists
// (Lister), in the order listed: one read for the list and one a
// dependency. A store that does not list returns ErrNotListed.
func List(ctx context.Context, s Store, pipeline string) ([]Entry, error) {
	l, ok := s.(Lister)
	if !ok {
		return nil, ErrNotListed
	}
	deps, err := l.Dependencies(ctx, pipeline)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(deps))
	for _, d := range deps {
		st, err := s.Get(ctx, pipeline, d)
		if err != nil {
			return nil, err
		}
		out = append(out, Entry{Dependency: d, State: st})
	}
	return out, nil
}

// Memory is a Store in memory, safe for concurrent use.
type Memory struct {
	mu sync.Mutex
	m  map[[2]string]State
}

var (
	_ Store  = (*Memory)(nil)
	_ Lister = (*Memory)(nil)
)

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

// Dependencies implements Lister.
func (m *Memory) Dependencies(_ context.Context, pipeline string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	deps := []string{}
	for k := range m.m {
		if k[0] == pipeline {
			deps = append(deps, k[1])
		}
	}
	slices.Sort(deps)
	return deps, nil
}
