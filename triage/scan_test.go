package triage

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/testkit/sqsfake"
	"github.com/agentdlq/agentdlq/triage/dlq"
	"github.com/agentdlq/agentdlq/triage/report"
)

// many makes n broker-moved messages.
func many(n int) []dlq.Message {
	out := make([]dlq.Message, n)
	for i := range out {
		out[i] = brokerMoved(fmt.Sprintf("m%04d", i), fmt.Sprintf(`{"n":%d}`, i), t0.Add(-time.Duration(i)*time.Minute))
	}
	return out
}

func TestScan(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		msgs    int
		opts    ScanOptions
		setup   func(f *sqsfake.Fake)
		wantErr error
		// want
		unique      int
		stop        string
		partial     string // substring of the partial reason; "" for a complete scan
		cause       string // the partial cause
		retryAfter  int    // seconds until a rerun may see everything (0: not a matter of time)
		wantRelease bool
		hiddenAfter int // letters still hidden after the scan (held elsewhere, or taken by a lost receive)
	}{
		{name: "complete, one receiver", msgs: 35, unique: 35, stop: stopEmpty, wantRelease: true},
		{name: "complete, parallel receivers", msgs: 250, opts: ScanOptions{Receivers: 4}, unique: 250, stop: stopEmpty, wantRelease: true},
		{name: "empty queue", msgs: 0, unique: 0, stop: stopEmpty},
		{name: "message bound", msgs: 35, opts: ScanOptions{MaxMessages: 20}, unique: 20, stop: stopMaxMessages,
			partial: "message bound (20); the queue held about 35", cause: CauseMaxMessages, wantRelease: true},
		{name: "time bound", msgs: 100, opts: ScanOptions{MaxDuration: 3 * time.Second},
			setup: func(f *sqsfake.Fake) { f.ReceiveTakes = time.Second }, unique: 30, stop: stopMaxDuration, partial: "time bound (3s) after 30 messages",
			cause: CauseMaxDuration, wantRelease: true},
		{name: "visibility lapses: repeats stop the scan", msgs: 100, opts: ScanOptions{VisibilityTimeout: time.Second},
			setup: func(f *sqsfake.Fake) { f.ReceiveTakes = 2 * time.Second }, unique: 10, stop: stopRepeats, partial: "visibility timeout 1s lapsed",
			cause: CauseVisibilityLapsed},
		{name: "a receive fails mid-scan", msgs: 35, setup: func(f *sqsfake.Fake) { f.FailReceive = 3 }, unique: 20, stop: stopError,
			partial: "a receive failed after 20 messages: triage: scan", cause: CauseReceiveFailed, retryAfter: 30, wantRelease: true},
		{name: "the first receive fails", msgs: 35, setup: func(f *sqsfake.Fake) { f.FailReceive = 1 }, wantErr: fmt.Errorf("connection reset by peer")},
		{name: "messages in flight elsewhere", msgs: 15, setup: func(f *sqsfake.Fake) { theDLQ(f).Messages[0].VisibleAt = t0.Add(time.Hour) },
			unique: 14, stop: stopEmpty, partial: "1 message in flight when the scan started", cause: CauseInFlight, retryAfter: 30,
			wantRelease: true, hiddenAfter: 1},
		{name: "in flight elsewhere, the queue's visibility timeout longer than the scan's", msgs: 15,
			setup: func(f *sqsfake.Fake) {
				theDLQ(f).Messages[3].VisibleAt = t0.Add(time.Hour)
				setDuration(f, "VisibilityTimeout", 2*time.Minute)
			},
			unique: 14, stop: stopEmpty, partial: "(about 120s: the longer of the queue's and this scan's", cause: CauseInFlight, retryAfter: 120, wantRelease: true, hiddenAfter: 1},
		{name: "in flight at the start, back and read during the scan: complete", msgs: 15,
			setup: func(f *sqsfake.Fake) {
				theDLQ(f).Messages[0].VisibleAt = t0.Add(time.Second)
				f.ReceiveTakes = time.Second
			},
			unique: 15, stop: stopEmpty, wantRelease: true},
		{name: "a receive's response is lost: its letters stay hidden", msgs: 35, setup: func(f *sqsfake.Fake) { f.LoseReceive = 2 },
			unique: 10, stop: stopEmpty, partial: "saw 10 of about 35 messages: the rest were hidden during the scan", cause: CauseHidden, retryAfter: 30,
			wantRelease: true, hiddenAfter: 10},
		{name: "missing queue", msgs: 3, setup: func(f *sqsfake.Fake) { f.RemoveQueue("http://q/agent-tasks-dlq") }, wantErr: ErrQueueNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clock := newClock()
			f := newFakeSQS(t, clock, many(tt.msgs))
			if tt.setup != nil {
				tt.setup(f)
			}
			before := snapshot(f)
			opts := tt.opts
			opts.Now = clock.Now
			var mu sync.Mutex
			var progress []int
			opts.Progress = func(seen, _ int) { mu.Lock(); progress = append(progress, seen); mu.Unlock() }

			msgs, st, err := Scan(t.Context(), f, "http://q/dlq", opts)
			assert.Equal(t, before, snapshot(f), "the queue's contents never change")
			if tt.wantErr != nil {
				require.Error(t, err)
				if tt.wantErr == ErrQueueNotFound {
					assert.ErrorIs(t, err, ErrQueueNotFound)
				} else {
					assert.Contains(t, err.Error(), tt.wantErr.Error())
				}
				return
			}
			require.NoError(t, err)
			assert.Len(t, msgs, tt.unique)
			assert.Equal(t, tt.unique, st.Unique)
			assert.Equal(t, tt.stop, st.StopReason)
			if tt.partial == "" {
				assert.False(t, st.Partial, st.PartialReason)
			} else {
				assert.True(t, st.Partial)
				assert.Contains(t, st.PartialReason, tt.partial)
			}
			assert.Equal(t, tt.cause, st.PartialCause)
			assert.Equal(t, tt.retryAfter, st.RetryAfterSeconds)
			seen := map[string]bool{}
			for _, m := range msgs {
				assert.False(t, seen[m.MessageID], "each message once")
				seen[m.MessageID] = true
			}
			if tt.wantRelease {
				_, hidden := counts(f)
				assert.Equal(t, tt.hiddenAfter, hidden, "everything the scan held is visible again at once; what others hold is not")
				assert.Equal(t, st.Released, f.Released)
				assert.Positive(t, st.Released)
				assert.Zero(t, st.ReleaseFailed, "only the latest receipt handle of each message is used")
			}
			for i := 1; i < len(progress); i++ {
				assert.GreaterOrEqual(t, progress[i], progress[i-1], "progress only grows")
			}
			if tt.unique > 0 {
				assert.Equal(t, tt.unique, progress[len(progress)-1])
			}
		})
	}
}

