package ledgertest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/internal/tbrec"
	"github.com/agentdlq/agentdlq/ledger"
)

// broken switches off one rule of the contract in naive.
type broken int

const (
	correct                  broken = iota
	ignoresLeases                   // Begin claims a key another owner holds
	claimsDone                      // Begin claims a done key
	leaseInclusive                  // the lease still holds at LeaseUntil
	startsAnyEffect                 // StartEffect without holding the key
	releasesAnyLease                // Release ends someone else's lease
	forgetsCounts                   // DeadLettered and Redriven do not count
	returnsStaleEntry               // DeadLettered and Redriven return the entry before the change
	shortExpiry                     // entries expire after a day
	beginTouchesDone                // a refused Begin on a done key updates it
	releaseCreatesEntry             // Release of an unknown key creates one
	dropsReceipt                    // Complete keeps no receipt
	redrivenSetsDeadLettered        // Redriven changes the state
	beginResetsCounts               // Begin forgets the counts
	reconcilesAnything              // Reconcile without the effect being unknown
	changesReconciliation           // Reconcile overwrites another outcome
	keepsEffectStarted              // no effect leaves effect_started set
	confirmKeepsState               // effect confirmed does not mark the key done
	ignoresDigest                   // Begin never compares digests
	reusedAfterDone                 // ErrDone comes before ErrKeyReused
	overwritesDigest                // every Begin records its digest
	keepsNoDigest                   // Begin records no digest
	unscoped                        // every key is its bare idempotency key (before scoping)
	noUnscopedFallback              // scoped keys never consult the unscoped entry (no upgrade)
	readOnlyOverwritesDone          // CompleteReadOnly completes a done key again
	readOnlyIgnoresDigest           // CompleteReadOnly never compares digests
	readOnlyIgnoresLeases           // CompleteReadOnly completes a key another owner holds
	refusesStateless                // Begin refuses a key with no state (ErrLeased)
	readOnlyRefusesStateless        // CompleteReadOnly refuses a key with no state (ErrLeased)
)

// unscoping is a ledger that keys entries by the bare idempotency key, as
// every version before scoping did.
type unscoping struct{ ledger.Ledger }

func (u unscoping) Begin(ctx context.Context, key, owner, digest string, now time.Time, lease time.Duration) (ledger.Entry, error) {
	return u.Ledger.Begin(ctx, ledger.Unscoped(key), owner, digest, now, lease)
}

func (u unscoping) StartEffect(ctx context.Context, key, owner string, now time.Time) error {
	return u.Ledger.StartEffect(ctx, ledger.Unscoped(key), owner, now)
}

func (u unscoping) Complete(ctx context.Context, key, owner, receipt string, now time.Time) error {
	return u.Ledger.Complete(ctx, ledger.Unscoped(key), owner, receipt, now)
}

func (u unscoping) CompleteReadOnly(ctx context.Context, key, owner, digest, receipt string, now time.Time) (ledger.Entry, error) {
	return u.Ledger.CompleteReadOnly(ctx, ledger.Unscoped(key), owner, digest, receipt, now)
}

func (u unscoping) Redriven(ctx context.Context, key string, now time.Time) (ledger.Entry, error) {
	return u.Ledger.Redriven(ctx, ledger.Unscoped(key), now)
}

func (u unscoping) Get(ctx context.Context, key string) (ledger.Entry, bool, error) {
	e, ok, err := u.Ledger.Get(ctx, ledger.Unscoped(key))
	e.Key = key
	return e, ok, err
}

// naive is a ledger written from the package doc alone, with switches that
// break one rule each: the suite must pass it as it is and fail it broken.
type naive struct {
	mu      sync.Mutex
	entries map[string]ledger.Entry
	broken  broken
}

var _ ledger.Ledger = (*naive)(nil)

func (n *naive) touch(e *ledger.Entry, now time.Time) {
	e.UpdatedAt, e.ExpiresAt = now, now.Add(ledger.DefaultTTL)
	if n.broken == shortExpiry {
		e.ExpiresAt = now.Add(24 * time.Hour)
	}
}

