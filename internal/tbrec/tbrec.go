// Package tbrec runs test helpers on a testing.TB that records their
// failures instead of failing the test: the tests of the public test
// helpers (ledger/ledgertest, functions/batch/batchtest) check with it
// that a helper fails when it must and passes when it may.
package tbrec

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// TB records failures. FailNow, Fatal and Fatalf end the calling goroutine
// as testing.T's do, so run the helper with Run.
type TB struct {
	testing.TB // the real test, for everything not overridden
	mu         sync.Mutex
	failed     bool
	msgs       []string
}

// Run calls f with a recording TB on a goroutine of its own and returns
// whether f failed and what it said.
func Run(t testing.TB, f func(t testing.TB)) (failed bool, msgs string) {
	rec := &TB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(rec)
	}()
	<-done
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.failed, strings.Join(rec.msgs, "; ")
}

// Helper does nothing.
func (r *TB) Helper() {}

// Log drops its arguments.
func (r *TB) Log(...any) {}

// Logf drops its arguments.
func (r *TB) Logf(string, ...any) {}

// Error records a failure with its arguments as the message.
func (r *TB) Error(args ...any) { r.Errorf("%s", fmt.Sprint(args...)) }

// Errorf records a failure with the formatted message.
func (r *TB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = true
	r.msgs = append(r.msgs, fmt.Sprintf(format, args...))
}

// Fail records a failure.
func (r *TB) Fail() { r.Errorf("failed") }

// FailNow records a failure and ends the goroutine, as testing's does.
func (r *TB) FailNow() { r.Fail(); runtime.Goexit() }

// Fatal records a failure and ends the goroutine.
func (r *TB) Fatal(args ...any) { r.Error(args...); runtime.Goexit() }

// Fatalf records a failure and ends the goroutine.
func (r *TB) Fatalf(format string, args ...any) { r.Errorf(format, args...); runtime.Goexit() }

// Failed reports whether a failure was recorded.
func (r *TB) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}
