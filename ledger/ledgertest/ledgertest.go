// Package ledgertest is the conformance suite of ledger.Ledger: the rules of
// the ledger package doc, each as a subtest. ledger.Memory and ledger.Dynamo
// pass it (Dynamo on the local DynamoDB emulator); a team that brings its
// own store runs it against its implementation:
//
//	func TestLedgerConformance(t *testing.T) {
//		table := createTable(t) // one table serves every subtest
//		ledgertest.Run(t, func(*testing.T) ledger.Ledger {
//			return mystore.New(client, table)
//		})
//	}
//
// The suite needs no clock: every call takes its time from the suite, so
// lease expiry is tested at its exact boundary (to the millisecond) without
// waiting. Keys are unique to each run and subtest, so a shared table, even
// one that outlives the test, does not mix them.
package ledgertest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/ledger"
)

// MinRetention is the least time an entry must be kept after its last
// change: the longest SQS message retention, so that a redrive of the
// oldest dead letter still finds its key. The suite checks ExpiresAt
// against it (Memory and Dynamo keep entries ledger.DefaultTTL).
const MinRetention = 14 * 24 * time.Hour

// Concurrency is how many goroutines the suite's concurrent subtests run
// against one key.
const Concurrency = 8

// Run runs the suite. newLedger is called once per subtest, from subtests
// that run in parallel; it may return a new ledger each time or the same one.
func Run(t *testing.T, newLedger func(t *testing.T) ledger.Ledger) {
	t.Helper()
	run := strings.ToLower(rand.Text()[:8])
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			l := newLedger(t)
			if l == nil {
				t.Fatal("ledgertest: newLedger returned nil")
			}
			c.run(t, &suite{l: l, prefix: "ledgertest-" + run + "-" + strings.ReplaceAll(c.name, " ", "_")})
		})
	}
}

// suite is what a case works with: the ledger under test and its keys.
type suite struct {
	l      ledger.Ledger
	prefix string
}

// key returns a key of this case's own.
func (s *suite) key(name string) string { return s.prefix + "/" + name }

// t0 is the suite's clock: whole seconds, so that a store that keeps
// milliseconds keeps every time the suite uses exactly.
var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

const lease = time.Minute

var ctx = context.Background()

// get reads key's entry, which must exist.
func (s *suite) get(t testing.TB, key string) ledger.Entry {
	t.Helper()
	e, ok, err := s.l.Get(ctx, key)
	require.NoError(t, err, "Get(%q)", key)
	require.True(t, ok, "Get(%q): the entry must exist", key)
	require.Equal(t, key, e.Key, "Get(%q): Entry.Key", key)
	return e
}

// beginRace runs Concurrency Begins on key at once, owner "m<i>" with
// digest(i), and requires that exactly one wins: it returns the winner's i
// and every Begin's error (nil for the winner's).
func (s *suite) beginRace(t testing.TB, key string, digest func(i int) string) (int, []error) {
	t.Helper()
	errs := make([]error, Concurrency)
	var wg sync.WaitGroup
	for i := range Concurrency {
		wg.Go(func() {
			_, errs[i] = s.l.Begin(ctx, key, fmt.Sprint("m", i), digest(i), t0, lease)
		})
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		if err == nil {
			assert.Equal(t, -1, won, "m%d and m%d both won", won, i)
			won = i
		}
	}
	require.NotEqual(t, -1, won, "one Begin must win")
	return won, errs
}

// begin claims key for owner at now, which must succeed.
func (s *suite) begin(t testing.TB, key, owner string, now time.Time) ledger.Entry {
	t.Helper()
	prev, err := s.l.Begin(ctx, key, owner, "", now, lease)
	require.NoError(t, err, "Begin(%q, %q)", key, owner)
	return prev
}

func sameTime(t testing.TB, want, got time.Time, what string) {
	t.Helper()
	assert.True(t, want.Equal(got), "%s: want %v, got %v", what, want, got)
}

// touched checks what every change sets: UpdatedAt and ExpiresAt.
func touched(t testing.TB, e ledger.Entry, now time.Time) {
	t.Helper()
	sameTime(t, now, e.UpdatedAt, "UpdatedAt is the caller's now")
	assert.False(t, e.ExpiresAt.Before(now.Add(MinRetention)),
		"ExpiresAt %v must be at least %v after the change at %v", e.ExpiresAt, MinRetention, now)
}

// effectUnknown makes key what a crash after a mutating call leaves and
// the next delivery dead-letters as effect_unknown: begun by m1, its
// effect started, then dead-lettered at t0+time.Second.
func (s *suite) effectUnknown(t testing.TB, key string) ledger.Entry {
	t.Helper()
	s.begin(t, key, "m1", t0)
	require.NoError(t, s.l.StartEffect(ctx, key, "m1", t0))
	e, err := s.l.DeadLettered(ctx, key, deadletter.ReasonEffectUnknown, t0.Add(time.Second))
	require.NoError(t, err)
	require.True(t, e.EffectUnknown(t0.Add(time.Second)), "the entry is effect unknown: %+v", e)
	return e
}

// Two digests of different args (any non-empty strings will do: the
// ledger compares them, it does not compute them).
const (
	digestA = "jcs-sha256:aaaa"
	digestB = "jcs-sha256:bbbb"
)

var (
	confirmed = ledger.Reconciliation{Outcome: ledger.OutcomeEffectConfirmed, Receipt: "ext-42", By: "alice"}
	noEffect  = ledger.Reconciliation{Outcome: ledger.OutcomeNoEffect, By: "alice"}
)

// A case is one rule of the contract. It takes a testing.TB, not a
// *testing.T, so that the suite's own test can run it on a recorder.
type testCase struct {
	name string
	run  func(t testing.TB, s *suite)
}

