package batch_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/agentdlq/agentdlq/breaker"
	"github.com/agentdlq/agentdlq/functions/batch"
)

func TestDependencyFailure(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name       string
		err        error
		wantFailed bool
		wantAfter  time.Duration
	}{
		{name: "success", err: nil},
		{name: "dependency_open", err: batch.DependencyOpen(errors.New("down")), wantFailed: true},
		{name: "auth_config, wrapped", err: fmt.Errorf("call: %w", batch.AuthConfig(errors.New("denied"))), wantFailed: true},
		{name: "rate_limited: a transient with Retry-After", err: batch.Transient(errors.New("429")).After(7 * time.Second), wantFailed: true, wantAfter: 7 * time.Second},
		{name: "a transient without Retry-After is the task's", err: batch.Transient(errors.New("503"))},
		{name: "poison is the task's", err: batch.Poison("schema_invalid", errors.New("bad"))},
		{name: "an unclassified error", err: errors.New("boom")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			failed, after := batch.DependencyFailure(tt.err)
			if failed != tt.wantFailed || after != tt.wantAfter {
				t.Errorf("DependencyFailure = %v, %s; want %v, %s", failed, after, tt.wantFailed, tt.wantAfter)
			}
		})
	}
}

// TestGuarded: the failure that crosses the threshold is deferred itself,
// then no call is made while open, and another dependency is not touched.
func TestGuarded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	b, err := breaker.New(breaker.Config{Pipeline: "p", Store: breaker.NewMemory(), Settings: breaker.Settings{Threshold: 2},
		Logger: quiet, Metrics: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	down := func() error { calls++; return batch.DependencyOpen(errors.New("search-api down")) }
	err = batch.Guarded(ctx, b, quiet, "search-api", 1, down)
	if o := (*batch.Outcome)(nil); !errors.As(err, &o) || o.RetryAfter() != 0 {
		t.Fatalf("first failure: %v, want the failure itself (counted)", err)
	}
	err = batch.Guarded(ctx, b, quiet, "search-api", 1, down)
	if o := (*batch.Outcome)(nil); !errors.As(err, &o) || o.RetryAfter() < time.Second || !errors.Is(err, batch.ErrDependencyOpen) {
		t.Fatalf("the failure that opened it: %v, want deferred with a Retry-After", err)
	}
	err = batch.Guarded(ctx, b, quiet, "search-api", 1, down)
	if calls != 2 || !errors.Is(err, batch.ErrDependencyOpen) {
		t.Fatalf("open: %d calls, %v; want no third call and a deferral", calls, err)
	}
	if err := batch.Guarded(ctx, b, quiet, "mail-relay", 1, func() error { return nil }); err != nil {
		t.Errorf("another dependency: %v", err)
	}
	if err := batch.Guarded(ctx, nil, quiet, "search-api", 1, func() error { return nil }); err != nil {
		t.Errorf("no breaker: %v", err)
	}
}

// TestReportDependencyRetriedTask: a task that already spent a receive and
// fails on the dependency again while the breaker is still counting
// towards its threshold (the failures come slower than the task's backoff)
// is deferred, not counted: an outage costs a task at most one receive.
// A first receive's failure below the threshold is counted as before, and
// so is a failure that is not the dependency's.
func TestReportDependencyRetriedTask(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	b, err := breaker.New(breaker.Config{Pipeline: "p", Store: breaker.NewMemory(), Settings: breaker.Settings{Threshold: 5, OpenFor: 20 * time.Second},
		Logger: quiet, Metrics: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	down := batch.DependencyOpen(errors.New("search-api down"))
	// A task's first receive: its failure is the first the breaker sees.
	err = batch.ReportDependency(ctx, b, quiet, "search-api", 1, down)
	if o := (*batch.Outcome)(nil); !errors.As(err, &o) || o.RetryAfter() != 0 {
		t.Fatalf("first receive: %v, want the failure itself (counted)", err)
	}
	// The same task back after its backoff, the breaker at 2 of 5 failures.
	err = batch.ReportDependency(ctx, b, quiet, "search-api", 2, down)
	o := (*batch.Outcome)(nil)
	if !errors.As(err, &o) || !errors.Is(err, batch.ErrDependencyOpen) {
		t.Fatalf("second receive: %v, want deferred", err)
	}
	if w := o.RetryAfter(); w < 5*time.Second || w > 10*time.Second {
		t.Errorf("second receive deferred %s, want a quarter of the open time and up to as much again (5s..10s)", w)
	}
	if st, _ := b.Status(ctx, "search-api"); (st.Mode != breaker.Closed && st.Mode != "") || st.Failures != 2 {
		t.Errorf("breaker %q with %d failures, want closed with both failures counted", st.Mode, st.Failures)
	}
	// A failure that is not the dependency's counts, on any receive.
	poison := batch.Poison("schema_invalid", errors.New("bad"))
	if err := batch.ReportDependency(ctx, b, quiet, "search-api", 3, poison); !errors.Is(err, poison) {
		t.Errorf("not the dependency's failure: %v, want it as it is", err)
	}
	// A success is a success.
	if err := batch.ReportDependency(ctx, b, quiet, "search-api", 2, nil); err != nil {
		t.Errorf("success: %v", err)
	}
}

// A task whose call failed after its breaker's open time ran out (a call
// that outlasted it) is deferred without taking a half-open probe: only an
// admitted task reports a probe back, so a probe taken here would be lost
// and the breaker would wait OpenFor before probing again.
func TestReportDependencyTakesNoProbe(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	now := time.Date(2026, 12, 7, 7, 0, 0, 0, time.UTC)
	store := breaker.NewMemory()
	b, err := breaker.New(breaker.Config{Pipeline: "p", Store: store, Settings: breaker.Settings{Threshold: 1, OpenFor: 20 * time.Second, Probes: 1},
		Logger: quiet, Metrics: io.Discard, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	down := batch.DependencyOpen(errors.New("search-api down"))
	if err := batch.ReportDependency(ctx, b, quiet, "search-api", 1, down); !errors.Is(err, batch.ErrDependencyOpen) {
		t.Fatalf("the failure that opens it: %v", err)
	}
	now = now.Add(21 * time.Second) // the open time is up: the next admitted task probes
	err = batch.ReportDependency(ctx, b, quiet, "search-api", 1, down)
	if o := (*batch.Outcome)(nil); !errors.As(err, &o) || o.RetryAfter() < time.Second {
		t.Fatalf("a failure as the open time ran out: %v, want deferred", err)
	}
	st, _ := b.Status(ctx, "search-api")
	if st.Mode != breaker.Open || st.Probes != 0 {
		t.Fatalf("breaker %s with %d probes taken, want still open with none taken", st.Mode, st.Probes)
	}
	if d, err := b.Admit(ctx, "search-api"); err != nil || !d.Admit || !d.Probe {
		t.Errorf("the next task: %+v, %v; want admitted as the probe", d, err)
	}
}
