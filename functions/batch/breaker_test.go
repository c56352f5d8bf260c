package batch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentdlq/agentdlq/breaker"
	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/functions/batch"
	"github.com/agentdlq/agentdlq/functions/batch/batchtest"
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

// TestGuarded: the failure that crosses the threshold (of two tenants) is
// deferred itself, then no call is made while open, and another
// dependency is not touched.
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
	err = batch.Guarded(ctx, b, quiet, "search-api", "acme", 1, down)
	if o := (*batch.Outcome)(nil); !errors.As(err, &o) || o.RetryAfter() != 0 {
		t.Fatalf("first failure: %v, want the failure itself (counted)", err)
	}
	err = batch.Guarded(ctx, b, quiet, "search-api", "globex", 1, down)
	if o := (*batch.Outcome)(nil); !errors.As(err, &o) || o.RetryAfter() < time.Second || !errors.Is(err, batch.ErrDependencyOpen) {
		t.Fatalf("the failure that opened it: %v, want deferred with a Retry-After", err)
	}
	err = batch.Guarded(ctx, b, quiet, "search-api", "initech", 1, down)
	if calls != 2 || !errors.Is(err, batch.ErrDependencyOpen) {
		t.Fatalf("open: %d calls, %v; want no third call and a deferral", calls, err)
	}
	if err := batch.Guarded(ctx, b, quiet, "mail-relay", "acme", 1, func() error { return nil }); err != nil {
		t.Errorf("another dependency: %v", err)
	}
	if err := batch.Guarded(ctx, nil, quiet, "search-api", "acme", 1, func() error { return nil }); err != nil {
		t.Errorf("no breaker: %v", err)
	}
}

// TestReportDependencyRetriedTask: a task that already spent a receive and
// fails on the dependency again while the breaker is still counting
// towards its threshold (the failures come slower than the task's backoff)
// is deferred, not counted, when the window holds failures of at least
// min_tenants tenants: an outage costs a task at most one receive. A first
// receive's failure below the threshold is counted as before, and so is a
// failure that is not the dependency's.
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
	// Two tasks' first receives, of two tenants: the first failures the breaker sees.
	for _, tenant := range []string{"acme", "globex"} {
		err = batch.ReportDependency(ctx, b, quiet, "search-api", tenant, 1, down)
		if o := (*batch.Outcome)(nil); !errors.As(err, &o) || o.RetryAfter() != 0 {
			t.Fatalf("first receive of %s: %v, want the failure itself (counted)", tenant, err)
		}
	}
	// Acme's task back after its backoff, the breaker at 3 of 5 failures.
	err = batch.ReportDependency(ctx, b, quiet, "search-api", "acme", 2, down)
	o := (*batch.Outcome)(nil)
	if !errors.As(err, &o) || !errors.Is(err, batch.ErrDependencyOpen) {
		t.Fatalf("second receive: %v, want deferred", err)
	}
	if w := o.RetryAfter(); w < 5*time.Second || w > 10*time.Second {
		t.Errorf("second receive deferred %s, want a quarter of the open time and up to as much again (5s..10s)", w)
	}
	if st, _ := b.Status(ctx, "search-api"); (st.Mode != breaker.Closed && st.Mode != "") || st.Failures != 3 {
		t.Errorf("breaker %q with %d failures, want closed with the three failures counted", st.Mode, st.Failures)
	}
	// A failure that is not the dependency's counts, on any receive.
	poison := batch.Poison("schema_invalid", errors.New("bad"))
	if err := batch.ReportDependency(ctx, b, quiet, "search-api", "acme", 3, poison); !errors.Is(err, poison) {
		t.Errorf("not the dependency's failure: %v, want it as it is", err)
	}
	// A success is a success.
	if err := batch.ReportDependency(ctx, b, quiet, "search-api", "acme", 2, nil); err != nil {
		t.Errorf("success: %v", err)
	}
}

