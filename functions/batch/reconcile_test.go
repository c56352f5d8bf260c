package batch

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/ledger"
)

// TestRedriveAfterReconcile: how the worker treats a redriven effect_unknown
// task. Its key is dead-lettered with effect_started and no receipt; the
// redriven delivery fails transiently once after its Begin and before its
// mutating call, then is retried. Reconciled as no effect (effect_started
// cleared), the retry runs the task. Redriven blindly (not reconciled), the
// retry finds the first incident's effect_started on an in_progress key and
// dead-letters it as effect_unknown again, though this delivery never
// started its call. Reconciled as effect confirmed, the key is done: the
// redelivery is a no-op.
func TestRedriveAfterReconcile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		reconcile *ledger.Reconciliation
		want      []outcome // the two deliveries
		state     ledger.State
		receipt   string
	}{
		{"no effect: the retry runs it", &ledger.Reconciliation{Outcome: ledger.OutcomeNoEffect, By: "owner"},
			[]outcome{retried, acked}, ledger.StateDone, "receipt-k"},
		{"not reconciled: the stale mark makes it effect_unknown again", nil,
			[]outcome{retried, deadLettered(deadletter.ReasonEffectUnknown)}, ledger.StateDeadLettered, ""},
		{"effect confirmed: acknowledged as a no-op", &ledger.Reconciliation{Outcome: ledger.OutcomeEffectConfirmed, Receipt: "ext-1", By: "owner"},
			[]outcome{acked, acked}, ledger.StateDone, "ext-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var attempts, calls atomic.Int32
			h := newHarness(t, func(c *Config) {
				c.Handler = func(ctx context.Context, r Record) error {
					if err := r.Begin(ctx, "t", "k", "", true); err != nil {
						return err
					}
					if attempts.Add(1) == 1 {
						return Transient(errors.New("upstream 503")) // before the mutating call
					}
					if err := r.StartEffect(ctx); err != nil {
						return err
					}
					calls.Add(1)
					r.SetReceipt("receipt-k")
					return nil
				}
			})
			ctx := context.Background()
			earlier := testNow.Add(-time.Hour)
			_, err := h.ledger.Begin(ctx, lkey("k"), "m0", "", earlier, time.Minute)
			require.NoError(t, err)
			require.NoError(t, h.ledger.StartEffect(ctx, lkey("k"), "m0", earlier))
			_, err = h.ledger.DeadLettered(ctx, lkey("k"), deadletter.ReasonEffectUnknown, earlier)
			require.NoError(t, err)
			if tt.reconcile != nil {
				_, err = h.ledger.Reconcile(ctx, lkey("k"), *tt.reconcile, earlier.Add(time.Minute))
				require.NoError(t, err)
			}
			_, err = h.ledger.Redriven(ctx, lkey("k"), earlier.Add(2*time.Minute))
			require.NoError(t, err)

			var got []outcome
			for receive := 1; receive <= 2; receive++ {
				res := h.run(t, events.SQSEvent{Records: []events.SQSMessage{sqsMsg("m1", "redriven", receive)}})
				got = append(got, res["m1"])
			}
			assert.Equal(t, tt.want, got)
			e, _, err := h.ledger.Get(ctx, lkey("k"))
			require.NoError(t, err)
			assert.Equal(t, tt.state, e.State)
			assert.Equal(t, tt.receipt, e.Receipt)
			if tt.state == ledger.StateDone && tt.reconcile.Outcome == ledger.OutcomeNoEffect {
				assert.Equal(t, int32(1), calls.Load(), "the mutating call ran once")
			} else {
				assert.Zero(t, calls.Load(), "the mutating call never ran")
			}
		})
	}
}
