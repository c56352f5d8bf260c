package triage

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/ledger"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./triage -run %s -update to create it", t.Name())
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs from the golden file (-want +got):\n%s", name, diff)
	}
}

// fixture is a mixed DLQ: recurring and one-off poison, broker moves,
// loops, repeats, unreadable metadata, a non-UTF-8 body, and messages
// close to expiry. Returned in receive order.
func fixture(t testing.TB) []Message {
	t.Helper()
	h := time.Hour
	var msgs []Message
	add := func(m Message) { msgs = append(msgs, m) }
	// Recurring schema_invalid on web.search v1: 4 messages, two of them the
	// same input (a producer retrying), one carrying secrets.
	si := func(id, tenant, body string, sent time.Time) {
		m := poisonMeta(deadletter.ReasonSchemaInvalid, "web.search", "1", tenant, "key-"+id, "args.q: required field is missing in task "+id)
		add(deadLetter(t, "si-"+id, body, m, sent))
	}
	same := task("s1", "acme", "web.search", "1", `{"query":"weather"}`)
	si("1", "acme", same, t0.Add(-30*h))
	si("2", "acme", same, t0.Add(-20*h))
	si("3", "globex", task("s3", "globex", "web.search", "1", `{"query":"mail ops@example.com","password":"hunter2","token":"sk-abcdefghijklmnopqrstuv"}`), t0.Add(-10*h))
	si("4", "initech", task("s4", "initech", "web.search", "1", `{"query":"news"}`), t0.Add(-5*h))
	// One-off tool_unknown.
	add(deadLetter(t, "tu-1", task("u1", "acme", "web.crawl", "1", `{}`),
		poisonMeta(deadletter.ReasonToolUnknown, "web.crawl", "1", "acme", "key-u1", `tool "web.crawl" is not in the catalog`), t0.Add(-3*h)))
	// Recurring json_invalid: bodies that are not JSON.
	for i, body := range []string{"{\"task_id\": 1,", "<xml>nope</xml> from ops@example.com", "{\"task_id\": 1,"} {
		m := poisonMeta(deadletter.ReasonJSONInvalid, "", "", "", "", "the body is not a JSON object")
		m.SchemaVersion = 0
		add(deadLetter(t, "ji-"+string(rune('1'+i)), body, m, t0.Add(-time.Duration(i+1)*h)))
	}
	// Broker moves (no metadata): one close to expiry (sent 320 h ago in the hot queue).
	add(brokerMoved("rl-1", task("r1", "acme", "code.exec", "1", `{"src":"loop"}`), t0.Add(-320*h)))
	add(brokerMoved("rl-2", task("r2", "globex", "code.exec", "1", `{"src":"loop"}`), t0.Add(-50*h)))
	// A redrive loop and a budget_exhausted key redriven twice already.
	loop := poisonMeta(deadletter.ReasonRedriveLoop, "http.fetch", "1", "acme", "key-loop", "dead-lettered again after 2 redrives")
	loop.RedriveCount = 2
	add(deadLetter(t, "loop-1", task("l1", "acme", "http.fetch", "1", `{"url":"https://x.test"}`), loop, t0.Add(-2*h)))
	be := poisonMeta(deadletter.ReasonBudgetExhausted, "http.fetch", "1", "acme", "key-be", "HTTP 503 from upstream after 4 receives")
	be.ErrorCode, be.RedriveCount, be.Attempts = "HTTP503", 2, 4
	add(deadLetter(t, "be-1", task("b1", "acme", "http.fetch", "1", `{"url":"https://y.test"}`), be, t0.Add(-4*h)))
	// The same key dead-lettered twice: effect_unknown on email.send.
	for i := range 2 {
		eu := poisonMeta(deadletter.ReasonEffectUnknown, "email.send", "1", "initech", "key-mail", "timeout after the send started")
		eu.Effect = deadletter.EffectUnknown
		add(deadLetter(t, "eu-"+string(rune('1'+i)), task("e1", "initech", "email.send", "1", `{"to":"[hashed]"}`), eu, t0.Add(-time.Duration(6+i)*h)))
	}
	// Unreadable metadata: a version this build does not read.
	add(Message{MessageID: "bad-meta", Body: task("x1", "acme", "sql.query", "1", `{}`), SentTimestamp: t0.Add(-h),
		Attributes: map[string]deadletter.Attribute{
			deadletter.AttrReason: {DataType: "String", StringValue: "schema_invalid"},
			deadletter.AttrMeta:   {DataType: "String", StringValue: `{"v":9,"reason":"schema_invalid"}`},
		}})
	// A body that is not UTF-8.
	add(brokerMoved("not-utf8", "{\"tool\":\"\xff\xfe\"}", t0.Add(-100*h)))
	return msgs
}

