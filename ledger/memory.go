package ledger

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/agentdlq/agentdlq/events/deadletter"
)

// Memory is an in-process Ledger, safe for concurrent use. Its zero value is
// not usable; call NewMemory.
type Memory struct {
	mu      sync.Mutex
	entries map[string]*Entry // pointers: an Entry is too big to be stored inline in a map
	slab    []Entry           // new entries are carved from here (16, 32, … 256 to an allocation)
	ttl     time.Duration
	// The entry last looked up, and its key: a worker's Complete follows
	// its Begin on the same key, and the string comparison (the same
	// pointer, mostly) is cheaper than hashing the key again.
	lastKey string
	last    *Entry
}

var _ Ledger = (*Memory)(nil)

// NewMemory returns an empty in-memory ledger.
//
// The map and the first slab start with room for an SQS batch of 10 (the
// default batch size): BenchmarkProcessor/ok/batch=10 took ~1,300 ns CPU a
// record with that (slab of 16: ~1,150), ~1,750 with room for 128 keys.
func NewMemory() *Memory {
	return &Memory{entries: make(map[string]*Entry, 16), ttl: DefaultTTL}
}

// beginExact is Begin on key as it is.
func (m *Memory) beginExact(_ context.Context, key, owner, digest string, now time.Time, lease time.Duration) (Entry, error) {
	return m.claim(key, owner, digest, now, func(e *Entry) {
		e.State, e.Owner, e.LeaseUntil = StateInProgress, owner, now.Add(lease)
	})
}

// claim is the write Begin and CompleteReadOnly share: under the lock, it
// refuses key with Begin's errors in Begin's precedence (another digest,
// done, another owner's unexpired lease), else applies set, records digest
// where the entry has none and touches it. It returns the entry as it was
// before (the zero Entry for a new key).
func (m *Memory) claim(key, owner, digest string, now time.Time, set func(*Entry)) (Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.lookup(key)
	var before Entry // a new key: the zero Entry
	if ok {
		before = *e
		switch {
		case e.KeyReused(digest):
			return before, ErrKeyReused
		case e.State == StateDone:
			return before, ErrDone
		case e.State == StateInProgress && e.Owner != owner && now.Before(e.LeaseUntil):
			return before, ErrLeased
		}
	} else {
		e = m.newEntry(key)
	}
	set(e)
	if e.ArgsDigest == "" {
		e.ArgsDigest = digest
	}
	m.touch(e, now)
	return before, nil
}

// StartEffect implements Ledger. It fails with ErrLeased when owner does
// not hold the key: then the mutating call must not start.
func (m *Memory) StartEffect(_ context.Context, key, owner string, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.lookup(key)
	if !ok || e.State != StateInProgress || e.Owner != owner {
		return fmt.Errorf("%w: start effect on %q: the lease is not %q's", ErrLeased, key, owner)
	}
	e.EffectStarted = true
	m.touch(e, now)
	return nil
}

// Complete implements Ledger.
func (m *Memory) Complete(_ context.Context, key, owner, receipt string, now time.Time) error {
	m.update(key, now, nil, func(e *Entry) {
		e.State, e.Receipt, e.Owner, e.LeaseUntil = StateDone, receipt, owner, time.Time{}
	})
	return nil
}

// CompleteReadOnly implements Ledger: Begin's refusals with Complete's changes.
func (m *Memory) CompleteReadOnly(_ context.Context, key, owner, digest, receipt string, now time.Time) (Entry, error) {
	return m.claim(key, owner, digest, now, func(e *Entry) {
		e.State, e.Receipt, e.Owner, e.LeaseUntil = StateDone, receipt, owner, time.Time{}
	})
}

// Release implements Ledger.
func (m *Memory) Release(_ context.Context, key, owner string, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.lookup(key)
	if !ok || e.State != StateInProgress || e.Owner != owner {
		return nil
	}
	e.LeaseUntil = time.Time{}
	m.touch(e, now)
	return nil
}

