package redrive

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/triage"
)

// testPipeline returns a pipeline of the project's definition file.
func testPipeline(t testing.TB, name string) *pipeline.Pipeline {
	t.Helper()
	f, err := pipeline.Load("../" + pipeline.DefaultFile)
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	cp := *p
	return &cp
}

// testTag tags from the worker's metadata like triage does (reason from
// dlq_meta, receive_limit without it), with a fingerprint of reason and tool.
func testTag(m triage.Message) triage.Tagged {
	t := triage.Tag(m) // the hints and signature a filter matches on
	meta, _, err := deadletter.DecodeDeadLetter(m.Attributes)
	switch {
	case err != nil:
		t.Reason, t.Meta = deadletter.ReasonUnclassified, nil
	case meta == nil:
		t.Reason, t.Meta = deadletter.ReasonReceiveLimit, nil
	default:
		t.Reason, t.Meta = meta.Reason, meta
	}
	tool := ""
	if t.Meta != nil {
		tool = t.Meta.Tool
	}
	t.Fingerprint = "fp-" + string(t.Reason) + "-" + tool
	return t
}

// task is an agent task v1 body.
func task(key, tool string) string {
	b, _ := json.Marshal(map[string]any{
		"task_id": "task-" + key, "run_id": "run-1", "tenant": "acme", "idempotency_key": key,
		"tool": tool, "tool_version": "1", "trace_id": "trace-" + key, "created_at": "2026-11-29T10:00:00Z",
		"schema_version": 1, "args": map[string]any{"q": "hello " + key},
	})
	return string(b)
}

// originalAttrs are a producer's attributes: n of them, of every data type.
func originalAttrs(n int) map[string]deadletter.Attribute {
	out := map[string]deadletter.Attribute{}
	for i := range n {
		switch i % 3 {
		case 0:
			out[fmt.Sprintf("a%02d", i)] = deadletter.Attribute{DataType: "String", StringValue: fmt.Sprintf("v%d", i)}
		case 1:
			out[fmt.Sprintf("a%02d", i)] = deadletter.Attribute{DataType: "Number", StringValue: fmt.Sprint(i * 7)}
		default:
			out[fmt.Sprintf("a%02d", i)] = deadletter.Attribute{DataType: "Binary.raw", BinaryValue: []byte{0, byte(i), 0xff}}
		}
	}
	return out
}

// deadLetter is what the worker sends to the DLQ for a task.
type deadLetter struct {
	key, tool string
	reason    deadletter.Reason
	body      string
	original  map[string]deadletter.Attribute
	attrs     map[string]deadletter.Attribute
	origID    string
}

func newDeadLetter(t testing.TB, key, tool string, reason deadletter.Reason, nattrs int, group string) deadLetter {
	t.Helper()
	d := deadLetter{key: key, tool: tool, reason: reason, body: task(key, tool), original: originalAttrs(nattrs), origID: "orig-" + key}
	attrs, err := deadletter.EncodeDeadLetter(deadletter.Meta{
		Reason: reason, Attempts: 1, Error: "boom", MessageID: d.origID, IdempotencyKey: key, Tool: tool, ToolVersion: "1", Tenant: "acme",
		SchemaVersion: 1, DeadLetteredAt: time.Date(2026, 11, 29, 11, 0, 0, 0, time.UTC), MessageGroupID: group,
	}, d.original)
	if err != nil {
		t.Fatal(err)
	}
	d.attrs = attrs
	return d
}

// newRedriver wires a Redriver on the fake SQS, locally (no STS).
func newRedriver(t testing.TB, p *pipeline.Pipeline, f *fakeSQS, q pipeline.Queues) (*Redriver, *memStore, *ledger.Memory) {
	t.Helper()
	store := &memStore{}
	led := ledger.NewMemory()
	clock := &testClock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	r, err := New(Config{
		Pipeline: p, Queues: q, SQS: f, Ledger: led, Logger: quiet,
		Audit: &audit.Auditor{Store: store, Now: clock.get, Logger: quiet},
		Now:   func() time.Time { return clock.advance(10 * time.Millisecond) },
		Sleep: func(ctx context.Context, d time.Duration) error { clock.advance(d); return ctx.Err() },
	})
	if err != nil {
		t.Fatal(err)
	}
	r.tag = testTag
	return r, store, led
}

// testClock is a fake clock, safe for the concurrent moves of a select.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) get() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *testClock) advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return c.t
}

// acmeKey is the ledger key of tenant acme's task with idempotency key k on
// agent-tasks (the tests' letters are acme's).
func acmeKey(k string) string { return ledger.Key("agent-tasks", "acme", k) }
