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
	err = batch.Guarded(ctx, b, quiet, "search-api", down)
	if o := (*batch.Outcome)(nil); !errors.As(err, &o) || o.RetryAfter() != 0 {
		t.Fatalf("first failure: %v, want the failure itself (counted)", err)
	}
	err = batch.Guarded(ctx, b, quiet, "search-api", down)
	if o := (*batch.Outcome)(nil); !errors.As(err, &o) || o.RetryAfter() < time.Second || !errors.Is(err, batch.ErrDependencyOpen) {
		t.Fatalf("the failure that opened it: %v, want deferred with a Retry-After", err)
	}
	err = batch.Guarded(ctx, b, quiet, "search-api", down)
	if calls != 2 || !errors.Is(err, batch.ErrDependencyOpen) {
		t.Fatalf("open: %d calls, %v; want no third call and a deferral", calls, err)
	}
	if err := batch.Guarded(ctx, b, quiet, "mail-relay", func() error { return nil }); err != nil {
		t.Errorf("another dependency: %v", err)
	}
	if err := batch.Guarded(ctx, nil, quiet, "search-api", func() error { return nil }); err != nil {
		t.Errorf("no breaker: %v", err)
	}
}
