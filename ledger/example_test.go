package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/ledger"
)

// A delivery claims the task's key, makes its effect, and completes it with
// the receipt; a redelivery of the same task is then refused with ErrDone,
// carrying the receipt, and the worker acknowledges it without running it.
func ExampleMemory() {
	ctx := context.Background()
	l := ledger.NewMemory()
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

	if _, err := l.Begin(ctx, "refund-42", "msg-1", "", now, 30*time.Second); err != nil {
		fmt.Println("begin:", err)
		return
	}
	if err := l.StartEffect(ctx, "refund-42", "msg-1", now); err != nil {
		fmt.Println("start effect:", err)
		return
	}
	if err := l.Complete(ctx, "refund-42", "msg-1", "re_1Pq", now.Add(time.Second)); err != nil {
		fmt.Println("complete:", err)
		return
	}

	prev, err := l.Begin(ctx, "refund-42", "msg-2", "", now.Add(time.Minute), 30*time.Second)
	fmt.Println(errors.Is(err, ledger.ErrDone), prev.State, prev.Receipt)

	e, _, _ := l.Get(ctx, "refund-42")
	fmt.Println(e.State, e.EffectStarted, e.ExpiresAt.Sub(e.UpdatedAt) == ledger.DefaultTTL)
	// Output:
	// true done re_1Pq
	// done true true
}

// The owner settles an unknown effect: the mutating call started, the
// delivery died before a receipt, and the payment system shows no refund.
// No effect clears the mark, so that a redrive runs the task afresh.
func ExampleMemory_Reconcile() {
	ctx := context.Background()
	l := ledger.NewMemory()
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

	_, _ = l.Begin(ctx, "refund-43", "msg-1", "", now, 30*time.Second)
	_ = l.StartEffect(ctx, "refund-43", "msg-1", now)
	_, _ = l.DeadLettered(ctx, "refund-43", deadletter.ReasonEffectUnknown, now)

	e, _, _ := l.Get(ctx, "refund-43")
	fmt.Println("effect unknown:", e.EffectUnknown(now))

	e, err := l.Reconcile(ctx, "refund-43", ledger.Reconciliation{Outcome: ledger.OutcomeNoEffect, By: "payments-oncall"}, now.Add(time.Hour))
	fmt.Println(err, e.Reconciled, e.EffectStarted)

	_, err = l.Reconcile(ctx, "refund-43", ledger.Reconciliation{Outcome: ledger.OutcomeEffectConfirmed, Receipt: "re_9", By: "payments-oncall"}, now.Add(2*time.Hour))
	fmt.Println(errors.Is(err, ledger.ErrReconciled))
	// Output:
	// effect unknown: true
	// <nil> no_effect false
	// true
}