func (n *naive) Begin(_ context.Context, key, owner, digest string, now time.Time, lease time.Duration) (ledger.Entry, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	e, ok := n.entries[key]
	before := e
	if !ok {
		before = ledger.Entry{}
		e.Key = key
	}
	leased := now.Before(e.LeaseUntil)
	if n.broken == leaseInclusive {
		leased = !now.After(e.LeaseUntil)
	}
	reused := digest != "" && e.ArgsDigest != "" && e.ArgsDigest != digest && n.broken != ignoresDigest
	switch {
	case reused && n.broken != reusedAfterDone:
		return before, ledger.ErrKeyReused
	case ok && e.State == "" && n.broken == refusesStateless:
		return before, ledger.ErrLeased
	case e.State == ledger.StateDone && n.broken != claimsDone:
		if n.broken == beginTouchesDone {
			n.touch(&e, now)
			n.entries[key] = e
		}
		return before, ledger.ErrDone
	case e.State == ledger.StateInProgress && e.Owner != owner && leased && n.broken != ignoresLeases:
		return before, ledger.ErrLeased
	}
	if reused { // reusedAfterDone: the other checks passed
		return before, ledger.ErrKeyReused
	}
	e.State, e.Owner, e.LeaseUntil = ledger.StateInProgress, owner, now.Add(lease)
	if (e.ArgsDigest == "" || n.broken == overwritesDigest) && n.broken != keepsNoDigest {
		e.ArgsDigest = digest
	}
	if n.broken == beginResetsCounts {
		e.DeadLetterCount, e.RedriveCount = 0, 0
	}
	n.touch(&e, now)
	n.entries[key] = e
	return before, nil
}

func (n *naive) StartEffect(_ context.Context, key, owner string, now time.Time) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	e, ok := n.entries[key]
	if (!ok || e.State != ledger.StateInProgress || e.Owner != owner) && n.broken != startsAnyEffect {
		return ledger.ErrLeased
	}
	e.Key, e.EffectStarted = key, true
	n.touch(&e, now)
	n.entries[key] = e
	return nil
}

func (n *naive) Complete(_ context.Context, key, owner, receipt string, now time.Time) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	e := n.entries[key]
	e.Key, e.State, e.Owner, e.Receipt, e.LeaseUntil = key, ledger.StateDone, owner, receipt, time.Time{}
	if n.broken == dropsReceipt {
		e.Receipt = ""
	}
	n.touch(&e, now)
	n.entries[key] = e
	return nil
}

func (n *naive) CompleteReadOnly(_ context.Context, key, owner, digest, receipt string, now time.Time) (ledger.Entry, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	e, ok := n.entries[key]
	before := e
	if !ok {
		before = ledger.Entry{}
		e.Key = key
	}
	switch {
	case digest != "" && e.ArgsDigest != "" && e.ArgsDigest != digest && n.broken != readOnlyIgnoresDigest:
		return before, ledger.ErrKeyReused
	case e.State == ledger.StateDone && n.broken != readOnlyOverwritesDone:
		return before, ledger.ErrDone
	case e.State == ledger.StateInProgress && e.Owner != owner && now.Before(e.LeaseUntil) && n.broken != readOnlyIgnoresLeases:
		return before, ledger.ErrLeased
	case ok && e.State == "" && n.broken == readOnlyRefusesStateless:
		return before, ledger.ErrLeased
	}
	e.State, e.Owner, e.Receipt, e.LeaseUntil = ledger.StateDone, owner, receipt, time.Time{}
	if e.ArgsDigest == "" {
		e.ArgsDigest = digest
	}
	n.touch(&e, now)
	n.entries[key] = e
	return before, nil
}

func (n *naive) Release(_ context.Context, key, owner string, now time.Time) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	e, ok := n.entries[key]
	if !ok && n.broken == releaseCreatesEntry {
		e.Key = key
		n.touch(&e, now)
		n.entries[key] = e
		return nil
	}
	if !ok || e.State != ledger.StateInProgress || (e.Owner != owner && n.broken != releasesAnyLease) {
		return nil
	}
	e.LeaseUntil = time.Time{}
	n.touch(&e, now)
	n.entries[key] = e
	return nil
}

func (n *naive) count(key string, now time.Time, f func(*ledger.Entry)) ledger.Entry {
	n.mu.Lock()
	defer n.mu.Unlock()
	e := n.entries[key]
	before := e
	e.Key = key
	f(&e)
	n.touch(&e, now)
	n.entries[key] = e
	if n.broken == returnsStaleEntry {
		return before
	}
	return e
}

