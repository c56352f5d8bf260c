// Package breakertest is the conformance suite of breaker.Store: every
// implementation (breaker.Memory, dynamostore.Store on the DynamoDB
// emulator, a team's own) passes it.
//
//	func TestStoreConformance(t *testing.T) {
//		breakertest.Run(t, func(*testing.T) breaker.Store { return mystore.New(...) })
//	}
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
	ctx := context.Background()
	t0 := time.Date(2026, 12, 7, 4, 0, 0, 0, time.UTC)
	unique := func() string { return "p-" + rand.Text()[:10] }

	t.Run("absent reads as a closed breaker of version 0", func(t *testing.T) {
		s, err := newStore(t).Get(ctx, unique(), "search-api")
		if err != nil || s.Version != 0 || (s.Mode != "" && s.Mode != breaker.Closed) {
			t.Fatalf("Get = %+v, %v", s, err)
		}
	})
	t.Run("put then get round-trips every field", func(t *testing.T) {
		st, p := newStore(t), unique()
		in := breaker.State{Mode: breaker.Open, Until: t0.Add(time.Minute), WindowStart: t0, Buckets: []int{2, 0, 1}, Failures: 3, Probes: 1, Passed: 1,
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
	t.Run("concurrent breakers count every failure once and open once", func(t *testing.T) {
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
					if err := b.Record(ctx, "d", true, 0); err != nil {
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