// DeadLettered implements Ledger.
func (m *Memory) DeadLettered(_ context.Context, key string, reason deadletter.Reason, now time.Time) (Entry, error) {
	var out Entry
	m.update(key, now, &out, func(e *Entry) {
		e.State, e.LastReason, e.LeaseUntil = StateDeadLettered, reason, time.Time{}
		e.DeadLetterCount++
	})
	return out, nil
}

// Redriven implements Ledger.
func (m *Memory) Redriven(_ context.Context, key string, now time.Time) (Entry, error) {
	var out Entry
	m.update(key, now, &out, func(e *Entry) { e.RedriveCount++ })
	return out, nil
}

// reconcileExact is Reconcile on key as it is.
func (m *Memory) reconcileExact(_ context.Context, key string, rc Reconciliation, now time.Time) (Entry, error) {
	if err := rc.Validate(); err != nil {
		return Entry{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.lookup(key)
	if !ok || !e.EffectUnknown(now) {
		var cur Entry
		if ok {
			cur = *e
		}
		return reconcileRefusal(key, cur, ok, rc, now)
	}
	if rc.Outcome == OutcomeEffectConfirmed {
		e.State, e.Receipt = StateDone, rc.Receipt
	} else {
		e.EffectStarted = false
	}
	e.Reconciled, e.ReconciledBy, e.ReconciledAt = rc.Outcome, rc.By, now
	m.touch(e, now)
	return *e, nil
}

// getExact is Get on key as it is.
func (m *Memory) getExact(_ context.Context, key string) (Entry, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.lookup(key)
	if !ok {
		return Entry{}, false, nil
	}
	return *e, true, nil
}

// Len returns the number of keys.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.entries)
}

// lookup returns key's entry; m.mu is held.
func (m *Memory) lookup(key string) (*Entry, bool) {
	if m.last != nil && key == m.lastKey {
		return m.last, true
	}
	e, ok := m.entries[key]
	if ok {
		m.lastKey, m.last = key, e
	}
	return e, ok
}

// update applies f to key's entry (a new one for an unknown key) and
// touches it; out, when not nil, receives a copy of the result.
func (m *Memory) update(key string, now time.Time, out *Entry, f func(*Entry)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.lookup(key)
	if !ok {
		e = m.newEntry(key)
	}
	f(e)
	m.touch(e, now)
	if out != nil {
		*out = *e
	}
}

// newEntry adds key's entry; m.mu is held. Entries never move: a full slab
// is left to its entries and a new one started.
func (m *Memory) newEntry(key string) *Entry {
	if len(m.slab) == cap(m.slab) {
		m.slab = make([]Entry, 0, min(max(2*cap(m.slab), 16), 256))
	}
	// Extended in place, not appended: a fresh slab is zeroed already.
	m.slab = m.slab[:len(m.slab)+1]
	e := &m.slab[len(m.slab)-1]
	e.Key = key
	m.entries[key] = e
	m.lastKey, m.last = key, e
	return e
}

func (m *Memory) touch(e *Entry, now time.Time) {
	e.UpdatedAt = now
	e.ExpiresAt = now.Add(m.ttl)
}

// Begin implements Ledger; a scoped key (Key) falls back to the task's
// unscoped entry while its own is unsettled (see Key and the package doc).
func (m *Memory) Begin(ctx context.Context, key, owner, digest string, now time.Time, lease time.Duration) (Entry, error) {
	return beginScoped(ctx, m, key, owner, digest, now, lease)
}

// Get implements Ledger, with the unscoped fallback of Begin.
func (m *Memory) Get(ctx context.Context, key string) (Entry, bool, error) {
	return getScoped(ctx, m, key)
}

// Reconcile implements Ledger, with the unscoped fallback of Begin.
func (m *Memory) Reconcile(ctx context.Context, key string, rc Reconciliation, now time.Time) (Entry, error) {
	return reconcileScoped(ctx, m, key, rc, now)
}