func TestBuildGroups(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, false)
	r := Build(tagAll(fixture(t), nil), p, t0)

	assert.Equal(t, 16, r.Totals.Messages)
	byReason := map[deadletter.Reason]int{}
	for _, rt := range r.Totals.ByReason {
		byReason[rt.Reason] = rt.Count
	}
	assert.Equal(t, map[deadletter.Reason]int{
		deadletter.ReasonSchemaInvalid: 5, deadletter.ReasonJSONInvalid: 3, deadletter.ReasonReceiveLimit: 3,
		deadletter.ReasonEffectUnknown: 2, deadletter.ReasonToolUnknown: 1, deadletter.ReasonRedriveLoop: 1,
		deadletter.ReasonBudgetExhausted: 1,
	}, byReason)
	assert.Equal(t, deadletter.ReasonSchemaInvalid, r.Totals.ByReason[0].Reason, "most messages first")
	assert.Equal(t, 3, r.Totals.Inferred, "3 receive_limit; the unreadable one keeps its dlq_reason")
	assert.Equal(t, 1, r.Totals.Unreadable)
	require.Len(t, r.Unreadable, 1)
	assert.Equal(t, "bad-meta", r.Unreadable[0].MessageID)
	assert.Contains(t, r.Unreadable[0].Problem, "version")
	require.Len(t, r.Skipped, 1)
	assert.Equal(t, "not-utf8", r.Skipped[0].MessageID)

	find := func(reason deadletter.Reason) Group {
		for _, g := range r.Groups {
			if g.Reason == reason {
				return g
			}
		}
		t.Fatalf("no group of %s", reason)
		return Group{}
	}
	si := find(deadletter.ReasonSchemaInvalid)
	assert.Equal(t, 4, si.Count, "ids and numbers in the error are stripped: one group")
	assert.Equal(t, "args.q: required field is missing in task <n>", si.Signature)
	assert.Equal(t, 3, si.TenantsAffected)
	assert.Len(t, si.Tenants, 3)
	for _, tn := range si.Tenants {
		assert.Regexp(t, `^sha256:[0-9a-f]{16}$`, tn, "tenants are hashed: eval.hash_fields names tenant")
	}
	assert.True(t, si.Recurring)
	assert.Equal(t, t0.Add(-30*time.Hour), si.FirstSeen)
	assert.Equal(t, t0.Add(-5*time.Hour), si.LastSeen)
	assert.Equal(t, deadletter.NextPatchAndRedrive, si.NextAction) // si is schema_invalid
	assert.Equal(t, deadletter.RedriveAfterFix, si.Redrivable)

	assert.False(t, find(deadletter.ReasonToolUnknown).Recurring, "one-off poison is not recurring")
	assert.True(t, find(deadletter.ReasonJSONInvalid).Recurring)
	assert.False(t, find(deadletter.ReasonReceiveLimit).Recurring, "receive_limit is not poison")

	assert.Equal(t, 1, find(deadletter.ReasonRedriveLoop).RedriveLoop)
	be := find(deadletter.ReasonBudgetExhausted)
	assert.Equal(t, 1, be.RedriveLoop, "redriven redrive_loop_after (2) times")
	assert.Equal(t, 1, be.RepeatKeys)
	assert.Equal(t, 2, be.MaxRedriveCount)
	assert.Equal(t, 1, find(deadletter.ReasonEffectUnknown).RepeatKeys, "one key, two dead letters")
	assert.Equal(t, 2, r.Totals.RedriveLoop)
	assert.Equal(t, 3, r.Totals.RepeatKeys, "key-loop, key-be, key-mail")
	assert.Equal(t, 2, r.Totals.RecurringPoisonGroups)

	assert.Equal(t, 1, r.Expiry.ExpiringSoon)
	assert.Equal(t, "rl-1", r.Expiry.SoonestMessageID)
	assert.Equal(t, t0.Add(16*time.Hour), r.Expiry.SoonestExpiry)
}

func TestBuildTenantsListedWhenNotHashed(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, false)
	p.Eval.HashFields = nil
	r := Build(tagAll(fixture(t), nil), p, t0)
	assert.Equal(t, []string{"acme", "globex", "initech"}, r.Groups[0].Tenants)
}

func TestBuildWithLedger(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, false)
	msgs := []Message{deadLetter(t, "a", "{}", poisonMeta(deadletter.ReasonBudgetExhausted, "http.fetch", "1", "acme", "key-a", "503"), t0)}
	tagged := tagAll(msgs, nil)
	l := fakeLedger{ledger.Key(p.Name, "acme", "key-a"): {DeadLetterCount: 3, RedriveCount: 1}}
	n, err := lookupLedger(t.Context(), p.Name, tagged, l)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	r := Build(tagged, p, t0)
	assert.Equal(t, 1, r.Groups[0].RepeatKeys, "dead-lettered 3 times per the ledger")
	assert.Equal(t, 3, r.Groups[0].MaxDeadLetterCount)
	assert.Equal(t, 0, r.Groups[0].RedriveLoop, "1 redrive is below redrive_loop_after")
}

