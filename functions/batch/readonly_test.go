package batch

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/ledger"
)

const (
	roDigestA = "jcs-sha256:aaaaaaaaaaaaaaaa"
	roDigestB = "jcs-sha256:bbbbbbbbbbbbbbbb"
)

// TestReadOnlyTool: a task whose tool declares that it changes nothing
// (Record.Begin with mutates false) is settled in one conditional ledger
// write, and every guarantee of the claim path holds.
func TestReadOnlyTool(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("one ledger write, no claim", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, nil)
		got := h.run(t, events.SQSEvent{Records: []events.SQSMessage{sqsMsg("m1", "ro:k|"+roDigestA, 1)}})
		assert.Equal(t, acked, got["m1"])
		assert.Equal(t, map[string]int{"CompleteReadOnly": 1}, h.ledger.callCounts(), "no Begin, no Complete")
		e, ok, err := h.ledger.Get(ctx, lkey("k"))
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, ledger.StateDone, e.State)
		assert.Equal(t, "receipt-k", e.Receipt)
		assert.Equal(t, roDigestA, e.ArgsDigest, "the digest is kept: a reused key is caught later")
		assert.Equal(t, 1.0, parseEMF(t, h.metrics.String())[0]["Processed"])
	})
	t.Run("a done key is a no-op", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, nil)
		// Done by a read-only delivery and by a claim, as before this path.
		require.Equal(t, acked, h.run(t, events.SQSEvent{Records: []events.SQSMessage{sqsMsg("m1", "ro:k|"+roDigestA, 1)}})["m1"])
		_, err := h.ledger.Begin(ctx, lkey("j"), "m0", roDigestA, testNow, time.Minute)
		require.NoError(t, err)
		require.NoError(t, h.ledger.Complete(ctx, lkey("j"), "m0", "receipt-0", testNow))
		before, _, _ := h.ledger.Get(ctx, lkey("k"))
		got := h.run(t, events.SQSEvent{Records: []events.SQSMessage{
			sqsMsg("m2", "ro:k|"+roDigestA, 1), sqsMsg("m3", "ro:j|"+roDigestA, 1),
			// A failure on a done key is a no-op too, not a dead letter.
			sqsMsg("m4", "ro-fail:k|"+roDigestA, 4),
		}})
		assert.Equal(t, map[string]outcome{"m2": acked, "m3": acked, "m4": acked}, got)
		assert.Empty(t, h.sqs.sent)
		after, _, _ := h.ledger.Get(ctx, lkey("k"))
		assert.Equal(t, before, after, "the done entry is untouched")
		assert.Equal(t, "receipt-0", func() string { e, _, _ := h.ledger.Get(ctx, lkey("j")); return e.Receipt }())
		assert.Equal(t, 3.0, parseEMF(t, h.metrics.String())[1]["DuplicatesSkipped"])
	})
	t.Run("a reused key is dead-lettered, the entry untouched", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, nil)
		require.Equal(t, acked, h.run(t, events.SQSEvent{Records: []events.SQSMessage{sqsMsg("m1", "ro:k|"+roDigestA, 1)}})["m1"])
		_, err := h.ledger.Begin(ctx, lkey("j"), "m0", roDigestA, testNow, time.Minute)
		require.NoError(t, err)
		_, err = h.ledger.DeadLettered(ctx, lkey("j"), deadletter.ReasonBudgetExhausted, testNow)
		require.NoError(t, err)
		beforeK, _, _ := h.ledger.Get(ctx, lkey("k"))
		beforeJ, _, _ := h.ledger.Get(ctx, lkey("j"))
		got := h.run(t, events.SQSEvent{Records: []events.SQSMessage{
			sqsMsg("m2", "ro:k|"+roDigestB, 1),      // done with other args
			sqsMsg("m3", "ro-fail:j|"+roDigestB, 1), // dead-lettered with other args, failing
		}})
		reused := deadLettered(deadletter.ReasonIdempotencyKeyReused)
		assert.Equal(t, map[string]outcome{"m2": reused, "m3": reused}, got)
		afterK, _, _ := h.ledger.Get(ctx, lkey("k"))
		afterJ, _, _ := h.ledger.Get(ctx, lkey("j"))
		assert.Equal(t, beforeK, afterK, "not counted on the other task's entry")
		assert.Equal(t, beforeJ, afterJ, "not counted on the other task's entry")
		for _, in := range h.sqs.sent {
			meta, _, err := deadletter.DecodeDeadLetter(attrsOf(in))
			require.NoError(t, err)
			assert.Contains(t, meta.Error, "jcs-sha256:aaaaaaaaaaaa…")
			assert.Equal(t, deadletter.EffectReadOnly, meta.Effect)
		}
	})
	t.Run("a failure is retried, then dead-lettered and counted; a redrive loop is caught", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, nil)
		got := h.run(t, events.SQSEvent{Records: []events.SQSMessage{sqsMsg("m1", "ro-fail:k|"+roDigestA, 1)}})
		assert.Equal(t, deadLettered(deadletter.ReasonUnclassified), got["m1"])
		calls := h.ledger.callCounts()
		assert.Equal(t, 0, calls["Begin"], "no claim")
		assert.Equal(t, 0, calls["Release"], "no lease to give back")
		assert.Equal(t, 1, calls["Get"], "one read, on the failure")
		e, _, _ := h.ledger.Get(ctx, lkey("k"))
		assert.Equal(t, ledger.StateDeadLettered, e.State)
		assert.Equal(t, 1, e.DeadLetterCount)
		for i := 2; i <= 3; i++ {
			_, err := h.ledger.Redriven(ctx, lkey("k"), testNow)
			require.NoError(t, err)
			got := h.run(t, events.SQSEvent{Records: []events.SQSMessage{sqsMsg(fmt.Sprint("m", i), "ro-fail:k|"+roDigestA, 1)}})
			want := deadLettered(deadletter.ReasonUnclassified)
			if i == 3 {
				want = deadLettered(deadletter.ReasonRedriveLoop) // redrive count 2 = RedriveLoopAfter
			}
			assert.Equal(t, want, got[fmt.Sprint("m", i)], "delivery %d", i)
		}
		e, _, _ = h.ledger.Get(ctx, lkey("k"))
		assert.Equal(t, 3, e.DeadLetterCount)
		// After the redrives a delivery that succeeds settles the key.
		_, err := h.ledger.Redriven(ctx, lkey("k"), testNow)
		require.NoError(t, err)
		assert.Equal(t, acked, h.run(t, events.SQSEvent{Records: []events.SQSMessage{sqsMsg("m9", "ro:k|"+roDigestA, 1)}})["m9"])
		e, _, _ = h.ledger.Get(ctx, lkey("k"))
		assert.Equal(t, ledger.StateDone, e.State)
		assert.Equal(t, 3, e.DeadLetterCount, "the counts stay")
	})
	t.Run("a retried failure costs one read", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, func(c *Config) {
			c.Handler = func(ctx context.Context, r Record) error {
				if err := r.Begin(ctx, "t", "k", roDigestA, false); err != nil {
					return err
				}
				return Transient(errors.New("upstream 503"))
			}
		})
		got := h.run(t, events.SQSEvent{Records: []events.SQSMessage{sqsMsg("m1", "x", 1)}})
		assert.Equal(t, retried, got["m1"])
		assert.Equal(t, map[string]int{"Get": 1}, h.ledger.callCounts())
	})
	t.Run("another task's unscoped entry says nothing of this one", func(t *testing.T) {
		// Issue 28: an entry of before scoping sits under the bare key, and
		// any tenant may have written it. With another digest it is another
		// task's: done, it must not make this task a no-op; dead-lettered
		// and redriven, it must not make it reused nor lend it its redrive
		// count. The task is settled on its own scoped entry.
		t.Parallel()
		h := newHarness(t, nil)
		_, err := h.ledger.Begin(ctx, "done", "m0", roDigestB, testNow, time.Minute)
		require.NoError(t, err)
		require.NoError(t, h.ledger.Complete(ctx, "done", "m0", "receipt-other", testNow))
		_, err = h.ledger.Begin(ctx, "dl", "m0", roDigestB, testNow, time.Minute)
		require.NoError(t, err)
		_, err = h.ledger.DeadLettered(ctx, "dl", deadletter.ReasonUnclassified, testNow)
		require.NoError(t, err)
		for range 2 {
			_, err = h.ledger.Redriven(ctx, "dl", testNow)
			require.NoError(t, err)
		}
		beforeDone, _, _ := h.ledger.Get(ctx, "done")
		beforeDL, _, _ := h.ledger.Get(ctx, "dl")
		// Get falls back to them: the scoped keys hold nothing yet.
		e, ok, err := h.ledger.Get(ctx, lkey("done"))
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, "done", e.Key, "the scoped key reads as the unscoped entry")

		got := h.run(t, events.SQSEvent{Records: []events.SQSMessage{
			sqsMsg("m1", "ro-fail:done|"+roDigestA, 1),
			sqsMsg("m2", "ro-fail:dl|"+roDigestA, 1),
		}})
		failed := deadLettered(deadletter.ReasonUnclassified)
		assert.Equal(t, map[string]outcome{"m1": failed, "m2": failed}, got,
			"not a no-op, not reused, not a redrive loop: the tool's failure")
		for _, k := range []string{"done", "dl"} {
			e, ok, err := h.ledger.Get(ctx, lkey(k))
			require.NoError(t, err)
			require.True(t, ok)
			assert.Equal(t, lkey(k), e.Key, "counted on its own scoped entry")
			assert.Equal(t, ledger.StateDeadLettered, e.State, k)
			assert.Equal(t, 1, e.DeadLetterCount, k)
			assert.Zero(t, e.RedriveCount, k)
		}

		// A success completes its own scoped entry with its own receipt
		// (CompleteReadOnly never consults the unscoped entry).
		got = h.run(t, events.SQSEvent{Records: []events.SQSMessage{sqsMsg("m3", "ro:done|"+roDigestA, 1)}})
		assert.Equal(t, acked, got["m3"])
		e, _, _ = h.ledger.Get(ctx, lkey("done"))
		assert.Equal(t, ledger.StateDone, e.State)
		assert.Equal(t, "receipt-done", e.Receipt, "its own receipt, not the other task's")
		emf := parseEMF(t, h.metrics.String())
		last := emf[len(emf)-1]
		assert.Equal(t, 1.0, last["Processed"])
		assert.Equal(t, 0.0, last["DuplicatesSkipped"], "processed, not skipped as a duplicate")
		afterDone, _, _ := h.ledger.Get(ctx, "done")
		afterDL, _, _ := h.ledger.Get(ctx, "dl")
		assert.Equal(t, beforeDone, afterDone, "the other task's entry is untouched")
		assert.Equal(t, beforeDL, afterDL, "the other task's entry is untouched")
	})
	t.Run("a key another delivery claimed is retried", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, nil)
		_, err := h.ledger.Begin(ctx, lkey("k"), "other", roDigestA, testNow, time.Minute)
		require.NoError(t, err)
		got := h.run(t, events.SQSEvent{Records: []events.SQSMessage{sqsMsg("m1", "ro:k|"+roDigestA, 1), sqsMsg("m2", "ro-fail:k|"+roDigestA, 2)}})
		assert.Equal(t, map[string]outcome{"m1": retried, "m2": retried}, got)
		e, _, _ := h.ledger.Get(ctx, lkey("k"))
		assert.Equal(t, "other", e.Owner)
		assert.Equal(t, ledger.StateInProgress, e.State)
	})
	t.Run("a ledger outage retries, never dead-letters", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, nil)
		h.ledger.complete, h.ledger.get = outage, outage
		got := h.run(t, events.SQSEvent{Records: []events.SQSMessage{
			sqsMsg("m1", "ro:k|"+roDigestA, 4), sqsMsg("m2", "ro-fail:j|"+roDigestA, 4),
		}})
		assert.Equal(t, map[string]outcome{"m1": retried, "m2": retried}, got)
		assert.Empty(t, h.sqs.sent)
	})
	t.Run("a read-only record that starts an effect claims the key first", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, func(c *Config) {
			c.Handler = func(ctx context.Context, r Record) error {
				if err := r.Begin(ctx, "t", "k", roDigestA, false); err != nil {
					return err
				}
				if err := r.StartEffect(ctx); err != nil {
					return err
				}
				if r.ReceiveCount == 1 {
					return fmt.Errorf("mail: %w", context.DeadlineExceeded)
				}
				r.SetReceipt("sent")
				return nil
			}
		})
		got := h.run(t, events.SQSEvent{Records: []events.SQSMessage{sqsMsg("m1", "x", 1)}})
		assert.Equal(t, deadLettered(deadletter.ReasonEffectUnknown), got["m1"], "the effect started under a claim: never retried blindly")
		calls := h.ledger.callCounts()
		assert.Equal(t, 1, calls["Begin"])
		assert.Equal(t, 1, calls["StartEffect"])
		assert.Equal(t, 0, calls["CompleteReadOnly"])
		e, _, _ := h.ledger.Get(ctx, lkey("k"))
		assert.True(t, e.EffectUnknown(testNow.Add(time.Hour)), "the entry says so: %+v", e)
	})
}
