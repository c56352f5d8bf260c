package triage

import (
	"strconv"
	"testing"
	"time"

	"github.com/agentdlq/agentdlq/testkit/sqsfake"
)

var _ ScanAPI = (*sqsfake.Fake)(nil)

// newFakeSQS is a DLQ of msgs on clock, which any URL reaches. It fails
// the test on any call that would change the queue's contents (delete,
// send, purge, move), on a receive that does not ask for every attribute,
// and it refuses a handle whose visibility lapsed, as SQS does.
func newFakeSQS(t testing.TB, clock *fakeClock, msgs []Message) *sqsfake.Fake {
	f := sqsfake.New(clock)
	f.T, f.ReadOnly, f.CheckReceive, f.StrictHandles, f.AnyURL = t, true, true, true, true
	q := f.AddQueue(&sqsfake.Queue{URL: "http://q/agent-tasks-dlq", Attributes: map[string]string{"FifoQueue": "false"}})
	for _, m := range msgs {
		f.Put(q.URL, sqsfake.Message{ID: m.MessageID, Body: m.Body, Sent: m.SentTimestamp, Group: m.MessageGroupID, Attributes: sqsfake.Attributes(m.Attributes)})
	}
	return f
}

// dlq is the fake's one queue.
func dlq(f *sqsfake.Fake) *sqsfake.Queue { return f.Queue("http://q/agent-tasks-dlq") }

// setFIFO makes the fake's queue a FIFO queue: a message group with a
// message in flight hands out nothing more.
func setFIFO(f *sqsfake.Fake) {
	dlq(f).Attributes["FifoQueue"] = "true"
	dlq(f).LockGroups = true
}

// setDuration sets a queue attribute SQS gives in seconds
// (VisibilityTimeout, MessageRetentionPeriod).
func setDuration(f *sqsfake.Fake, name string, d time.Duration) {
	dlq(f).Attributes[name] = strconv.Itoa(int(d / time.Second))
}

// snapshot is the queue's content for before/after comparisons: id → body.
func snapshot(f *sqsfake.Fake) map[string]string {
	out := map[string]string{}
	for _, m := range f.Snapshot("http://q/agent-tasks-dlq") {
		out[m.ID] = m.Body
	}
	return out
}

// counts are the queue's visible and hidden messages now.
func counts(f *sqsfake.Fake) (visible, hidden int) {
	now := f.Now()
	for _, m := range f.Snapshot("http://q/agent-tasks-dlq") {
		if m.VisibleAt.After(now) {
			hidden++
		} else {
			visible++
		}
	}
	return visible, hidden
}
