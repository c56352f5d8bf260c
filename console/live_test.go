package console

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/redrive"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
	"github.com/agentdlq/agentdlq/testkit/sqsfake"
	"github.com/agentdlq/agentdlq/triage/dlq"
)

// The pages render from a report; beside it they say what the DLQ holds
// now (its queue attributes) and how old the report is, and, when the two
// differ, that the report is older than the queue: a kept report of 8
// letters beside a DLQ of 6 was shown as the queue, with only "1m ago"
// to hint at it.
func TestLiveCountBesideTheReport(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 8)
	f.s.cfg.Now = func() time.Time { return t0.Add(3 * time.Minute) }
	g := f.r.Groups[0]
	pages := []string{"/pipeline?p=agent-tasks", "/group?p=agent-tasks&r=" + string(g.Reason) + "&fp=" + g.Fingerprint,
		"/redrive?p=agent-tasks&r=" + string(g.Reason), "/redrive?p=agent-tasks"}
	for _, path := range pages {
		body := f.get(t, path).Body.String()
		assert.Contains(t, body, `<p class="sub" id="live">Live: the DLQ holds <b id="live-count">8</b> now, as this report counted 3m ago.</p>`, path)
		assert.NotContains(t, body, "older than the queue", path)
	}
	assert.NotContains(t, f.get(t, "/").Body.String(), "older than the queue")

	f.s.cfg.SQS.(*sqsfake.Fake).Queue("http://q/dlq").Attributes["ApproximateNumberOfMessages"] = "6" // two redriven, say, by the CLI
	for _, path := range pages {
		body := f.get(t, path).Body.String()
		assert.Contains(t, body, "<b>This report is older than the queue.</b> It counted 8 dead letters 3m ago ("+t0.Format("2006-01-02 15:04:05Z")+"); the DLQ holds <b id=\"live-count\">6</b> now.", path)
	}

	assert.Contains(t, f.get(t, "/").Body.String(), `<div class="sig" id="stale-agent-tasks">counted 8: older than the queue</div>`, "the overview says so too")

	// A report read from the kept reports (no letters in memory) says so.
	f.s.mu.Lock()
	sn := *f.s.snaps["agent-tasks"]
	sn.letters = nil
	f.s.snaps["agent-tasks"] = &sn
	f.s.mu.Unlock()
	assert.Contains(t, f.get(t, "/pipeline?p=agent-tasks").Body.String(), "3m ago ("+t0.Format("2006-01-02 15:04:05Z")+", read from the kept reports)")
}

// The letter page shows the tool, versions and ids its group shows: where
// the worker dead-lettered a task before reading it (its dlq_meta names no
// tool), from the body, as triage groups it; and it says in words what
// the DLQ's receive count and the retention clock are.
func TestLetterShowsItsGroupsIDs(t *testing.T) {
	t.Parallel()
	at := t0.Add(-time.Minute)
	reason := deadletter.ReasonToolVersionUnsupported
	m := deadletter.Meta{Version: deadletter.MetaVersion, Class: reason.Class(), Reason: reason, NextAction: reason.NextAction(), Attempts: 1,
		FirstFailureAt: at, LastFailureAt: at, ErrorCode: "tool_version", Error: "http.fetch@9 is not served by this worker", DeadLetteredAt: at}
	attrs, err := deadletter.EncodeDeadLetter(m, nil)
	require.NoError(t, err)
	b := `{"task_id":"task-k1","run_id":"run-9","tenant":"acme","idempotency_key":"k1","tool":"http.fetch","tool_version":"9","trace_id":"trace-k1","schema_version":1,"args":{}}`
	f := newFixtureOf(t, []dlq.Message{{MessageID: "m-1", Body: b, Attributes: attrs, SentTimestamp: at, ReceiveCount: 33}})
	g := f.r.Groups[0]
	require.Equal(t, "http.fetch", g.Tool, "triage groups it by the body's tool")

	body := f.get(t, "/letter?p=agent-tasks&id=m-1").Body.String()
	assert.Contains(t, body, `<dd id="tool">http.fetch@9 · schema v1</dd>`)
	assert.Contains(t, body, `<dd class="mono" id="key">k1</dd>`)
	assert.Contains(t, body, "task-k1 / run-9")
	assert.Contains(t, body, "trace-k1")
	assert.Contains(t, body, "tool, tool version, schema version, task id, run id, idempotency key, trace id: read from the body")
	assert.NotContains(t, body, "schema v0")
	assert.Contains(t, body, "SQS has handed it out 33 times from the DLQ")
	assert.Contains(t, body, "the DLQ's retention clock is counted from when the worker sent it to the DLQ")
	assert.NotContains(t, body, "worker_send clock")
	assert.Contains(t, body, "tool_<wbr>version_<wbr>unsupported", "the reason card breaks between words")

	// A letter whose metadata names them shows the metadata's, and says nothing of the body.
	f = newFixture(t, 1)
	body = f.get(t, "/letter?p=agent-tasks&id=m-000000").Body.String()
	assert.Contains(t, body, `<dd id="tool">web.search@1.2.0 · schema v1</dd>`)
	assert.NotContains(t, body, `id="from-body"`)
}

// A refused redrive moved nothing and never started: its page shows the
// refusal, not an empty "0 of 2 moved" bar above it; a redrive that ran
// shows its bar.
func TestRefusedJobShowsNoProgressBar(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 3)
	rf := &redrive.Refusal{Code: redrivetype.CodeOwner, Reason: "mallory is not the owner"}
	add := func(j *Job) string {
		f.s.mu.Lock()
		f.s.jobs[j.ID] = j
		f.s.mu.Unlock()
		return f.get(t, "/job?id="+j.ID).Body.String()
	}
	body := add(&Job{ID: "j-refused", Kind: "redrive", Pipeline: "agent-tasks", Started: t0, done: true, total: 2, err: fmt.Errorf("redrive: %w", rf)})
	assert.Contains(t, body, "<b>Refused</b> ("+redrivetype.CodeOwner+")")
	assert.NotContains(t, body, `id="progress"`)
	assert.NotContains(t, body, "<progress")

	body = add(&Job{ID: "j-ran", Kind: "redrive", Pipeline: "agent-tasks", Started: t0, done: true, total: 2, count: 2,
		result: &redrive.SelectResult{Seen: 2, Matched: 2, Moved: 2}})
	assert.Contains(t, body, `<div class="big" id="progress">2 of 2 moved</div>`)
}