func (n *naive) DeadLettered(_ context.Context, key string, reason deadletter.Reason, now time.Time) (ledger.Entry, error) {
	return n.count(key, now, func(e *ledger.Entry) {
		e.State, e.LastReason, e.LeaseUntil = ledger.StateDeadLettered, reason, time.Time{}
		if n.broken != forgetsCounts {
			e.DeadLetterCount++
		}
	}), nil
}

func (n *naive) Redriven(_ context.Context, key string, now time.Time) (ledger.Entry, error) {
	return n.count(key, now, func(e *ledger.Entry) {
		if n.broken != forgetsCounts {
			e.RedriveCount++
		}
		if n.broken == redrivenSetsDeadLettered {
			e.State = ledger.StateDeadLettered
		}
	}), nil
}

func (n *naive) Reconcile(_ context.Context, key string, rc ledger.Reconciliation, now time.Time) (ledger.Entry, error) {
	if err := rc.Validate(); err != nil {
		return ledger.Entry{}, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	e, ok := n.entries[key]
	switch {
	case ok && e.ReconciledAs(rc) && n.broken != changesReconciliation:
		return e, nil
	case ok && e.Reconciled != "" && (e.EffectConfirmed() || !e.EffectStarted) && n.broken != changesReconciliation:
		return e, ledger.ErrReconciled
	case ok && e.State == ledger.StateInProgress && now.Before(e.LeaseUntil) && e.EffectStarted && n.broken != reconcilesAnything:
		return e, ledger.ErrLeased
	case (!ok || !e.EffectUnknown(now)) && n.broken != reconcilesAnything && n.broken != changesReconciliation:
		return e, ledger.ErrNotEffectUnknown
	}
	e.Key = key
	if rc.Outcome == ledger.OutcomeEffectConfirmed {
		if n.broken != confirmKeepsState {
			e.State = ledger.StateDone
		}
		e.Receipt = rc.Receipt
	} else if n.broken != keepsEffectStarted {
		e.EffectStarted = false
	}
	e.Reconciled, e.ReconciledBy, e.ReconciledAt = rc.Outcome, rc.By, now
	n.touch(&e, now)
	n.entries[key] = e
	return e, nil
}

func (n *naive) Get(_ context.Context, key string) (ledger.Entry, bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	e, ok := n.entries[key]
	return e, ok, nil
}

// runCases runs every case on its own naive ledger with b switched on and
// returns the names of the cases that failed.
func runCases(t *testing.T, b broken) []string {
	var failed []string
	for _, c := range cases {
		bad, msgs := tbrec.Run(t, func(tb testing.TB) {
			var l ledger.Ledger = &naive{entries: map[string]ledger.Entry{}, broken: b}
			switch b {
			case unscoped:
				l = unscoping{ledger.WithUnscopedFallback(l)}
			case noUnscopedFallback:
			default:
				l = ledger.WithUnscopedFallback(l)
			}
			c.run(tb, &suite{l: l, prefix: "self-test"})
		})
		if bad {
			failed = append(failed, c.name)
			t.Logf("broken %d: %q failed: %s", b, c.name, msgs)
		}
	}
	return failed
}

// TestSuitePassesAnIndependentLedger: a ledger written from the package doc
// alone, not Memory, passes every case.
func TestSuitePassesAnIndependentLedger(t *testing.T) {
	t.Parallel()
	assert.Empty(t, runCases(t, correct))
}

// TestSuiteFailsBrokenLedgers: each broken rule fails the case that checks it.
func TestSuiteFailsBrokenLedgers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		broken broken
		want   string // a case that must fail
	}{
		{name: "Begin ignores leases", broken: ignoresLeases, want: "Begin of a key leased by another owner"},
		{name: "Begin ignores leases: the race", broken: ignoresLeases, want: "Begin concurrently on one key: exactly one wins"},
		{name: "Begin claims done keys", broken: claimsDone, want: "Begin of a done key is a no-op"},
		{name: "a refused Begin touches the entry", broken: beginTouchesDone, want: "Begin of a done key is a no-op"},
		{name: "the lease holds at LeaseUntil", broken: leaseInclusive, want: "Begin at the lease's expiry"},
		{name: "Begin forgets the counts", broken: beginResetsCounts, want: "Begin of a dead-lettered key"},
		{name: "StartEffect without the lease", broken: startsAnyEffect, want: "StartEffect by anyone else"},
		{name: "Release of another's lease", broken: releasesAnyLease, want: "Release by anyone else does nothing"},
		{name: "Release creates an entry", broken: releaseCreatesEntry, want: "Release by anyone else does nothing"},
		{name: "Complete drops the receipt", broken: dropsReceipt, want: "Complete records the receipt"},
		{name: "no dead-letter count", broken: forgetsCounts, want: "DeadLettered counts"},
		{name: "no redrive count", broken: forgetsCounts, want: "Redriven counts"},
		{name: "stale entry returned", broken: returnsStaleEntry, want: "DeadLettered counts"},
		{name: "Redriven changes the state", broken: redrivenSetsDeadLettered, want: "Redriven of an unknown key"},
		{name: "entries expire before the DLQ's retention", broken: shortExpiry, want: "Begin of a new key"},
		{name: "Reconcile without an unknown effect", broken: reconcilesAnything, want: "Reconcile of a key whose effect is not unknown"},
		{name: "Reconcile overwrites another outcome", broken: changesReconciliation, want: "Reconcile again: the same is a no-op, another is refused"},
		{name: "Reconcile overwrites another outcome: the race", broken: changesReconciliation, want: "Reconcile concurrently: one outcome wins"},
		{name: "no effect keeps effect_started", broken: keepsEffectStarted, want: "Reconcile: no effect lets a redrive run the task afresh"},
		{name: "effect confirmed keeps the state", broken: confirmKeepsState, want: "Reconcile: effect confirmed marks the key done"},
		{name: "Begin ignores the digest", broken: ignoresDigest, want: "Begin with another digest is refused in every state"},
		{name: "a done key hides a reused one", broken: reusedAfterDone, want: "Begin with another digest is refused in every state"},
		{name: "Begin overwrites the digest", broken: overwritesDigest, want: "Begin without a digest checks nothing and keeps the digest"},
		{name: "Begin keeps no digest", broken: keepsNoDigest, want: "Begin records the args digest"},
		{name: "Begin keeps no digest: older rows", broken: keepsNoDigest, want: "An entry without a digest takes the first one"},
		{name: "keys are not scoped", broken: unscoped, want: "Scoped keys of other pipelines and tenants are apart"},
		{name: "keys are not scoped: forged", broken: unscoped, want: "Scoped keys cannot be forged with separators"},
		{name: "no fallback to unscoped entries: done", broken: noUnscopedFallback, want: "A task done under its unscoped key stays done"},
		{name: "CompleteReadOnly completes a done key", broken: readOnlyOverwritesDone, want: "CompleteReadOnly of a done key is a no-op"},
		{name: "CompleteReadOnly completes a done key: the race", broken: readOnlyOverwritesDone, want: "CompleteReadOnly concurrently on one key: exactly one wins"},
		{name: "CompleteReadOnly ignores the digest", broken: readOnlyIgnoresDigest, want: "CompleteReadOnly with another digest is refused in every state"},
		{name: "CompleteReadOnly ignores leases", broken: readOnlyIgnoresLeases, want: "CompleteReadOnly of a key leased by another owner"},
		{name: "Begin refuses a stateless key", broken: refusesStateless, want: "A key with no state: Begin and CompleteReadOnly take it alike"},
		{name: "CompleteReadOnly refuses a stateless key", broken: readOnlyRefusesStateless, want: "A key with no state: Begin and CompleteReadOnly take it alike"},
		{name: "no fallback to unscoped entries: unknown effect", broken: noUnscopedFallback, want: "An unscoped unknown effect stays unknown and is reconciled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Contains(t, runCases(t, tt.broken), tt.want)
		})
	}
}

// TestRunNamesSubtests: Run runs every case as a subtest of its own name.
func TestRunNamesSubtests(t *testing.T) {
	var names []string
	var mu sync.Mutex
	m := ledger.NewMemory()
	t.Run("memory", func(t *testing.T) {
		Run(t, func(t *testing.T) ledger.Ledger {
			mu.Lock()
			names = append(names, t.Name())
			mu.Unlock()
			return m
		})
	})
	assert.Len(t, names, len(cases))
	assert.Contains(t, names, "TestRunNamesSubtests/memory/Begin_concurrently_on_one_key:_exactly_one_wins")
}