// TestReportGolden pins the JSON form of a report (triage/render's
// TestReportGolden the terminal and Markdown forms of the same report).
func TestReportGolden(t *testing.T) {
	t.Parallel()
	r := Build(tagAll(fixture(t), nil), testPipeline(t, false), t0)
	r.Queue = "http://127.0.0.1:4566/000000000000/agent-tasks-dlq"
	r.Scan = ScanStats{Queue: r.Queue, ApproxDepth: 16, Receives: 3, EmptyReceives: 1, Received: 16, Unique: 16, Released: 16,
		Receivers: 1, VisibilityTimeoutSeconds: 30, StartedAt: t0.Add(-2 * time.Second), DurationSeconds: 2, MessagesPerSecond: 8, StopReason: stopEmpty}

	data, err := json.MarshalIndent(r, "", "  ")
	require.NoError(t, err)
	golden(t, "report.json.golden", append(data, '\n'))

	// The JSON form is versioned and round-trips.
	var back map[string]any
	require.NoError(t, json.Unmarshal(data, &back))
	assert.EqualValues(t, reportVersion, back["report_version"])
}

// TestEffectUnknownKeys: an effect_unknown group lists its distinct keys,
// sorted, at most maxKeysListed, counting the rest (the CLI's triage --keys
// prints them); other groups list none.
func TestEffectUnknownKeys(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, false)
	var tagged []Tagged
	add := func(reason deadletter.Reason, key string) {
		tagged = append(tagged, Tagged{Message: Message{MessageID: fmt.Sprintf("m%d", len(tagged))}, Reason: reason, Fingerprint: "fp-" + string(reason),
			Hints: Hints{IdempotencyKey: key}})
	}
	for i := range maxKeysListed + 2 {
		add(deadletter.ReasonEffectUnknown, fmt.Sprintf("k%05d", maxKeysListed+1-i)) // reverse order
	}
	add(deadletter.ReasonEffectUnknown, "k00001") // a key twice
	add(deadletter.ReasonEffectUnknown, "")       // no key
	add(deadletter.ReasonBudgetExhausted, "be-1")
	r := Build(tagged, p, t0)
	var keys []string
	omitted := 0
	for _, g := range r.Groups {
		if g.Reason == deadletter.ReasonEffectUnknown {
			keys, omitted = g.IdempotencyKeys, g.IdempotencyKeysOmitted
		}
	}
	require.Len(t, keys, maxKeysListed)
	assert.Equal(t, 2, omitted, "%d distinct keys, %d listed", maxKeysListed+2, maxKeysListed)
	assert.Equal(t, "k00000", keys[0])
	assert.True(t, sort.StringsAreSorted(keys))
	for _, g := range r.Groups {
		if g.Reason != deadletter.ReasonEffectUnknown && g.Reason != deadletter.ReasonIdempotencyKeyReused {
			assert.Empty(t, g.IdempotencyKeys, "only effect_unknown and idempotency_key_reused groups list their keys")
		}
	}
}

// TestKeyReused: reused keys make one security group per tool and error
// signature (the digests in the error text are normalised away), list
// their keys (not as effect_unknown keys: they are not reconciled), say
// never to redrive, and put a line under Attention.
func TestKeyReused(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, false)
	var msgs []Tagged
	for i, key := range []string{"acme:run-1:t1", "acme:run-2:t7", "acme:run-1:t1"} {
		m := poisonMeta(deadletter.ReasonIdempotencyKeyReused, "email.send", "1", "acme", key,
			fmt.Sprintf("security: ledger: idempotency key reused with other args: the ledger holds the key with args digest jcs-sha256:%012x…, this task's is jcs-sha256:%012x…", 1000+i, 2000+i))
		msgs = append(msgs, Tag(deadLetter(t, fmt.Sprintf("m%d", i), task(fmt.Sprintf("t%d", i), "acme", "email.send", "1", `{"to":["x@example.com"]}`), m, t0.Add(-time.Hour))))
	}
	r := Build(msgs, p, t0)
	require.Len(t, r.Groups, 1, "one group: the digests differ, the signature does not")
	g := r.Groups[0]
	assert.Equal(t, deadletter.ClassSecurity, g.Class)
	assert.Equal(t, deadletter.NextReject, g.NextAction, "never run under its key: reject (issue 29: was human_review, which plan contradicted)")
	assert.Equal(t, deadletter.RedriveNever, g.Redrivable)
	assert.Equal(t, []string{"acme:run-1:t1", "acme:run-2:t7"}, g.IdempotencyKeys)
	assert.False(t, g.Recurring, "not an eval candidate: the task is fine, its key is not")
	var line string
	for _, a := range r.Attention {
		if strings.Contains(a, "idempotency_key_reused") {
			line = a
		}
	}
	assert.Contains(t, line, "3 messages idempotency_key_reused")
	assert.Contains(t, line, "none ran")
}
