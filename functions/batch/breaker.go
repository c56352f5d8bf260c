package batch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/agentdlq/agentdlq/breaker"
)

// DependencyFailure reports whether err is a failure a dependency's circuit
// breaker counts: an outcome of class dependency (dependency_open) or
// authorization (auth_config), or any retryable outcome with the
// provider's Retry-After (a 429's rate_limited); retryAfter is that
// Retry-After. Other failures (poison, a bug, an unknown effect) are the
// task's, not the dependency's.
func DependencyFailure(err error) (failed bool, retryAfter time.Duration) {
	var o *Outcome
	if err == nil || !errors.As(err, &o) {
		return false, 0
	}
	switch {
	case o.class == ErrDependencyOpen.class || o.class == ErrAuthConfig.class:
		return true, o.after
	case o.after > 0 && o.class.Retryable():
		return true, o.after
	}
	return false, 0
}

// Deferred is the outcome of a task a breaker did not admit: dependency_open
// with the breaker's wait as its Retry-After. With Config.RetryAfterRequeues
// the processor sends the message back to the hot queue with that delay and
// acknowledges it, so the receive does not count against its budget; past
// the requeues it is retried as any dependency_open (counted).
func Deferred(dependency string, wait time.Duration) *Outcome {
	return DependencyOpen(fmt.Errorf("breaker open for %q: deferred %s without calling it", dependency, wait.Round(time.Second))).After(wait)
}

// Guarded runs call, which needs the dependency dep, for a task of tenant
// under the breaker b: AdmitDependency, then call, then ReportDependency
// (receives: the record's Record.ReceiveCount). A nil b runs call as it is.
func Guarded(ctx context.Context, b *breaker.Breaker, log *slog.Logger, dep, tenant string, receives int, call func() error) error {
	if err := AdmitDependency(ctx, b, log, dep); err != nil {
		return err
	}
	return ReportDependency(ctx, b, log, dep, tenant, receives, call())
}

// AdmitDependency asks the breaker b whether a task that needs dep may call
// it: nil when it may, else the Deferred outcome to return from the handler
// (open, half-open with its probes out, or not yet the task's turn in the
// ramp). Ask before any other work of the task (before Record.Begin): a
// deferral then costs one receive and one send. A breaker whose store
// cannot be read admits the task (logged on log): it must not stop the
// pipeline. A nil b, or an empty dep, admits.
func AdmitDependency(ctx context.Context, b *breaker.Breaker, log *slog.Logger, dep string) error {
	if b == nil || dep == "" {
		return nil
	}
	d, err := b.Admit(ctx, dep)
	if err != nil {
		logOf(log).LogAttrs(ctx, slog.LevelWarn, "breaker unavailable; the task is admitted", slog.String("dependency", dep), slog.String("error", err.Error()))
	}
	if !d.Admit {
		return Deferred(dep, d.Wait)
	}
	return nil
}

// ReportDependency reports the result of an admitted task's call to dep
// for the task's tenant ("" when it names none: one tenant like any
// other) (DependencyFailure says which failures count; a success closes a
// half-open breaker) and returns what the handler should: err itself, or,
// for a failure of the dependency, the Deferred outcome when the failure
// finds the breaker open (this failure opened it, or another worker's
// did), or when the task already spent a receive (receives, its
// Record.ReceiveCount, is 2 or more) while the breaker is still counting
// failures towards its threshold (breaker.RetryDeferral): while they come
// from at least min_tenants tenants, or while the task's own tenant has
// been failing for less than the window. So an outage costs a task at
// most one receive: the one before the breaker could know, even when the
// dependency's failures come slower than the task's backoff and the
// threshold is not reached before its retry. That deferral waits a
// quarter of the open time and up to as much again (the least a deferral
// waits, which pipeline.Breaker.RequiredRequeues counts on); past its
// requeues the failure counts, as any dependency_open. Once a tenant has
// failed alone for a whole window (its revoked key, its quota), its
// task's failure is not deferred: it is retried, counted, as any failure
// of its class, and dead-lettered with its reason within its budget,
// where its owner sees it.
func ReportDependency(ctx context.Context, b *breaker.Breaker, log *slog.Logger, dep, tenant string, receives int, err error) error {
	if b == nil || dep == "" {
		return err
	}
	failed, retryAfter := DependencyFailure(err)
	if err != nil && !failed {
		return err // not the dependency's failure
	}
	if rerr := b.Record(ctx, dep, tenant, failed, retryAfter); rerr != nil {
		logOf(log).LogAttrs(ctx, slog.LevelWarn, "breaker: result not recorded", slog.String("dependency", dep), slog.String("error", rerr.Error()))
		// Lost to other workers' writes (the herd of an outage's start):
		// the state it knows still says whether to defer the task.
		if !errors.Is(rerr, breaker.ErrConflict) {
			return err
		}
	}
	if !failed {
		return err
	}
	// Deferral, not Admit: a task that just failed must not take one of a
	// half-open breaker's probes, which only an admitted task reports back.
	wait, deferred, aerr := b.Deferral(ctx, dep)
	switch {
	case aerr != nil:
		return err
	case deferred:
		return Deferred(dep, wait)
	case receives >= 2:
		if w, ok, rerr := b.RetryDeferral(ctx, dep, tenant); rerr == nil && ok {
			return Deferred(dep, w)
		}
	}
	return err
}

func logOf(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.Default()
	}
	return l
}
