package triage_test

import (
	"fmt"
	"time"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/dlq"
)

// Tag a dead letter the worker wrote, and one the broker moved.
func ExampleTag() {
	attrs, _ := deadletter.EncodeDeadLetter(deadletter.Meta{
		Reason: deadletter.ReasonToolUnknown, Tool: "web.crawl", ToolVersion: "1", SchemaVersion: 1,
		Error: `tool "web.crawl" is not in the catalog (task 4711)`,
	}, nil)
	worker := triage.Tag(dlq.Message{MessageID: "m1", Body: `{"tool":"web.crawl"}`, Attributes: attrs})
	broker := triage.Tag(dlq.Message{MessageID: "m2", Body: `{"tool":"code.exec","tool_version":"1"}`})

	fmt.Println(worker.Reason, worker.Inferred, worker.Signature)
	fmt.Println(broker.Reason, broker.Inferred, broker.Hints.Tool)
	// Output:
	// tool_unknown false tool <q> is not in the catalog (task <n>)
	// receive_limit true code.exec
}

// Build a report and read its expiry risk: a standard queue keeps the
// original enqueue time when the broker moves a message to the DLQ.
func ExampleBuild() {
	p := &pipeline.Pipeline{Name: "agent-tasks", Owner: "platform-oncall", MaxReceiveCount: 4}
	p.ApplyDefaults() // DLQ retention 336 h, warning window 48 h
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	msgs := []dlq.Message{
		{MessageID: "old", Body: "{}", SentTimestamp: now.Add(-300 * time.Hour)},
		{MessageID: "new", Body: "{}", SentTimestamp: now.Add(-time.Hour)},
	}
	tagged := make([]dlq.Tagged, len(msgs))
	for i, m := range msgs {
		tagged[i] = triage.Tag(m)
	}
	r := triage.Build(tagged, p, now)
	fmt.Println(r.Totals.Messages, r.Groups[0].Reason, r.Groups[0].NextAction, r.Groups[0].Redrivable)
	fmt.Println(r.Expiry.SoonestMessageID, r.Expiry.SoonestExpiry.Format(time.RFC3339), r.Expiry.ExpiringSoon)
	// Output:
	// 2 receive_limit human_review after_review
	// old 2026-12-01T00:00:00Z 1
}