// TestReportDependencyOneTenantAlone: the failures of one tenant (its own
// key revoked: auth_config) never open the breaker with min_tenants 2.
// Its retried tasks are deferred while it has been failing for less than
// the window (another tenant may yet fail too: an outage), then not: each
// failure is returned as it is (counted, no Retry-After), so the task is
// dead-lettered with its reason within its budget. Another tenant's task
// that needs the dependency is admitted, called and succeeds. With
// min_tenants 1 the same failures open the breaker and defer the other
// tenant's task (the behaviour before min_tenants).
func TestReportDependencyOneTenantAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	for _, tt := range []struct {
		minTenants int
		wantOpen   bool
	}{{0, false}, {2, false}, {1, true}} { // 0: the default, 2
		t.Run(fmt.Sprint("min_tenants ", tt.minTenants), func(t *testing.T) {
			t.Parallel()
			now := time.Date(2026, 12, 7, 7, 0, 0, 0, time.UTC)
			b, err := breaker.New(breaker.Config{Pipeline: "p", Store: breaker.NewMemory(), Settings: breaker.Settings{Threshold: 3, MinTenants: tt.minTenants},
				Logger: quiet, Metrics: io.Discard, Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			revoked := func() error { return batch.AuthConfig(errors.New("401: the key of tenant revoked-co was revoked")) }
			// One receive every 20 s: the window (60 s) keeps three.
			for receive := 1; receive <= 5; receive++ {
				err := batch.Guarded(ctx, b, quiet, "model-api", "revoked-co", receive, revoked)
				failingFor := time.Duration(receive-1) * 20 * time.Second
				now = now.Add(20 * time.Second)
				o := (*batch.Outcome)(nil)
				if !errors.As(err, &o) {
					t.Fatalf("receive %d: %v, want an outcome", receive, err)
				}
				if tt.wantOpen {
					continue
				}
				switch counted := receive == 1 || failingFor >= breaker.DefaultWindow; {
				case counted && (!errors.Is(err, batch.ErrAuthConfig) || o.RetryAfter() != 0):
					t.Fatalf("receive %d, failing alone for %s: %v (Retry-After %s), want auth_config itself, counted", receive, failingFor, err, o.RetryAfter())
				case !counted && (!errors.Is(err, batch.ErrDependencyOpen) || o.RetryAfter() < time.Second):
					t.Fatalf("receive %d, failing alone for %s: %v, want deferred while it may be an outage", receive, failingFor, err)
				}
			}
			st, _ := b.Status(ctx, "model-api")
			if n, _ := b.FailingTenants(ctx, "model-api"); !tt.wantOpen && (st.Mode == breaker.Open || st.Failures != 3 || n != 1) {
				t.Fatalf("breaker %s with %d failures of %d tenants, want closed, 3 failures of 1 tenant", st.Mode, st.Failures, n)
			}
			called := false
			err = batch.Guarded(ctx, b, quiet, "model-api", "acme", 1, func() error { called = true; return nil })
			switch {
			case tt.wantOpen && (called || !errors.Is(err, batch.ErrDependencyOpen)):
				t.Errorf("min_tenants 1: acme's task called %v, %v; want deferred", called, err)
			case !tt.wantOpen && (!called || err != nil):
				t.Errorf("acme's task called %v, %v; want admitted, called and done", called, err)
			}
		})
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
	b, err := breaker.New(breaker.Config{Pipeline: "p", Store: store, Settings: breaker.Settings{Threshold: 1, MinTenants: 1, OpenFor: 20 * time.Second, Probes: 1},
		Logger: quiet, Metrics: io.Discard, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	down := batch.DependencyOpen(errors.New("search-api down"))
	if err := batch.ReportDependency(ctx, b, quiet, "search-api", "acme", 1, down); !errors.Is(err, batch.ErrDependencyOpen) {
		t.Fatalf("the failure that opens it: %v", err)
	}
	now = now.Add(21 * time.Second) // the open time is up: the next admitted task probes
	err = batch.ReportDependency(ctx, b, quiet, "search-api", "acme", 1, down)
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

// TestProcessorOneTenantsRevokedKey runs the processor with a handler that
// guards its call with the breaker: one tenant's key is revoked, so every
// one of its tasks fails auth_config, on every receive; another tenant's
// task that needs the same dependency, received after them, is admitted
// and acknowledged, and the revoked tenant's task, received every 25 s,
// ends in the DLQ as auth_config on its last allowed receive, as any
// auth_config, once its tenant has failed alone for a whole window.
func TestProcessorOneTenantsRevokedKey(t *testing.T) {
	t.Parallel()
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	now := time.Date(2026, 12, 7, 7, 0, 0, 0, time.UTC)
	b, err := breaker.New(breaker.Config{Pipeline: "test", Store: breaker.NewMemory(), Settings: breaker.Settings{Threshold: 3},
		Logger: quiet, Metrics: io.Discard, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	calls := map[string]int{}
	w := batchtest.NewWorker(t, batch.Config{Handler: func(ctx context.Context, r batch.Record) error {
		var task struct{ Tenant string }
		if err := json.Unmarshal(r.Body(), &task); err != nil {
			return batch.Poison(deadletter.ReasonJSONInvalid, err)
		}
		return batch.Guarded(ctx, b, quiet, "model-api", task.Tenant, r.ReceiveCount, func() error {
			mu.Lock()
			calls[task.Tenant]++
			mu.Unlock()
			if task.Tenant == "revoked-co" {
				return batch.AuthConfig(errors.New("401: the tenant's key was revoked"))
			}
			return nil
		})
	}})
	revoked := `{"tenant":"revoked-co"}`
	for receive := 1; receive < batchtest.MaxReceiveCount; receive++ {
		res := w.Run(batchtest.Event(
			batchtest.Msg{ID: "r1", Body: revoked, ReceiveCount: receive},
			batchtest.Msg{ID: "r2", Body: revoked, ReceiveCount: receive}))
		batchtest.RequireRetried(t, res, "r1", "r2")
		now = now.Add(25 * time.Second)
	}
	res := w.Run(batchtest.Event(
		batchtest.Msg{ID: "r1", Body: revoked, ReceiveCount: batchtest.MaxReceiveCount},
		batchtest.Msg{ID: "ok", Body: `{"tenant":"acme"}`}))
	batchtest.RequireDeadLettered(t, res, "r1", deadletter.ReasonAuthConfig)
	batchtest.RequireAcked(t, res, "ok")
	if calls["acme"] != 1 || calls["revoked-co"] != 2*(batchtest.MaxReceiveCount-1)+1 {
		t.Errorf("calls %v: want acme's task called once, each of revoked-co's receives called", calls)
	}
}

// TestReportDependencyContendedStillDefers: a retried task's failure that
// the breaker could not record (every compare-and-set lost to other
// workers recording theirs, the herd of an outage's start) is still
// deferred on the state the breaker knows, not retried counted.
func TestReportDependencyContendedStillDefers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	store := &contended{Memory: breaker.NewMemory()}
	b, err := breaker.New(breaker.Config{Pipeline: "p", Store: store, Settings: breaker.Settings{Threshold: 5, OpenFor: 20 * time.Second},
		Logger: quiet, Metrics: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	down := batch.DependencyOpen(errors.New("search-api down"))
	for _, tenant := range []string{"acme", "globex"} {
		_ = batch.ReportDependency(ctx, b, quiet, "search-api", tenant, 1, down)
	}
	store.on.Store(true)
	err = batch.ReportDependency(ctx, b, quiet, "search-api", "acme", 2, down)
	if o := (*batch.Outcome)(nil); !errors.As(err, &o) || o.RetryAfter() == 0 {
		t.Fatalf("second receive, its failure not recorded: %v, want deferred (two tenants fail)", err)
	}
}

// contended is a Memory where, once on, another worker writes just before each Put.
type contended struct {
	*breaker.Memory
	on atomic.Bool
}

func (c *contended) Put(ctx context.Context, p, d string, s breaker.State) (breaker.State, error) {
	if c.on.Load() {
		cur, _ := c.Memory.Get(ctx, p, d)
		if _, err := c.Memory.Put(ctx, p, d, cur); err != nil {
			return breaker.State{}, err
		}
	}
	return c.Memory.Put(ctx, p, d, s)
}
