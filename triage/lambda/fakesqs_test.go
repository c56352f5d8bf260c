package main

import (
	"strconv"
	"testing"
	"time"

	"github.com/agentdlq/agentdlq/testkit/sqsfake"
	"github.com/agentdlq/agentdlq/triage/dlq"
	"github.com/agentdlq/agentdlq/triage/internal/triagetest"
)

// dlqURL is the URL of the fake's DLQ in the tests of one pipeline.
const dlqURL = "http://q/agent-tasks-dlq"

// newFakeSQS is an SQS with a DLQ at each URL holding its messages, on
// clock (with one DLQ, any URL reaches it). Like triage's tests, it fails
// the test on any call that would change a queue's contents.
func newFakeSQS(t testing.TB, clock *triagetest.Clock, dlqs map[string][]dlq.Message) *sqsfake.Fake {
	f := sqsfake.New(clock)
	f.T, f.ReadOnly, f.CheckReceive, f.StrictHandles, f.AnyURL = t, true, true, true, len(dlqs) == 1
	for url, msgs := range dlqs {
		f.AddQueue(&sqsfake.Queue{URL: url, Attributes: map[string]string{"FifoQueue": "false"}})
		for _, m := range msgs {
			f.Put(url, sqsfake.Message{ID: m.MessageID, Body: m.Body, Sent: m.SentTimestamp, Group: m.MessageGroupID, Attributes: sqsfake.Attributes(m.Attributes)})
		}
	}
	return f
}

// setDuration sets a queue attribute SQS gives in seconds.
func setDuration(f *sqsfake.Fake, url, name string, d time.Duration) {
	f.Queue(url).Attributes[name] = strconv.Itoa(int(d / time.Second))
}

// snapshot is a queue's content for before/after comparisons: id → body.
func snapshot(f *sqsfake.Fake, url string) map[string]string {
	out := map[string]string{}
	for _, m := range f.Snapshot(url) {
		out[m.ID] = m.Body
	}
	return out
}

// hidden counts a queue's messages in flight now.
func hidden(f *sqsfake.Fake, url string) int {
	n, now := 0, f.Now()
	for _, m := range f.Snapshot(url) {
		if m.VisibleAt.After(now) {
			n++
		}
	}
	return n
}