// TestScanFIFOGroups: a FIFO DLQ hands out no further message of a group
// while one is in flight, so a read-only scan sees at most a batch a group;
// the scan says it is partial, and why.
func TestScanFIFOGroups(t *testing.T) {
	t.Parallel()
	clock := newClock()
	msgs := many(45)
	for i := range msgs {
		msgs[i].MessageGroupID = fmt.Sprintf("run-%d", i/15) // 3 groups of 15
	}
	f := newFakeSQS(t, clock, msgs)
	setFIFO(f)
	got, st, err := Scan(t.Context(), f, "q.fifo", ScanOptions{Now: clock.Now})
	require.NoError(t, err)
	assert.Len(t, got, 30, "10 of each group")
	assert.Equal(t, "run-0", got[0].MessageGroupID)
	assert.True(t, st.Partial)
	assert.Contains(t, st.PartialReason, "saw 30 of about 45")
	assert.Contains(t, st.PartialReason, "FIFO group")
	assert.Equal(t, CauseFIFOGroups, st.PartialCause)
	assert.Zero(t, st.RetryAfterSeconds, "a rerun sees the same")
	_, hidden := counts(f)
	assert.Equal(t, 0, hidden, "released")
}

func TestScanKeepHidden(t *testing.T) {
	t.Parallel()
	clock := newClock()
	f := newFakeSQS(t, clock, many(12))
	_, st, err := Scan(t.Context(), f, "q", ScanOptions{KeepHidden: true, Now: clock.Now})
	require.NoError(t, err)
	assert.Equal(t, 0, f.Changes)
	assert.Equal(t, 0, st.Released)
	clock.Advance(31 * time.Second)
	visible, _ := counts(f)
	assert.Equal(t, 12, visible, "back after the 30 s visibility timeout")
}

func TestScanStatsRate(t *testing.T) {
	t.Parallel()
	clock := newClock()
	f := newFakeSQS(t, clock, many(40))
	f.ReceiveTakes = 100 * time.Millisecond
	_, st, err := Scan(t.Context(), f, "q", ScanOptions{Now: clock.Now})
	require.NoError(t, err)
	assert.Equal(t, 5, st.Receives, "4 batches of 10 and one empty receive")
	assert.InDelta(t, 0.5, st.DurationSeconds, 1e-9)
	assert.InDelta(t, 80, st.MessagesPerSecond, 1e-9)
	assert.Equal(t, t0, st.StartedAt)
	assert.Equal(t, 1, st.Receivers, "auto: one receiver for a shallow queue")
}