var cases = []testCase{
	{"Get of an unknown key", func(t testing.TB, s *suite) {
		e, ok, err := s.l.Get(ctx, s.key("nope"))
		require.NoError(t, err)
		assert.False(t, ok, "an unknown key has no entry")
		assert.Equal(t, ledger.Entry{}, e, "and Get returns the zero Entry")
	}},
	{"Begin of a new key", func(t testing.TB, s *suite) {
		k := s.key("k")
		prev := s.begin(t, k, "m1", t0)
		assert.Equal(t, ledger.Entry{}, prev, "a new key: the entry before is the zero Entry")
		e := s.get(t, k)
		assert.Equal(t, ledger.StateInProgress, e.State)
		assert.Equal(t, "m1", e.Owner)
		sameTime(t, t0.Add(lease), e.LeaseUntil, "LeaseUntil is now+lease")
		assert.False(t, e.EffectStarted)
		assert.Empty(t, e.Receipt)
		assert.Zero(t, e.DeadLetterCount)
		assert.Zero(t, e.RedriveCount)
		touched(t, e, t0)
	}},
	{"Begin again by the same owner", func(t testing.TB, s *suite) {
		// A redelivery of the same message (the same id) claims it again.
		k := s.key("k")
		s.begin(t, k, "m1", t0)
		prev := s.begin(t, k, "m1", t0.Add(time.Second))
		assert.Equal(t, ledger.StateInProgress, prev.State, "Begin returns the entry as it was")
		assert.Equal(t, "m1", prev.Owner)
		sameTime(t, t0.Add(lease), prev.LeaseUntil, "the earlier lease")
		sameTime(t, t0.Add(time.Second+lease), s.get(t, k).LeaseUntil, "the lease is extended")
	}},
	{"Begin of a key leased by another owner", func(t testing.TB, s *suite) {
		k := s.key("k")
		s.begin(t, k, "m1", t0)
		before := s.get(t, k)
		prev, err := s.l.Begin(ctx, k, "m2", "", t0.Add(time.Second), lease)
		require.ErrorIs(t, err, ledger.ErrLeased)
		assert.NotErrorIs(t, err, ledger.ErrDone)
		assert.Equal(t, "m1", prev.Owner, "ErrLeased returns the entry: the holder")
		assert.Equal(t, ledger.StateInProgress, prev.State)
		assert.Equal(t, before, s.get(t, k), "a refused Begin changes nothing")
	}},
	{"Begin at the lease's expiry", func(t testing.TB, s *suite) {
		// The lease holds while now < LeaseUntil.
		k := s.key("k")
		s.begin(t, k, "m1", t0)
		_, err := s.l.Begin(ctx, k, "m2", "", t0.Add(lease-time.Millisecond), lease)
		require.ErrorIs(t, err, ledger.ErrLeased, "a millisecond before LeaseUntil the lease holds")
		prev, err := s.l.Begin(ctx, k, "m2", "", t0.Add(lease), lease)
		require.NoError(t, err, "at LeaseUntil the lease has expired")
		assert.Equal(t, "m1", prev.Owner)
		e := s.get(t, k)
		assert.Equal(t, "m2", e.Owner, "the new owner holds the key")
		sameTime(t, t0.Add(2*lease), e.LeaseUntil, "the new lease")
		_, err = s.l.Begin(ctx, k, "m1", "", t0.Add(lease+time.Second), lease)
		require.ErrorIs(t, err, ledger.ErrLeased, "the first owner lost the key")
	}},
	{"Begin of a done key is a no-op", func(t testing.TB, s *suite) {
		k := s.key("k")
		s.begin(t, k, "m1", t0)
		require.NoError(t, s.l.Complete(ctx, k, "m1", "receipt-1", t0.Add(time.Second)))
		before := s.get(t, k)
		for _, owner := range []string{"m1", "m2"} {
			prev, err := s.l.Begin(ctx, k, owner, "", t0.Add(time.Hour), lease)
			require.ErrorIs(t, err, ledger.ErrDone, "owner %s", owner)
			assert.NotErrorIs(t, err, ledger.ErrLeased)
			assert.Equal(t, ledger.StateDone, prev.State, "ErrDone returns the entry")
			assert.Equal(t, "receipt-1", prev.Receipt, "with its receipt")
		}
		assert.Equal(t, before, s.get(t, k), "a refused Begin changes nothing, not even UpdatedAt")
	}},
	{"Begin of a dead-lettered key", func(t testing.TB, s *suite) {
		// That is a redrive: anyone may claim it, and the counts stay.
		k := s.key("k")
		s.begin(t, k, "m1", t0)
		_, err := s.l.DeadLettered(ctx, k, deadletter.ReasonUnclassified, t0.Add(time.Second))
		require.NoError(t, err)
		_, err = s.l.Redriven(ctx, k, t0.Add(time.Hour))
		require.NoError(t, err)
		prev := s.begin(t, k, "m9", t0.Add(2*time.Hour))
		assert.Equal(t, ledger.StateDeadLettered, prev.State)
		assert.Equal(t, deadletter.ReasonUnclassified, prev.LastReason)
		assert.Equal(t, 1, prev.DeadLetterCount)
		assert.Equal(t, 1, prev.RedriveCount)
		e := s.get(t, k)
		assert.Equal(t, ledger.StateInProgress, e.State)
		assert.Equal(t, "m9", e.Owner)
		assert.Equal(t, 1, e.DeadLetterCount, "Begin keeps the counts")
		assert.Equal(t, 1, e.RedriveCount, "Begin keeps the counts")
	}},
	{"Begin of a released key", func(t testing.TB, s *suite) {
		k := s.key("k")
		s.begin(t, k, "m1", t0)
		require.NoError(t, s.l.Release(ctx, k, "m1", t0.Add(time.Second)))
		prev := s.begin(t, k, "m2", t0.Add(2*time.Second))
		assert.Equal(t, "m1", prev.Owner)
		assert.True(t, prev.LeaseUntil.IsZero(), "Release cleared the lease, got %v", prev.LeaseUntil)
	}},
	{"Begin of a key only Redriven touched", func(t testing.TB, s *suite) {
		// A letter the broker moved (the worker never recorded it) and an
		// operator redrove: the key has a redrive count and no state.
		k := s.key("k")
		_, err := s.l.Redriven(ctx, k, t0)
		require.NoError(t, err)
		prev := s.begin(t, k, "m1", t0.Add(time.Second))
		assert.Equal(t, 1, prev.RedriveCount)
		assert.NotEqual(t, ledger.StateDone, prev.State)
		assert.Equal(t, 1, s.get(t, k).RedriveCount)
	}},
	{"Begin concurrently on one key: exactly one wins", func(t testing.TB, s *suite) {
		k := s.key("k")
		won, errs := s.beginRace(t, k, func(int) string { return "" })
		for i, err := range errs {
			if i != won {
				assert.ErrorIs(t, err, ledger.ErrLeased, "m%d", i)
			}
		}
		assert.Equal(t, fmt.Sprint("m", won), s.get(t, k).Owner, "the winner holds the key")
	}},
	{"Begin records the args digest", func(t testing.TB, s *suite) {
		k := s.key("k")
		_, err := s.l.Begin(ctx, k, "m1", digestA, t0, lease)
		require.NoError(t, err)
		assert.Equal(t, digestA, s.get(t, k).ArgsDigest, "the first Begin's digest is kept")
		// A redelivery (the same digest, the same or another owner) goes on.
		require.NoError(t, s.l.Release(ctx, k, "m1", t0.Add(time.Second)))
		prev, err := s.l.Begin(ctx, k, "m2", digestA, t0.Add(2*time.Second), lease)
		require.NoError(t, err)
		assert.Equal(t, digestA, prev.ArgsDigest)
		assert.Equal(t, digestA, s.get(t, k).ArgsDigest)
	}},
	{"Begin with another digest is refused in every state", func(t testing.TB, s *suite) {
		// The key was issued for another task: ErrKeyReused comes before
		// ErrDone and ErrLeased, and changes nothing.
		for _, st := range []struct {
			name string
			make func(k string)
		}{
			{"in progress, leased by another owner", func(k string) {}},
			{"in progress, leased by the same owner", func(k string) {}},
			{"released", func(k string) { require.NoError(t, s.l.Release(ctx, k, "m1", t0.Add(time.Second))) }},
			{"done", func(k string) { require.NoError(t, s.l.Complete(ctx, k, "m1", "receipt-1", t0.Add(time.Second))) }},
			{"dead-lettered", func(k string) {
				_, err := s.l.DeadLettered(ctx, k, deadletter.ReasonUnclassified, t0.Add(time.Second))
				require.NoError(t, err)
			}},
			{"lease expired", func(k string) {}},
		} {
			k := s.key(strings.ReplaceAll(st.name, " ", "_"))
			_, err := s.l.Begin(ctx, k, "m1", digestA, t0, lease)
			require.NoError(t, err, st.name)
			st.make(k)
			before := s.get(t, k)
			owner, now := "m2", t0.Add(time.Minute)
			switch st.name {
			case "in progress, leased by the same owner":
				owner = "m1"
			case "lease expired":
				now = t0.Add(2 * lease)
			}
			prev, err := s.l.Begin(ctx, k, owner, digestB, now, lease)
			require.ErrorIs(t, err, ledger.ErrKeyReused, st.name)
			assert.NotErrorIs(t, err, ledger.ErrDone, st.name)
			assert.NotErrorIs(t, err, ledger.ErrLeased, st.name)
			assert.Equal(t, digestA, prev.ArgsDigest, "%s: ErrKeyReused returns the entry, with the digest it holds", st.name)
			assert.Equal(t, before, s.get(t, k), "%s: a refused Begin changes nothing, not even UpdatedAt", st.name)
		}
	}},
	{"Begin without a digest checks nothing and keeps the digest", func(t testing.TB, s *suite) {
		k := s.key("k")
		_, err := s.l.Begin(ctx, k, "m1", digestA, t0, lease)
		require.NoError(t, err)
		require.NoError(t, s.l.Release(ctx, k, "m1", t0.Add(time.Second)))
		_, err = s.l.Begin(ctx, k, "m2", "", t0.Add(2*time.Second), lease)
		require.NoError(t, err, "a caller that gives no digest is not checked")
		assert.Equal(t, digestA, s.get(t, k).ArgsDigest, "and does not erase the digest")
	}},
	{"An entry without a digest takes the first one", func(t testing.TB, s *suite) {
		// Entries written before digests were kept (or by Redriven and
		// DeadLettered alone) have none: the first Begin that brings one
		// records it, and from then on the key is checked.
		old := s.key("old")
		s.begin(t, old, "m1", t0) // no digest: an older row
		require.NoError(t, s.l.Release(ctx, old, "m1", t0.Add(time.Second)))
		require.Empty(t, s.get(t, old).ArgsDigest)
		_, err := s.l.Begin(ctx, old, "m2", digestA, t0.Add(2*time.Second), lease)
		require.NoError(t, err, "an entry without a digest accepts any")
		assert.Equal(t, digestA, s.get(t, old).ArgsDigest, "and records it")
		require.NoError(t, s.l.Release(ctx, old, "m2", t0.Add(3*time.Second)))
		_, err = s.l.Begin(ctx, old, "m3", digestB, t0.Add(4*time.Second), lease)
		require.ErrorIs(t, err, ledger.ErrKeyReused, "then another digest is refused")

		moved := s.key("moved") // a broker-moved letter, redriven
		_, err = s.l.Redriven(ctx, moved, t0)
		require.NoError(t, err)
		_, err = s.l.Begin(ctx, moved, "m1", digestB, t0.Add(time.Second), lease)
		require.NoError(t, err)
		assert.Equal(t, digestB, s.get(t, moved).ArgsDigest)

		// A done entry without a digest cannot tell: any args are the done
		// task, as before digests (ErrDone), and the entry stays as it was.
		done := s.key("done")
		s.begin(t, done, "m1", t0)
		require.NoError(t, s.l.Complete(ctx, done, "m1", "receipt-1", t0.Add(time.Second)))
		before := s.get(t, done)
		_, err = s.l.Begin(ctx, done, "m2", digestA, t0.Add(time.Hour), lease)
		require.ErrorIs(t, err, ledger.ErrDone)
		assert.Equal(t, before, s.get(t, done), "a refused Begin records no digest")
	}},
	{"Begin concurrently with other digests: one wins, the rest are refused", func(t testing.TB, s *suite) {
		k := s.key("k")
		won, errs := s.beginRace(t, k, func(i int) string { return fmt.Sprint("digest-", i) })
		for i, err := range errs {
			// A Begin that lost the race to the write sees the winner's
			// digest (ErrKeyReused); one that read the item first may see
			// only its lease (ErrLeased). Neither ran.
			if i != won && !errors.Is(err, ledger.ErrKeyReused) {
				assert.ErrorIs(t, err, ledger.ErrLeased, "m%d", i)
			}
		}
		e := s.get(t, k)
		assert.Equal(t, fmt.Sprint("m", won), e.Owner, "the winner holds the key")
		assert.Equal(t, fmt.Sprint("digest-", won), e.ArgsDigest, "with its digest")
	}},
	{"StartEffect by the holder", func(t testing.TB, s *suite) {
		k := s.key("k")
		s.begin(t, k, "m1", t0)
		require.NoError(t, s.l.StartEffect(ctx, k, "m1", t0.Add(time.Second)))
		e := s.get(t, k)
		assert.True(t, e.EffectStarted)
		assert.Equal(t, ledger.StateInProgress, e.State)
		assert.Equal(t, "m1", e.Owner)
		touched(t, e, t0.Add(time.Second))
		// A later delivery sees the started effect without a receipt.
		prev := s.begin(t, k, "m2", t0.Add(2*lease))
		assert.True(t, prev.EffectStarted)
		assert.Empty(t, prev.Receipt)
	}},
	{"StartEffect by anyone else", func(t testing.TB, s *suite) {
		// The mutating call must not start: ErrLeased, and nothing changes.
		taken, done, unknown := s.key("taken"), s.key("done"), s.key("unknown")
		s.begin(t, taken, "m1", t0)
		s.begin(t, taken, "m2", t0.Add(lease)) // m1's lease expired and m2 took the key over
		s.begin(t, done, "m1", t0)
		require.NoError(t, s.l.Complete(ctx, done, "m1", "r", t0))
		for _, c := range []struct{ key, owner string }{{taken, "m1"}, {taken, "m3"}, {done, "m1"}, {unknown, "m1"}} {
			before, existed, err := s.l.Get(ctx, c.key)
			require.NoError(t, err)
			err = s.l.StartEffect(ctx, c.key, c.owner, t0.Add(2*lease))
			require.ErrorIs(t, err, ledger.ErrLeased, "StartEffect(%q, %q)", c.key, c.owner)
			after, exists, err := s.l.Get(ctx, c.key)
			require.NoError(t, err)
			assert.Equal(t, existed, exists, "StartEffect(%q, %q) creates no entry", c.key, c.owner)
			assert.Equal(t, before, after, "StartEffect(%q, %q) changes nothing", c.key, c.owner)
		}
	}},
	{"Complete records the receipt", func(t testing.TB, s *suite) {
		k := s.key("k")
		s.begin(t, k, "m1", t0)
		require.NoError(t, s.l.StartEffect(ctx, k, "m1", t0))
		require.NoError(t, s.l.Complete(ctx, k, "m1", "sha256:abc", t0.Add(time.Second)))
		e := s.get(t, k)
		assert.Equal(t, ledger.StateDone, e.State)
		assert.Equal(t, "sha256:abc", e.Receipt)
		assert.True(t, e.LeaseUntil.IsZero(), "done clears the lease, got %v", e.LeaseUntil)
		assert.True(t, e.EffectStarted, "Complete keeps EffectStarted")
		touched(t, e, t0.Add(time.Second))
	}},
	{"Complete after the lease was lost", func(t testing.TB, s *suite) {
		// The effect happened: its receipt is kept whoever holds the lease.
		k := s.key("k")
		s.begin(t, k, "m1", t0)
		s.begin(t, k, "m2", t0.Add(lease))
		require.NoError(t, s.l.Complete(ctx, k, "m1", "r1", t0.Add(lease+time.Second)))
		e := s.get(t, k)
		assert.Equal(t, ledger.StateDone, e.State)
		assert.Equal(t, "r1", e.Receipt)
		_, err := s.l.Begin(ctx, k, "m2", "", t0.Add(lease+2*time.Second), lease)
		require.ErrorIs(t, err, ledger.ErrDone)
	}},
	{"Release by the holder", func(t testing.TB, s *suite) {
		k := s.key("k")
		s.begin(t, k, "m1", t0)
		require.NoError(t, s.l.Release(ctx, k, "m1", t0.Add(time.Second)))
		e := s.get(t, k)
		assert.True(t, e.LeaseUntil.IsZero(), "the lease is cleared, got %v", e.LeaseUntil)
		assert.NotEqual(t, ledger.StateDone, e.State)
		touched(t, e, t0.Add(time.Second))
	}},
	{"Release by anyone else does nothing", func(t testing.TB, s *suite) {
		held, done, dead, unknown := s.key("held"), s.key("done"), s.key("dead"), s.key("unknown")
		s.begin(t, held, "m1", t0)
		s.begin(t, done, "m1", t0)
		require.NoError(t, s.l.Complete(ctx, done, "m1", "r", t0))
		s.begin(t, dead, "m1", t0)
		_, err := s.l.DeadLettered(ctx, dead, deadletter.ReasonPolicyLimit, t0)
		require.NoError(t, err)
		for _, c := range []struct{ key, owner string }{{held, "m2"}, {done, "m1"}, {dead, "m1"}, {unknown, "m1"}} {
			before, existed, err := s.l.Get(ctx, c.key)
			require.NoError(t, err)
			require.NoError(t, s.l.Release(ctx, c.key, c.owner, t0.Add(time.Second)), "Release(%q, %q)", c.key, c.owner)
			after, exists, err := s.l.Get(ctx, c.key)
			require.NoError(t, err)
			assert.Equal(t, existed, exists, "Release(%q, %q) creates no entry", c.key, c.owner)
			assert.Equal(t, before, after, "Release(%q, %q) changes nothing", c.key, c.owner)
		}
		_, err = s.l.Begin(ctx, held, "m2", "", t0.Add(time.Second), lease)
		require.ErrorIs(t, err, ledger.ErrLeased, "m1 still holds the key")
	}},
	{"DeadLettered counts", func(t testing.TB, s *suite) {
		k := s.key("k")
		s.begin(t, k, "m1", t0)
		e, err := s.l.DeadLettered(ctx, k, deadletter.ReasonSchemaInvalid, t0.Add(time.Second))
		require.NoError(t, err)
		assert.Equal(t, ledger.StateDeadLettered, e.State)
		assert.Equal(t, deadletter.ReasonSchemaInvalid, e.LastReason)
		assert.Equal(t, 1, e.DeadLetterCount)
		assert.True(t, e.LeaseUntil.IsZero(), "dead-lettering clears the lease, got %v", e.LeaseUntil)
		touched(t, e, t0.Add(time.Second))
		assert.Equal(t, e, s.get(t, k), "DeadLettered returns the new entry")

		s.begin(t, k, "m2", t0.Add(time.Hour))
		e, err = s.l.DeadLettered(ctx, k, deadletter.ReasonRedriveLoop, t0.Add(2*time.Hour))
		require.NoError(t, err)
		assert.Equal(t, 2, e.DeadLetterCount)
		assert.Equal(t, deadletter.ReasonRedriveLoop, e.LastReason, "the last reason wins")
	}},
	{"DeadLettered of an unknown key", func(t testing.TB, s *suite) {
		k := s.key("k")
		e, err := s.l.DeadLettered(ctx, k, deadletter.ReasonPolicyLimit, t0)
		require.NoError(t, err)
		assert.Equal(t, ledger.StateDeadLettered, e.State)
		assert.Equal(t, 1, e.DeadLetterCount)
		assert.Equal(t, k, e.Key)
		assert.Equal(t, e, s.get(t, k))
	}},
	{"Redriven counts", func(t testing.TB, s *suite) {
		k := s.key("k")
		s.begin(t, k, "m1", t0)
		_, err := s.l.DeadLettered(ctx, k, deadletter.ReasonEffectUnknown, t0)
		require.NoError(t, err)
		for i := 1; i <= 3; i++ {
			now := t0.Add(time.Duration(i) * time.Hour)
			e, err := s.l.Redriven(ctx, k, now)
			require.NoError(t, err)
			assert.Equal(t, i, e.RedriveCount)
			assert.Equal(t, 1, e.DeadLetterCount, "Redriven leaves the dead-letter count")
			assert.Equal(t, ledger.StateDeadLettered, e.State, "Redriven leaves the state")
			assert.Equal(t, deadletter.ReasonEffectUnknown, e.LastReason)
			touched(t, e, now)
			assert.Equal(t, e, s.get(t, k), "Redriven returns the new entry")
		}
	}},
	{"Redriven of an unknown key", func(t testing.TB, s *suite) {
		k := s.key("k")
		e, err := s.l.Redriven(ctx, k, t0)
		require.NoError(t, err)
		assert.Equal(t, k, e.Key)
		assert.Equal(t, 1, e.RedriveCount)
		assert.Zero(t, e.DeadLetterCount)
		assert.Empty(t, e.State, "only Redriven touched it: no state")
	}},
	{"Counts concurrently: no increment is lost", func(t testing.TB, s *suite) {
		k := s.key("k")
		errs := make([]error, 2*Concurrency)
		var wg sync.WaitGroup
		for i := range Concurrency {
			wg.Go(func() { _, errs[i] = s.l.DeadLettered(ctx, k, deadletter.ReasonUnclassified, t0) })
			wg.Go(func() { _, errs[Concurrency+i] = s.l.Redriven(ctx, k, t0) })
		}
		wg.Wait()
		require.NoError(t, errors.Join(errs...))
		e := s.get(t, k)
		assert.Equal(t, Concurrency, e.DeadLetterCount)
		assert.Equal(t, Concurrency, e.RedriveCount)
	}},
	{"Reconcile: effect confirmed marks the key done", func(t testing.TB, s *suite) {
		k := s.key("k")
		s.effectUnknown(t, k)
		now := t0.Add(time.Hour)
		e, err := s.l.Reconcile(ctx, k, confirmed, now)
		require.NoError(t, err)
		assert.Equal(t, ledger.StateDone, e.State)
		assert.Equal(t, "ext-42", e.Receipt, "the owner's receipt")
		assert.Equal(t, ledger.OutcomeEffectConfirmed, e.Reconciled)
		assert.Equal(t, "alice", e.ReconciledBy)
		sameTime(t, now, e.ReconciledAt, "ReconciledAt is the caller's now")
		assert.Equal(t, 1, e.DeadLetterCount, "the counts are kept")
		assert.Equal(t, deadletter.ReasonEffectUnknown, e.LastReason)
		assert.True(t, e.EffectConfirmed())
		assert.False(t, e.EffectUnknown(now))
		touched(t, e, now)
		assert.Equal(t, e, s.get(t, k), "Reconcile returns the new entry")
		// Never run again: a redrive's delivery is a no-op.
		_, err = s.l.Begin(ctx, k, "m2", "", now.Add(time.Second), lease)
		require.ErrorIs(t, err, ledger.ErrDone)
	}},
	{"Reconcile: no effect lets a redrive run the task afresh", func(t testing.TB, s *suite) {
		k := s.key("k")
		s.effectUnknown(t, k)
		now := t0.Add(time.Hour)
		e, err := s.l.Reconcile(ctx, k, noEffect, now)
		require.NoError(t, err)
		assert.Equal(t, ledger.StateDeadLettered, e.State, "still dead-lettered: a redrive moves it")
		assert.False(t, e.EffectStarted, "no effect clears effect_started")
		assert.Empty(t, e.Receipt)
		assert.Equal(t, ledger.OutcomeNoEffect, e.Reconciled)
		assert.Equal(t, "alice", e.ReconciledBy)
		sameTime(t, now, e.ReconciledAt, "ReconciledAt")
		assert.True(t, e.NoEffect())
		touched(t, e, now)
		assert.Equal(t, e, s.get(t, k), "Reconcile returns the new entry")
		// The redriven delivery claims it and sees no started effect: the
		// worker runs it instead of dead-lettering it as effect_unknown again.
		prev := s.begin(t, k, "m2", now.Add(time.Second))
		assert.False(t, prev.EffectStarted)
		assert.Equal(t, ledger.StateDeadLettered, prev.State)
		require.NoError(t, s.l.Complete(ctx, k, "m2", "sha256:def", now.Add(2*time.Second)))
		assert.Equal(t, ledger.StateDone, s.get(t, k).State)
	}},
	{"Reconcile again: the same is a no-op, another is refused", func(t testing.TB, s *suite) {
		a, b := s.key("a"), s.key("b")
		s.effectUnknown(t, a)
		s.effectUnknown(t, b)
		first, err := s.l.Reconcile(ctx, a, confirmed, t0.Add(time.Hour))
		require.NoError(t, err)
		again, err := s.l.Reconcile(ctx, a, confirmed, t0.Add(2*time.Hour))
		require.NoError(t, err, "the same reconciliation again")
		assert.Equal(t, first, again, "returns the entry as it was")
		assert.Equal(t, first, s.get(t, a), "and changes nothing")
		for _, rc := range []ledger.Reconciliation{noEffect, {Outcome: ledger.OutcomeEffectConfirmed, Receipt: "ext-other", By: "alice"}} {
			_, err = s.l.Reconcile(ctx, a, rc, t0.Add(3*time.Hour))
			require.ErrorIs(t, err, ledger.ErrReconciled, "%s %s after effect_confirmed ext-42", rc.Outcome, rc.Receipt)
			assert.Equal(t, first, s.get(t, a), "a refused reconciliation changes nothing")
		}

		first, err = s.l.Reconcile(ctx, b, noEffect, t0.Add(time.Hour))
		require.NoError(t, err)
		again, err = s.l.Reconcile(ctx, b, noEffect, t0.Add(2*time.Hour))
		require.NoError(t, err)
		assert.Equal(t, first, again)
		_, err = s.l.Reconcile(ctx, b, confirmed, t0.Add(3*time.Hour))
		require.ErrorIs(t, err, ledger.ErrReconciled, "effect_confirmed after no_effect")
		assert.Equal(t, first, s.get(t, b))
	}},
	{"Reconcile of a key whose effect is not unknown", func(t testing.TB, s *suite) {
		unknown, dead, done, held := s.key("unknown"), s.key("dead"), s.key("done"), s.key("held")
		_, err := s.l.DeadLettered(ctx, dead, deadletter.ReasonSchemaInvalid, t0) // no mutating call started
		require.NoError(t, err)
		s.begin(t, done, "m1", t0)
		require.NoError(t, s.l.StartEffect(ctx, done, "m1", t0))
		require.NoError(t, s.l.Complete(ctx, done, "m1", "r", t0))
		s.begin(t, held, "m1", t0)
		require.NoError(t, s.l.StartEffect(ctx, held, "m1", t0)) // a delivery is at work on it now
		for _, c := range []struct {
			key  string
			want error
		}{{unknown, ledger.ErrNotEffectUnknown}, {dead, ledger.ErrNotEffectUnknown}, {done, ledger.ErrNotEffectUnknown}, {held, ledger.ErrLeased}} {
			for _, rc := range []ledger.Reconciliation{confirmed, noEffect} {
				before, existed, err := s.l.Get(ctx, c.key)
				require.NoError(t, err)
				_, err = s.l.Reconcile(ctx, c.key, rc, t0.Add(time.Second))
				require.ErrorIs(t, err, c.want, "Reconcile(%q, %s)", c.key, rc.Outcome)
				after, exists, err := s.l.Get(ctx, c.key)
				require.NoError(t, err)
				assert.Equal(t, existed, exists, "Reconcile(%q) creates no entry", c.key)
				assert.Equal(t, before, after, "Reconcile(%q, %s) changes nothing", c.key, rc.Outcome)
			}
		}
	}},
	{"Reconcile after the lease expired", func(t testing.TB, s *suite) {
		// A Lambda timeout or crash after the call started: the broker moves
		// the message (receive_limit) and the key stays in progress.
		k := s.key("k")
		s.begin(t, k, "m1", t0)
		require.NoError(t, s.l.StartEffect(ctx, k, "m1", t0))
		_, err := s.l.Reconcile(ctx, k, noEffect, t0.Add(lease-time.Millisecond))
		require.ErrorIs(t, err, ledger.ErrLeased, "m1 still holds it")
		e, err := s.l.Reconcile(ctx, k, noEffect, t0.Add(lease))
		require.NoError(t, err, "at the lease's expiry")
		assert.False(t, e.EffectStarted)
		assert.True(t, e.NoEffect())
	}},
	{"Reconcile refuses a malformed reconciliation", func(t testing.TB, s *suite) {
		k := s.key("k")
		before := s.effectUnknown(t, k)
		for _, rc := range []ledger.Reconciliation{
			{Outcome: ledger.OutcomeEffectConfirmed, By: "alice"},                 // no receipt
			{Outcome: ledger.OutcomeEffectConfirmed, Receipt: "  ", By: "alice"},  // a blank one
			{Outcome: ledger.OutcomeNoEffect, Receipt: "ext-1", By: "alice"},      // a receipt of no effect
			{Outcome: "maybe", By: "alice"},                                       // no such outcome
			{Outcome: ledger.OutcomeNoEffect},                                     // nobody
			{Outcome: ledger.OutcomeEffectConfirmed, Receipt: "ext-1", By: "   "}, // a blank somebody
		} {
			_, err := s.l.Reconcile(ctx, k, rc, t0.Add(time.Hour))
			require.ErrorIs(t, err, ledger.ErrInvalid, "%+v", rc)
		}
		assert.Equal(t, before, s.get(t, k), "nothing changed")
	}},
	{"Reconcile: an effect started again after no effect is unknown again", func(t testing.TB, s *suite) {
		k := s.key("k")
		s.effectUnknown(t, k)
		_, err := s.l.Reconcile(ctx, k, noEffect, t0.Add(time.Hour))
		require.NoError(t, err)
		now := t0.Add(2 * time.Hour)
		s.begin(t, k, "m2", now)
		require.NoError(t, s.l.StartEffect(ctx, k, "m2", now))
		e, err := s.l.DeadLettered(ctx, k, deadletter.ReasonEffectUnknown, now.Add(time.Second))
		require.NoError(t, err)
		assert.False(t, e.NoEffect(), "the old reconciliation no longer holds")
		assert.True(t, e.EffectUnknown(now.Add(time.Second)))
		e, err = s.l.Reconcile(ctx, k, confirmed, now.Add(time.Hour))
		require.NoError(t, err, "the new incident is reconciled on its own")
		assert.True(t, e.EffectConfirmed())
	}},
	{"Reconcile concurrently: one outcome wins", func(t testing.TB, s *suite) {
		k := s.key("k")
		s.effectUnknown(t, k)
		errs := make([]error, 2*Concurrency)
		var wg sync.WaitGroup
		for i := range Concurrency {
			wg.Go(func() { _, errs[i] = s.l.Reconcile(ctx, k, confirmed, t0.Add(time.Hour)) })
			wg.Go(func() { _, errs[Concurrency+i] = s.l.Reconcile(ctx, k, noEffect, t0.Add(time.Hour)) })
		}
		wg.Wait()
		e := s.get(t, k)
		win, lose := errs[:Concurrency], errs[Concurrency:]
		if e.Reconciled == ledger.OutcomeNoEffect {
			win, lose = lose, win
		} else {
			require.Equal(t, ledger.OutcomeEffectConfirmed, e.Reconciled)
		}
		for i := range Concurrency {
			assert.NoError(t, win[i], "the winning outcome, every time")
			assert.ErrorIs(t, lose[i], ledger.ErrReconciled, "the other, every time")
		}
	}},
	{"Keys are independent", func(t testing.TB, s *suite) {
		a, b := s.key("a"), s.key("b")
		s.begin(t, a, "m1", t0)
		require.NoError(t, s.l.Complete(ctx, a, "m1", "r", t0))
		_, err := s.l.DeadLettered(ctx, a, deadletter.ReasonPolicyLimit, t0)
		require.NoError(t, err)
		_, ok, err := s.l.Get(ctx, b)
		require.NoError(t, err)
		assert.False(t, ok, "b has no entry")
		prev := s.begin(t, b, "m2", t0)
		assert.Equal(t, ledger.Entry{}, prev, "b is a new key")
	}},
	{"Scoped keys of other pipelines and tenants are apart", func(t testing.TB, s *suite) {
		// One raw idempotency key, four owners: what one does to its entry
		// changes nothing for the others (a key is the producer's only
		// within its pipeline and tenant).
		raw := s.key("acme:run-0042:task-0007")
		victim := ledger.Key(s.prefix+"-agent-tasks", "acme", raw)
		others := []string{
			ledger.Key(s.prefix+"-agent-steps", "mallory", raw),
			ledger.Key(s.prefix+"-agent-tasks", "mallory", raw),
			ledger.Key(s.prefix+"-agent-steps", "acme", raw),
		}
		for i, k := range others {
			_, err := s.l.Begin(ctx, k, fmt.Sprint("attacker-", i), digestB, t0, lease)
			require.NoError(t, err)
			require.NoError(t, s.l.Complete(ctx, k, fmt.Sprint("attacker-", i), "r-attacker", t0))
		}
		_, err := s.l.Redriven(ctx, others[1], t0)
		require.NoError(t, err)
		prev, err := s.l.Begin(ctx, victim, "m1", digestA, t0, lease)
		require.NoError(t, err, "the victim's task is neither a duplicate nor a reused key")
		assert.Zero(t, prev.RedriveCount, "and counts nothing of the others'")
		assert.Empty(t, prev.Receipt)
		require.NoError(t, s.l.Complete(ctx, victim, "m1", "r-victim", t0))
		assert.Equal(t, "r-victim", s.get(t, victim).Receipt)
		for _, k := range others {
			assert.Equal(t, "r-attacker", s.get(t, k).Receipt, "each scope keeps its own entry")
		}
	}},
	{"Scoped keys cannot be forged with separators", func(t testing.TB, s *suite) {
		// Parts that join to the same text are different keys.
		p := s.prefix
		forged := [][2]string{
			{ledger.Key(p, "acme", "x:k"), ledger.Key(p, "acme:x", "k")},
			{ledger.Key(p+":acme", "x", "k2"), ledger.Key(p, "acme:x", "k2")},
			{ledger.Key(p, "4:acme", "k"), ledger.Key(p, "4", "acme:k")},
			{ledger.Key(p, "", "acme:k"), ledger.Key(p, "acme", "k")},
		}
		for i, f := range forged {
			require.NotEqual(t, f[0], f[1])
			for j, g := range forged {
				require.True(t, i == j || g[0] != f[1] && g[1] != f[1], "the cases are apart")
			}
			_, err := s.l.Begin(ctx, f[0], "m1", digestB, t0, lease)
			require.NoError(t, err)
			require.NoError(t, s.l.Complete(ctx, f[0], "m1", "r-forged", t0))
			_, err = s.l.Begin(ctx, f[1], "m2", digestA, t0, lease)
			require.NoError(t, err, "%q is not %q", f[1], f[0])
			require.NoError(t, s.l.Complete(ctx, f[1], "m2", "r-own", t0))
		}
	}},
	{"A task done under its unscoped key stays done", func(t testing.TB, s *suite) {
		// The upgrade: the version before scoping wrote the bare key. The
		// same task (the same digest, or an entry without one) is a no-op.
		for _, d := range []struct{ name, old, now string }{{"same digest", digestA, digestA}, {"no digest then", "", digestA}, {"no digest now", digestA, ""}} {
			raw := s.key("old-" + d.name)
			s.begin(t, raw, "m0", t0)
			if d.old != "" {
				_, err := s.l.Begin(ctx, raw, "m0", d.old, t0, lease)
				require.NoError(t, err)
			}
			require.NoError(t, s.l.Complete(ctx, raw, "m0", "r-before", t0))
			k := ledger.Key(s.prefix, "acme", raw)
			prev, err := s.l.Begin(ctx, k, "m1", d.now, t0.Add(time.Hour), lease)
			require.ErrorIs(t, err, ledger.ErrDone, d.name)
			assert.Equal(t, "r-before", prev.Receipt, "the entry that made it done")
			e, ok, err := s.l.Get(ctx, k)
			require.NoError(t, err)
			require.True(t, ok)
			assert.Equal(t, ledger.StateDone, e.State, "Get of the scoped key tells it done too")
			assert.Equal(t, "r-before", e.Receipt)
			_, err = s.l.Begin(ctx, k, "m2", d.now, t0.Add(2*time.Hour), lease)
			require.ErrorIs(t, err, ledger.ErrDone, "and stays so")
		}
	}},
	{"An unscoped entry of other args is another task's", func(t testing.TB, s *suite) {
		// An unscoped entry cannot say whose it was: with another digest it
		// neither makes the task a duplicate nor a reused key.
		raw := s.key("old")
		_, err := s.l.Begin(ctx, raw, "m0", digestB, t0, lease)
		require.NoError(t, err)
		require.NoError(t, s.l.Complete(ctx, raw, "m0", "r-other", t0))
		k := ledger.Key(s.prefix, "acme", raw)
		_, err = s.l.Begin(ctx, k, "m1", digestA, t0, lease)
		require.NoError(t, err)
		require.NoError(t, s.l.Complete(ctx, k, "m1", "r-own", t0))
		assert.Equal(t, "r-own", s.get(t, k).Receipt)
		assert.Equal(t, "r-other", s.get(t, raw).Receipt, "the unscoped entry is left as it was")
	}},
	{"An unscoped unknown effect stays unknown and is reconciled", func(t testing.TB, s *suite) {
		// Left by the version before scoping, and redelivered after it:
		// the task must not run again on a fresh scoped entry.
		raw := s.key("unknown")
		s.effectUnknown(t, raw)
		k := ledger.Key(s.prefix, "acme", raw)
		e, ok, err := s.l.Get(ctx, k)
		require.NoError(t, err)
		require.True(t, ok, "Get of the scoped key finds the unscoped entry")
		assert.True(t, e.EffectUnknown(t0.Add(time.Hour)))
		prev, err := s.l.Begin(ctx, k, "m2", "", t0.Add(time.Hour), lease)
		require.NoError(t, err)
		assert.True(t, prev.EffectStarted, "Begin says the effect started: %+v", prev)
		_, err = s.l.DeadLettered(ctx, k, deadletter.ReasonEffectUnknown, t0.Add(time.Hour))
		require.NoError(t, err)
		after, err := s.l.Reconcile(ctx, k, confirmed, t0.Add(3*time.Hour))
		require.NoError(t, err, "the scoped entry carries the unknown effect")
		assert.Equal(t, ledger.StateDone, after.State)
		_, err = s.l.Begin(ctx, k, "m3", "", t0.Add(4*time.Hour), lease)
		require.ErrorIs(t, err, ledger.ErrDone)

		// Never redelivered: the reconciliation of the scoped key reaches
		// the unscoped entry.
		raw2 := s.key("unknown-2")
		s.effectUnknown(t, raw2)
		k2 := ledger.Key(s.prefix, "acme", raw2)
		_, err = s.l.Reconcile(ctx, k2, confirmed, t0.Add(time.Hour))
		require.NoError(t, err)
		_, err = s.l.Begin(ctx, k2, "m2", "", t0.Add(2*time.Hour), lease)
		require.ErrorIs(t, err, ledger.ErrDone)
	}},
	{"CompleteReadOnly of a new key", func(t testing.TB, s *suite) {
		// A read-only tool's task: no claim before, one write after.
		k := s.key("k")
		prev, err := s.l.CompleteReadOnly(ctx, k, "m1", digestA, "receipt-1", t0)
		require.NoError(t, err)
		assert.Equal(t, ledger.Entry{}, prev, "a new key: the entry before is the zero Entry")
		e := s.get(t, k)
		assert.Equal(t, ledger.StateDone, e.State)
		assert.Equal(t, "receipt-1", e.Receipt)
		assert.Equal(t, "m1", e.Owner)
		assert.Equal(t, digestA, e.ArgsDigest, "the digest is recorded")
		assert.True(t, e.LeaseUntil.IsZero(), "no lease, got %v", e.LeaseUntil)
		assert.False(t, e.EffectStarted)
		assert.Zero(t, e.DeadLetterCount)
		touched(t, e, t0)
	}},
	{"CompleteReadOnly of a done key is a no-op", func(t testing.TB, s *suite) {
		// Done by the claim path or by CompleteReadOnly itself: refused
		// with ErrDone, the entry untouched; Begin refuses it too.
		kc, kr := s.key("claimed"), s.key("read-only")
		s.begin(t, kc, "m1", t0)
		require.NoError(t, s.l.Complete(ctx, kc, "m1", "receipt-1", t0.Add(time.Second)))
		_, err := s.l.CompleteReadOnly(ctx, kr, "m1", "", "receipt-1", t0.Add(time.Second))
		require.NoError(t, err)
		for _, k := range []string{kc, kr} {
			before := s.get(t, k)
			for _, owner := range []string{"m1", "m2"} {
				prev, err := s.l.CompleteReadOnly(ctx, k, owner, "", "receipt-2", t0.Add(time.Hour))
				require.ErrorIs(t, err, ledger.ErrDone, "%s, owner %s", k, owner)
				assert.NotErrorIs(t, err, ledger.ErrLeased)
				assert.Equal(t, ledger.StateDone, prev.State, "ErrDone returns the entry")
				assert.Equal(t, "receipt-1", prev.Receipt, "with its receipt")
			}
			_, err := s.l.Begin(ctx, k, "m3", "", t0.Add(time.Hour), lease)
			require.ErrorIs(t, err, ledger.ErrDone, "Begin of %s", k)
			assert.Equal(t, before, s.get(t, k), "a refused CompleteReadOnly changes nothing, not even UpdatedAt")
		}
	}},
	{"CompleteReadOnly with another digest is refused in every state", func(t testing.TB, s *suite) {
		for _, st := range []struct {
			name string
			make func(k string)
		}{
			{"done read-only", func(k string) {
				_, err := s.l.CompleteReadOnly(ctx, k, "m1", digestA, "receipt-1", t0)
				require.NoError(t, err)
			}},
			{"done", func(k string) {
				_, err := s.l.Begin(ctx, k, "m1", digestA, t0, lease)
				require.NoError(t, err)
				require.NoError(t, s.l.Complete(ctx, k, "m1", "receipt-1", t0))
			}},
			{"in progress", func(k string) {
				_, err := s.l.Begin(ctx, k, "m1", digestA, t0, lease)
				require.NoError(t, err)
			}},
			{"dead-lettered", func(k string) {
				_, err := s.l.Begin(ctx, k, "m1", digestA, t0, lease)
				require.NoError(t, err)
				_, err = s.l.DeadLettered(ctx, k, deadletter.ReasonUnclassified, t0)
				require.NoError(t, err)
			}},
		} {
			k := s.key(strings.ReplaceAll(st.name, " ", "_"))
			st.make(k)
			before := s.get(t, k)
			prev, err := s.l.CompleteReadOnly(ctx, k, "m2", digestB, "receipt-2", t0.Add(2*lease))
			require.ErrorIs(t, err, ledger.ErrKeyReused, st.name)
			assert.NotErrorIs(t, err, ledger.ErrDone, st.name)
			assert.Equal(t, digestA, prev.ArgsDigest, "%s: ErrKeyReused returns the entry", st.name)
			assert.Equal(t, before, s.get(t, k), "%s: a refused CompleteReadOnly changes nothing", st.name)
		}
		// Without a digest nothing is checked, and the digest is kept.
		k := s.key("dead-lettered")
		_, err := s.l.CompleteReadOnly(ctx, k, "m2", "", "receipt-2", t0.Add(2*lease))
		require.NoError(t, err)
		assert.Equal(t, digestA, s.get(t, k).ArgsDigest)
	}},
	{"CompleteReadOnly of a key leased by another owner", func(t testing.TB, s *suite) {
		k := s.key("k")
		s.begin(t, k, "m1", t0)
		before := s.get(t, k)
		prev, err := s.l.CompleteReadOnly(ctx, k, "m2", "", "receipt-2", t0.Add(lease-time.Millisecond))
		require.ErrorIs(t, err, ledger.ErrLeased, "the claim holds until LeaseUntil")
		assert.Equal(t, "m1", prev.Owner, "ErrLeased returns the entry: the holder")
		assert.Equal(t, before, s.get(t, k), "a refused CompleteReadOnly changes nothing")
		_, err = s.l.CompleteReadOnly(ctx, k, "m2", "", "receipt-2", t0.Add(lease))
		require.NoError(t, err, "at LeaseUntil the lease has expired")
		e := s.get(t, k)
		assert.Equal(t, ledger.StateDone, e.State)
		assert.Equal(t, "m2", e.Owner)
		// The holder itself may complete its own claim so.
		k2 := s.key("own")
		s.begin(t, k2, "m1", t0)
		_, err = s.l.CompleteReadOnly(ctx, k2, "m1", "", "receipt-1", t0.Add(time.Second))
		require.NoError(t, err)
		assert.Equal(t, ledger.StateDone, s.get(t, k2).State)
	}},
	{"CompleteReadOnly of a dead-lettered key keeps the counts", func(t testing.TB, s *suite) {
		// A redrive of a read-only task's dead letter, and a key only
		// Redriven touched.
		k, kr := s.key("k"), s.key("redriven-only")
		_, err := s.l.DeadLettered(ctx, k, deadletter.ReasonBudgetExhausted, t0)
		require.NoError(t, err)
		_, err = s.l.Redriven(ctx, k, t0.Add(time.Hour))
		require.NoError(t, err)
		_, err = s.l.Redriven(ctx, kr, t0.Add(time.Hour))
		require.NoError(t, err)
		prev, err := s.l.CompleteReadOnly(ctx, k, "m9", digestA, "receipt-9", t0.Add(2*time.Hour))
		require.NoError(t, err)
		assert.Equal(t, ledger.StateDeadLettered, prev.State)
		assert.Equal(t, 1, prev.DeadLetterCount)
		assert.Equal(t, 1, prev.RedriveCount)
		e := s.get(t, k)
		assert.Equal(t, ledger.StateDone, e.State)
		assert.Equal(t, "receipt-9", e.Receipt)
		assert.Equal(t, 1, e.DeadLetterCount, "the counts stay")
		assert.Equal(t, 1, e.RedriveCount, "the counts stay")
		touched(t, e, t0.Add(2*time.Hour))
		prev, err = s.l.CompleteReadOnly(ctx, kr, "m9", digestA, "receipt-9", t0.Add(2*time.Hour))
		require.NoError(t, err)
		assert.Equal(t, 1, prev.RedriveCount)
		assert.Equal(t, ledger.StateDone, s.get(t, kr).State)
		assert.Equal(t, 1, s.get(t, kr).RedriveCount)
	}},
	{"A key with no state: Begin and CompleteReadOnly take it alike", func(t testing.TB, s *suite) {
		// Only Redriven writes an entry without a state (a letter the
		// broker moved, redriven: the worker never recorded its key). The
		// claim and the read-only completion make the same checks, so
		// both take it, with any digest (it has none yet), whoever asks,
		// and keep its count.
		kb, kr := s.key("begin"), s.key("read-only")
		for _, k := range []string{kb, kr} {
			_, err := s.l.Redriven(ctx, k, t0)
			require.NoError(t, err)
		}
		prev, err := s.l.Begin(ctx, kb, "m1", digestA, t0.Add(time.Second), lease)
		require.NoError(t, err, "Begin of a stateless key")
		assert.Empty(t, prev.State, "Begin returns the stateless entry")
		assert.Equal(t, 1, prev.RedriveCount)
		prev, err = s.l.CompleteReadOnly(ctx, kr, "m1", digestA, "receipt-1", t0.Add(time.Second))
		require.NoError(t, err, "CompleteReadOnly of a stateless key, as Begin")
		assert.Empty(t, prev.State, "CompleteReadOnly returns the stateless entry")
		assert.Equal(t, 1, prev.RedriveCount)
		eb, er := s.get(t, kb), s.get(t, kr)
		assert.Equal(t, ledger.StateInProgress, eb.State)
		assert.Equal(t, ledger.StateDone, er.State)
		assert.Equal(t, "receipt-1", er.Receipt)
		for _, e := range []ledger.Entry{eb, er} {
			assert.Equal(t, digestA, e.ArgsDigest, "%s: the digest is recorded", e.Key)
			assert.Equal(t, 1, e.RedriveCount, "%s: the count stays", e.Key)
			assert.Equal(t, "m1", e.Owner, e.Key)
		}
	}},
	{"CompleteReadOnly concurrently on one key: exactly one wins", func(t testing.TB, s *suite) {
		k := s.key("k")
		errs := make([]error, Concurrency)
		var wg sync.WaitGroup
		for i := range Concurrency {
			wg.Go(func() {
				_, errs[i] = s.l.CompleteReadOnly(ctx, k, fmt.Sprint("m", i), digestA, fmt.Sprint("receipt-", i), t0)
			})
		}
		wg.Wait()
		won := -1
		for i, err := range errs {
			if err == nil {
				assert.Equal(t, -1, won, "m%d and m%d both completed", won, i)
				won = i
				continue
			}
			assert.ErrorIs(t, err, ledger.ErrDone, "m%d", i)
		}
		require.NotEqual(t, -1, won, "one CompleteReadOnly must win")
		e := s.get(t, k)
		assert.Equal(t, fmt.Sprint("m", won), e.Owner, "the winner's completion is the entry")
		assert.Equal(t, fmt.Sprint("receipt-", won), e.Receipt)
	}},
}
