// Package triagetest holds the dead letters and pipeline the tests of
// package triage and of its sub-packages (render, eval, the Lambda) share:
// a Fixture of sixteen letters of every kind, the helpers that build them,
// and a clock. It must not import package triage: triage's own tests
// import it (the caller passes triage.Tag to TagAll, and triage's tests
// check that Ledger is a triage.KeyReader).
package triagetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/triage/dlq"
	"github.com/agentdlq/agentdlq/triage/store"
)

// T0 is the fake clock's "now" in every test.
var T0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// Quiet discards the logs of a test.
var Quiet = slog.New(slog.DiscardHandler)

// Clock is a clock tests move by hand.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock at T0.
func NewClock() *Clock { return &Clock{now: T0} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Pipeline is a standard pipeline with the defaults applied:
// DLQ retention 336 h, warning window 48 h, eval threshold 3, tenant hashed.
func Pipeline(t testing.TB, fifo bool) *pipeline.Pipeline {
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

// Task is an agent task v1 body.
func Task(id, tenant, tool, version, args string) string {
	return fmt.Sprintf(`{"task_id":%q,"run_id":"run-%s","tenant":%q,"idempotency_key":"key-%s","tool":%q,"tool_version":%q,"trace_id":"trace-%s","created_at":"2026-11-20T10:00:00Z","schema_version":1,"args":%s}`,
		id, id, tenant, id, tool, version, id, args)
}

// DeadLetter is a message the worker dead-lettered itself, sent at sent.
func DeadLetter(t testing.TB, id, body string, m deadletter.Meta, sent time.Time) dlq.Message {
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

// BrokerMoved is a message the redrive policy moved (no dlq_* attributes).
func BrokerMoved(id, body string, sent time.Time) dlq.Message {
	return dlq.Message{MessageID: id, ReceiptHandle: "rh-" + id, Body: body, Attributes: map[string]deadletter.Attribute{}, SentTimestamp: sent, ReceiveCount: 5}
}

// PoisonMeta is the metadata of a dead letter the worker rejected.
func PoisonMeta(reason deadletter.Reason, tool, version, tenant, key, errText string) deadletter.Meta {
	return deadletter.Meta{
		Reason: reason, Attempts: 1, Error: errText, ErrorCode: "",
		FirstFailureAt: T0.Add(-time.Hour), LastFailureAt: T0.Add(-time.Hour),
		Tool: tool, ToolVersion: version, SchemaVersion: 1, Tenant: tenant, IdempotencyKey: key,
		WorkerVersion: "test", Effect: deadletter.EffectNone,
	}
}

// Ledger is a read-only ledger of fixed entries (a triage.KeyReader).
type Ledger map[string]ledger.Entry

// Get returns the entry of key, as a ledger does.
func (f Ledger) Get(_ context.Context, key string) (ledger.Entry, bool, error) {
	e, ok := f[key]
	if ok {
		e.Key = key
	}
	return e, ok, nil
}

// Fixture is a mixed DLQ: recurring and one-off poison, broker moves,
// loops, repeats, unreadable metadata, a non-UTF-8 body, and messages
// close to expiry. Returned in receive order.
func Fixture(t testing.TB) []dlq.Message {
	t.Helper()
	h := time.Hour
	var msgs []dlq.Message
	add := func(m dlq.Message) { msgs = append(msgs, m) }
	// Recurring schema_invalid on web.search v1: 4 messages, two of them the
	// same input (a producer retrying), one carrying secrets.
	si := func(id, tenant, body string, sent time.Time) {
		m := PoisonMeta(deadletter.ReasonSchemaInvalid, "web.search", "1", tenant, "key-"+id, "args.q: required field is missing in task "+id)
		add(DeadLetter(t, "si-"+id, body, m, sent))
	}
	same := Task("s1", "acme", "web.search", "1", `{"query":"weather"}`)
	si("1", "acme", same, T0.Add(-30*h))
	si("2", "acme", same, T0.Add(-20*h))
	si("3", "globex", Task("s3", "globex", "web.search", "1", `{"query":"mail ops@example.com","password":"hunter2","token":"sk-abcdefghijklmnopqrstuv"}`), T0.Add(-10*h))
	si("4", "initech", Task("s4", "initech", "web.search", "1", `{"query":"news"}`), T0.Add(-5*h))
	// One-off tool_unknown.
	add(DeadLetter(t, "tu-1", Task("u1", "acme", "web.crawl", "1", `{}`),
		PoisonMeta(deadletter.ReasonToolUnknown, "web.crawl", "1", "acme", "key-u1", `tool "web.crawl" is not in the catalog`), T0.Add(-3*h)))
	// Recurring json_invalid: bodies that are not JSON.
	for i, body := range []string{"{\"task_id\": 1,", "<xml>nope</xml> from ops@example.com", "{\"task_id\": 1,"} {
		m := PoisonMeta(deadletter.ReasonJSONInvalid, "", "", "", "", "the body is not a JSON object")
		m.SchemaVersion = 0
		add(DeadLetter(t, "ji-"+string(rune('1'+i)), body, m, T0.Add(-time.Duration(i+1)*h)))
	}
	// Broker moves (no metadata): one close to expiry (sent 320 h ago in the hot queue).
	add(BrokerMoved("rl-1", Task("r1", "acme", "code.exec", "1", `{"src":"loop"}`), T0.Add(-320*h)))
	add(BrokerMoved("rl-2", Task("r2", "globex", "code.exec", "1", `{"src":"loop"}`), T0.Add(-50*h)))
	// A redrive loop and a budget_exhausted key redriven twice already.
	loop := PoisonMeta(deadletter.ReasonRedriveLoop, "http.fetch", "1", "acme", "key-loop", "dead-lettered again after 2 redrives")
	loop.RedriveCount = 2
	add(DeadLetter(t, "loop-1", Task("l1", "acme", "http.fetch", "1", `{"url":"https://x.test"}`), loop, T0.Add(-2*h)))
	be := PoisonMeta(deadletter.ReasonBudgetExhausted, "http.fetch", "1", "acme", "key-be", "HTTP 503 from upstream after 4 receives")
	be.ErrorCode, be.RedriveCount, be.Attempts = "HTTP503", 2, 4
	add(DeadLetter(t, "be-1", Task("b1", "acme", "http.fetch", "1", `{"url":"https://y.test"}`), be, T0.Add(-4*h)))
	// The same key dead-lettered twice: effect_unknown on email.send.
	for i := range 2 {
		eu := PoisonMeta(deadletter.ReasonEffectUnknown, "email.send", "1", "initech", "key-mail", "timeout after the send started")
		eu.Effect = deadletter.EffectUnknown
		add(DeadLetter(t, "eu-"+string(rune('1'+i)), Task("e1", "initech", "email.send", "1", `{"to":"[hashed]"}`), eu, T0.Add(-time.Duration(6+i)*h)))
	}
	// Unreadable metadata: a version this build does not read.
	add(dlq.Message{MessageID: "bad-meta", Body: Task("x1", "acme", "sql.query", "1", `{}`), SentTimestamp: T0.Add(-h),
		Attributes: map[string]deadletter.Attribute{
			deadletter.AttrReason: {DataType: "String", StringValue: "schema_invalid"},
			deadletter.AttrMeta:   {DataType: "String", StringValue: `{"v":9,"reason":"schema_invalid"}`},
		}})
	// A body that is not UTF-8.
	add(BrokerMoved("not-utf8", "{\"tool\":\"\xff\xfe\"}", T0.Add(-100*h)))
	return msgs
}

// TagAll tags every message with tag (triage.Tag), as a scan's run does.
func TagAll(msgs []dlq.Message, tag func(dlq.Message) dlq.Tagged) []dlq.Tagged {
	out := make([]dlq.Tagged, len(msgs))
	for i, m := range msgs {
		out[i] = tag(m)
	}
	return out
}

// Many is n broker-moved letters, one a minute before T0.
func Many(n int) []dlq.Message {
	out := make([]dlq.Message, n)
	for i := range out {
		out[i] = BrokerMoved(fmt.Sprintf("m%04d", i), fmt.Sprintf(`{"n":%d}`, i), T0.Add(-time.Duration(i)*time.Minute))
	}
	return out
}

// RefusingDest is a folder that refuses to list or to write, as its
// switches say, with ErrRefused.
type RefusingDest struct {
	store.Folder
	RefuseList, RefusePut bool
}

// ErrRefused is what a RefusingDest answers.
var ErrRefused = errors.New("AccessDenied: not allowed")

// List refuses when RefuseList says so, else lists the folder.
func (d RefusingDest) List(ctx context.Context, prefix string) ([]string, error) {
	if d.RefuseList {
		return nil, ErrRefused
	}
	return d.Folder.List(ctx, prefix)
}

// Put refuses when RefusePut says so, else writes to the folder.
func (d RefusingDest) Put(ctx context.Context, key string, data []byte, ct string) error {
	if d.RefusePut {
		return ErrRefused
	}
	return d.Folder.Put(ctx, key, data, ct)
}

// ValidateReport checks a report's JSON against triage/report.schema.json.
func ValidateReport(t testing.TB, data []byte) error {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	schema, err := os.ReadFile(filepath.Join(filepath.Dir(here), "..", "..", "report.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource("report.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("report.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return err
	}
	return sch.Validate(v)
}
