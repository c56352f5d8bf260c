package batch

import (
	"context"
	"fmt"
	"time"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/ledger"
)

// recoveringLedger is the Config's ledger with every call guarded exactly as
// the handler is: a panic in a ledger implementation becomes that call's
// error (wrapping ledger.ErrUnavailable, so that it is treated as an
// outage), never a panic that escapes Handle. Escaping, it would fail the
// whole Lambda batch (its dead letters sent twice on the retry) or, with
// Concurrency > 1, crash the process from a worker goroutine.
type recoveringLedger struct{ l ledger.Ledger }

var _ ledger.Ledger = recoveringLedger{}

// guard turns a panic of the ledger call op into *err.
func guard(op string, err *error) {
	if v := recover(); v != nil {
		*err = fmt.Errorf("%w: ledger %s panicked: %v", ledger.ErrUnavailable, op, v)
	}
}

func (r recoveringLedger) Begin(ctx context.Context, key, owner, digest string, now time.Time, lease time.Duration) (e ledger.Entry, err error) {
	defer guard("Begin", &err)
	return r.l.Begin(ctx, key, owner, digest, now, lease)
}

func (r recoveringLedger) StartEffect(ctx context.Context, key, owner string, now time.Time) (err error) {
	defer guard("StartEffect", &err)
	return r.l.StartEffect(ctx, key, owner, now)
}

func (r recoveringLedger) Complete(ctx context.Context, key, owner, receipt string, now time.Time) (err error) {
	defer guard("Complete", &err)
	return r.l.Complete(ctx, key, owner, receipt, now)
}

func (r recoveringLedger) CompleteReadOnly(ctx context.Context, key, owner, digest, receipt string, now time.Time) (e ledger.Entry, err error) {
	defer guard("CompleteReadOnly", &err)
	return r.l.CompleteReadOnly(ctx, key, owner, digest, receipt, now)
}

func (r recoveringLedger) Release(ctx context.Context, key, owner string, now time.Time) (err error) {
	defer guard("Release", &err)
	return r.l.Release(ctx, key, owner, now)
}

func (r recoveringLedger) DeadLettered(ctx context.Context, key string, reason deadletter.Reason, now time.Time) (e ledger.Entry, err error) {
	defer guard("DeadLettered", &err)
	return r.l.DeadLettered(ctx, key, reason, now)
}

func (r recoveringLedger) Redriven(ctx context.Context, key string, now time.Time) (e ledger.Entry, err error) {
	defer guard("Redriven", &err)
	return r.l.Redriven(ctx, key, now)
}

func (r recoveringLedger) Get(ctx context.Context, key string) (e ledger.Entry, ok bool, err error) {
	defer guard("Get", &err)
	return r.l.Get(ctx, key)
}

func (r recoveringLedger) Reconcile(ctx context.Context, key string, rc ledger.Reconciliation, now time.Time) (e ledger.Entry, err error) {
	defer guard("Reconcile", &err)
	return r.l.Reconcile(ctx, key, rc, now)
}
