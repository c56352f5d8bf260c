package triage

import (
	"context"
	"log/slog"

	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/triage/dlq"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/pipeline"
)

// t0 is the fake clock's "now" in every test.
var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// quiet discards the logs of a test.
var quiet = slog.New(slog.DiscardHandler)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *fakeClock { return &fakeClock{now: t0} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// testPipeline is a standard pipeline with the defaults applied:
// DLQ retention 336 h, warning window 48 h, eval threshold 3, tenant hashed.
func testPipeline(t testing.TB, fifo bool) *pipeline.Pipeline {
	t.Helper()
	p := &pipeline.Pipeline{
		Name: "agent-tasks", Owner: "platform-oncall", MaxReceiveCount: 4, FIFO: fifo,
		Eval: pipeline.Eval{DropFields: []string{"args.password"}, HashFields: []string{"tenant"}},
	}
	if fifo {
		p.Name = "agent-steps"
	}
	p.ApplyDefaults()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	return p
}

// task is an agent task v1 body.
func task(id, tenant, tool, version, args string) string {
	return fmt.Sprintf(`{"task_id":%q,"run_id":"run-%s","tenant":%q,"idempotency_key":"key-%s","tool":%q,"tool_version":%q,"trace_id":"trace-%s","created_at":"2026-11-20T10:00:00Z","schema_version":1,"args":%s}`,
		id, id, tenant, id, tool, version, id, args)
}

// deadLetter is a message the worker dead-lettered itself, sent at sent.
func deadLetter(t testing.TB, id, body string, m deadletter.Meta, sent time.Time) dlq.Message {
	t.Helper()
	if m.DeadLetteredAt.IsZero() {
		m.DeadLetteredAt = sent
	}
	attrs, err := deadletter.EncodeDeadLetter(m, map[string]deadletter.Attribute{"origin": {DataType: "String", StringValue: "producer-a"}})
	if err != nil {
		t.Fatal(err)
	}
	return dlq.Message{MessageID: id, ReceiptHandle: "rh-" + id, Body: body, Attributes: attrs, SentTimestamp: sent, ReceiveCount: 1}
}

// brokerMoved is a message the redrive policy moved (no dlq_* attributes).
func brokerMoved(id, body string, sent time.Time) dlq.Message {
	return dlq.Message{MessageID: id, ReceiptHandle: "rh-" + id, Body: body, Attributes: map[string]deadletter.Attribute{}, SentTimestamp: sent, ReceiveCount: 5}
}

// poisonMeta is the metadata of a schema_invalid dead letter of a task.
func poisonMeta(reason deadletter.Reason, tool, version, tenant, key, errText string) deadletter.Meta {
	return deadletter.Meta{
		Reason: reason, Attempts: 1, Error: errText, ErrorCode: "",
		FirstFailureAt: t0.Add(-time.Hour), LastFailureAt: t0.Add(-time.Hour),
		Tool: tool, ToolVersion: version, SchemaVersion: 1, Tenant: tenant, IdempotencyKey: key,
		WorkerVersion: "test", Effect: deadletter.EffectNone,
	}
}

// fakeLedger is a read-only ledger of fixed entries.
type fakeLedger map[string]ledger.Entry

var _ KeyReader = fakeLedger(nil)

func (f fakeLedger) Get(_ context.Context, key string) (ledger.Entry, bool, error) {
	e, ok := f[key]
	if ok {
		e.Key = key
	}
	return e, ok, nil
}