func TestScanAutoReceivers(t *testing.T) {
	t.Parallel()
	clock := newClock()
	msgs, st, err := Scan(t.Context(), newFakeSQS(t, clock, many(4500)), "q", ScanOptions{Now: clock.Now})
	require.NoError(t, err)
	assert.Equal(t, 3, st.Receivers, "1 + 4500/2000")
	assert.Len(t, msgs, 4500)
	assert.Equal(t, 0, st.Duplicates)
}

func TestScanBadOptions(t *testing.T) {
	t.Parallel()
	for _, o := range []ScanOptions{
		{VisibilityTimeout: 500 * time.Millisecond}, {VisibilityTimeout: 13 * time.Hour}, {WaitTime: 21 * time.Second},
		{Receivers: 33}, {Receivers: -1}, {MaxMessages: -1},
	} {
		_, _, err := Scan(t.Context(), newFakeSQS(t, newClock(), nil), "q", o)
		assert.ErrorIs(t, err, ErrBadOptions, "%+v", o)
	}
}

func TestFromSQS(t *testing.T) {
	t.Parallel()
	got := fromSQS(types.Message{
		MessageId: aws.String("id-1"), ReceiptHandle: aws.String("rh"), Body: aws.String("{}"),
		MessageAttributes: map[string]types.MessageAttributeValue{
			"dlq_reason": {DataType: aws.String("String"), StringValue: aws.String("json_invalid")},
			"blob":       {DataType: aws.String("Binary"), BinaryValue: []byte{1, 2}},
		},
		Attributes: map[string]string{
			"SentTimestamp": "1764417600000", "ApproximateReceiveCount": "3", "MessageGroupId": "run-7",
			"DeadLetterQueueSourceArn": "arn:aws:sqs:us-east-1:1:hot",
		},
	})
	assert.Equal(t, dlq.Message{
		MessageID: "id-1", ReceiptHandle: "rh", Body: "{}",
		Attributes: map[string]deadletter.Attribute{
			"dlq_reason": {DataType: "String", StringValue: "json_invalid"},
			"blob":       {DataType: "Binary", BinaryValue: []byte{1, 2}},
		},
		SentTimestamp: time.UnixMilli(1764417600000).UTC(), ReceiveCount: 3, MessageGroupID: "run-7",
		System: map[string]string{"DeadLetterQueueSourceArn": "arn:aws:sqs:us-east-1:1:hot"},
	}, got)
}

// failingLedger fails every read.
type failingLedger struct{}

func (failingLedger) Get(context.Context, string) (ledger.Entry, bool, error) {
	return ledger.Entry{}, false, ledger.ErrUnavailable
}

func TestRunLedgerUnavailable(t *testing.T) {
	t.Parallel()
	clock := newClock()
	f := newFakeSQS(t, clock, fixture(t))
	r, err := Run(t.Context(), Config{Pipeline: testPipeline(t, false), DLQURL: "q", SQS: f, Ledger: failingLedger{}, Now: clock.Now, Logger: quiet})
	require.NoError(t, err, "the ledger only adds counts: triage goes on without it")
	assert.True(t, r.Partial)
	assert.Contains(t, r.PartialReasons[0], "ledger counts incomplete")
	assert.Equal(t, 16, r.Totals.Messages)
}

// TestRunExpiryFollowsTheQueue: SQS deletes by the DLQ's own
// MessageRetentionPeriod; when it differs from the definition, the expiry
// follows the queue and the report says so.
func TestRunExpiryFollowsTheQueue(t *testing.T) {
	t.Parallel()
	clock := newClock()
	f := newFakeSQS(t, clock, []dlq.Message{brokerMoved("a", "{}", t0.Add(-10*time.Hour))})
	setDuration(f, "MessageRetentionPeriod", 24*time.Hour)
	r, err := Run(t.Context(), Config{Pipeline: testPipeline(t, false), DLQURL: "q", SQS: f, Now: clock.Now, Logger: quiet})
	require.NoError(t, err)
	assert.Equal(t, "queue", r.Expiry.RetentionSource)
	assert.Equal(t, int64(86400), r.Expiry.DLQRetentionSeconds)
	assert.Equal(t, t0.Add(14*time.Hour), r.Expiry.SoonestExpiry)
	assert.Equal(t, 1, r.Expiry.ExpiringSoon)
	assert.Contains(t, r.Attention[0], "the DLQ's retention is 24h0m0s, the pipeline definition says 336h")

	// A FIFO queue is read as FIFO even when the definition says otherwise.
	g := newFakeSQS(t, clock, []dlq.Message{brokerMoved("b", "{}", t0)})
	setFIFO(g)
	r, err = Run(t.Context(), Config{Pipeline: testPipeline(t, false), DLQURL: "q", SQS: g, Now: clock.Now, Logger: quiet})
	require.NoError(t, err)
	assert.True(t, r.FIFO)
	assert.Equal(t, map[report.ClockBasis]int{report.ClockFIFOReset: 1}, r.Expiry.ByBasis)
}
