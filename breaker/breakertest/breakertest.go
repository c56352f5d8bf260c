// Package breakertest is the conformance suite of breaker.Store: every
// implementation (breaker.Memory, dynamostore.Store on the DynamoDB
// emulator, a team's own) passes it.
//
//	func TestStoreConformance(t *testing.T) {
//		breakertest.Run(t, func(*testing.T) breaker.Store { return mystore.New(...) })
//	}
//
// A store that implements breaker.Lister is checked to list every
// dependency whose state it stored; the listing subtests skip a store that
// does not.
//
// Pipelines are unique to each run and subtest, so a shared table does not
// mix them.
package breakertest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/agentdlq/agentdlq/breaker"
)

// Run runs the suite; newStore is called once per subtest.
func Run(t *testing.T, newStore func(*testing.T) breaker.Store) {
	t.Helper()
	runStates(t, newStore)
	runListing(t, newStore)
	runConcurrent(t, newStore)
}

var t0 = time.Date(2026, 12, 7, 4, 0, 0, 0, time.UTC)

// unique is a pipeline name no other run or subtest uses.
func unique() string { return "p-" + rand.Text()[:10] }

// runStates checks Get and Put: absence, the round trip, conflicts, keys.
func runStates(t *testing.T, newStore func(*testing.T) breaker.Store) {
	t.Helper()
	ctx := context.Background()
	t.Run("absent reads as a closed breaker of version 0", func(t *testing.T) {
		s, err := newStore(t).Get(ctx, unique(), "search-api")
		if err != nil || s.Version != 0 || (s.Mode != "" && s.Mode != breaker.Closed) {
			t.Fatalf("Get = %+v, %v", s, err)
		}
	})
	t.Run("put then get round-trips every field", func(t *testing.T) {
		st, p := newStore(t), unique()
		in := breaker.State{Mode: breaker.Open, Until: t0.Add(time.Minute), WindowStart: t0, Buckets: []int{2, 0, 1}, Failures: 3,
			Tenants: []breaker.TenantSeen{{Hash: breaker.TenantHash("acme"), Bucket: 0, Since: t0.Unix()}, {Hash: breaker.TenantHash(""), Bucket: 2, Since: t0.Unix() + 2}}, Probes: 1, Passed: 1, ProbeFailures: []string{breaker.TenantHash("initech")},
			ProbeSince: t0, RampFrom: t0, Held: true, Owner: "oncall", Why: "incident", Changed: t0, Cause: breaker.CauseForcedOpen}
		out, err := st.Put(ctx, p, "search-api", in)
		if err != nil || out.Version != 1 {
			t.Fatalf("Put = %+v, %v", out, err)
		}
		got, err := st.Get(ctx, p, "search-api")
		in.Version = 1
		if err != nil || !equal(got, in) {
			t.Fatalf("Get = %+v, %v; want %+v", got, err, in)
		}
	})
	t.Run("a stale version conflicts and stores nothing", func(t *testing.T) {
		st, p := newStore(t), unique()
		if _, err := st.Put(ctx, p, "d", breaker.State{Failures: 1}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Put(ctx, p, "d", breaker.State{Failures: 9}); !errors.Is(err, breaker.ErrConflict) {
			t.Fatalf("second create: %v, want ErrConflict", err)
		}
		if _, err := st.Put(ctx, p, "d", breaker.State{Version: 5, Failures: 9}); !errors.Is(err, breaker.ErrConflict) {
			t.Fatalf("wrong version: %v, want ErrConflict", err)
		}
		got, _ := st.Get(ctx, p, "d")
		if got.Failures != 1 || got.Version != 1 {
			t.Fatalf("after conflicts: %+v", got)
		}
	})
	t.Run("pipelines and dependencies are apart", func(t *testing.T) {
		st, p, q := newStore(t), unique(), unique()
		if _, err := st.Put(ctx, p, "a", breaker.State{Mode: breaker.Open}); err != nil {
			t.Fatal(err)
		}
		for _, k := range [][2]string{{p, "b"}, {q, "a"}} {
			if got, _ := st.Get(ctx, k[0], k[1]); got.Version != 0 {
				t.Errorf("%v sees %+v", k, got)
			}
		}
	})
}

// runListing checks a breaker.Lister (skipped for a store that is not one).
func runListing(t *testing.T, newStore func(*testing.T) breaker.Store) {
	t.Helper()
	ctx := context.Background()
	lister := func(t *testing.T) (breaker.Store, breaker.Lister) {
		t.Helper()
		st := newStore(t)
		l, ok := st.(breaker.Lister)
		if !ok {
			t.Skip("the store does not implement breaker.Lister")
		}
		return st, l
	}
	t.Run("a pipeline with nothing stored lists no dependency", func(t *testing.T) {
		_, l := lister(t)
		deps, err := l.Dependencies(ctx, unique())
		if err != nil || len(deps) != 0 {
			t.Fatalf("Dependencies = %q, %v; want none", deps, err)
		}
		got, err := breaker.List(ctx, l.(breaker.Store), unique())
		if err != nil || len(got) != 0 {
			t.Fatalf("List = %+v, %v; want none", got, err)
		}
	})
	t.Run("every stored dependency is listed once, sorted, apart by pipeline", func(t *testing.T) {
		st, l := lister(t)
		p, q := unique(), unique()
		for _, d := range []string{"search-api", "model:gpt", "crm"} {
			if _, err := st.Put(ctx, p, d, breaker.State{Failures: 1}); err != nil {
				t.Fatal(err)
			}
		}
		// Later writes and a conflicting first write add nothing.
		if _, err := st.Put(ctx, p, "crm", breaker.State{Version: 1, Mode: breaker.Open}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Put(ctx, p, "crm", breaker.State{Failures: 2}); !errors.Is(err, breaker.ErrConflict) {
			t.Fatalf("second create: %v, want ErrConflict", err)
		}
		if _, err := st.Put(ctx, q, "other", breaker.State{Failures: 1}); err != nil {
			t.Fatal(err)
		}
		deps, err := l.Dependencies(ctx, p)
		if want := []string{"crm", "model:gpt", "search-api"}; err != nil || fmt.Sprint(deps) != fmt.Sprint(want) {
			t.Fatalf("Dependencies(%s) = %q, %v; want %q", p, deps, err, want)
		}
		got, err := breaker.List(ctx, st, p)
		if err != nil || len(got) != 3 || got[0].Dependency != "crm" || got[0].State.Mode != breaker.Open || got[0].State.Version != 2 ||
			got[2].Dependency != "search-api" || got[2].State.Failures != 1 {
			t.Fatalf("List = %+v, %v", got, err)
		}
		if deps, err := l.Dependencies(ctx, q); err != nil || fmt.Sprint(deps) != "[other]" {
			t.Fatalf("Dependencies(%s) = %q, %v; want [other]", q, deps, err)
		}
	})
	t.Run("concurrent first writes list the dependency once", func(t *testing.T) {
		st, l := lister(t)
		p := unique()
		var wg sync.WaitGroup
		for range 6 {
			wg.Go(func() { _, _ = st.Put(ctx, p, "d", breaker.State{Failures: 1}) })
		}
		wg.Wait()
		deps, err := l.Dependencies(ctx, p)
		if err != nil || fmt.Sprint(deps) != "[d]" {
			t.Fatalf("Dependencies = %q, %v; want [d]", deps, err)
		}
	})
}

// runConcurrent checks that Breakers sharing the store count every failure
// once and open once.
func runConcurrent(t *testing.T, newStore func(*testing.T) breaker.Store) {
	t.Helper()
	ctx := context.Background()
	t.Run("concurrent breakers count every failure once and open once", func(t *testing.T) {
		// Four workers, each with its own tenant (min_tenants 2 by default).
		st, p := newStore(t), unique()
		var opened sync.Mutex
		opens := 0
		settings := breaker.Settings{Threshold: 8, Window: time.Hour, OpenFor: 10 * time.Minute}
		var wg sync.WaitGroup
		for i := range 4 {
			b, err := breaker.New(breaker.Config{Pipeline: p, Store: st, Settings: settings,
				Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), Metrics: writerFunc(func(b []byte) {
					opened.Lock()
					opens++
					opened.Unlock()
				}), Now: func() time.Time { return t0 }})
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				for range 2 {
					if err := b.Record(ctx, "d", fmt.Sprint("tenant-", i), true, 0); err != nil {
						t.Errorf("worker %d: %v", i, err)
					}
				}
			})
		}
		wg.Wait()
		got, err := st.Get(ctx, p, "d")
		if err != nil || got.Mode != breaker.Open || opens != 1 {
			t.Fatalf("after 8 failures from 4 workers: %+v (%v), %d transitions, want open once", got, err, opens)
		}
	})
}

type writerFunc func([]byte)

func (f writerFunc) Write(b []byte) (int, error) { f(b); return len(b), nil }

func equal(a, b breaker.State) bool {
	return fmt.Sprintf("%+v", norm(a)) == fmt.Sprintf("%+v", norm(b))
}

func norm(s breaker.State) breaker.State {
	for _, t := range []*time.Time{&s.WindowStart, &s.Until, &s.ProbeSince, &s.RampFrom, &s.Changed} {
		*t = t.UTC()
	}
	return s
}
