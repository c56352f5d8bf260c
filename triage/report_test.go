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
	"github.com/agentdlq/agentdlq/triage/dlq"
	"github.com/agentdlq/agentdlq/triage/report"
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

	find := func(reason deadletter.Reason) report.Group {
		for _, g := range r.Groups {
			if g.Reason == reason {
				return g
			}
		}
		t.Fatalf("no group of %s", reason)
		return report.Group{}
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
	msgs := []dlq.Message{deadLetter(t, "a", "{}", poisonMeta(deadletter.ReasonBudgetExhausted, "http.fetch", "1", "acme", "key-a", "503"), t0)}
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
	r.Scan = report.ScanStats{Queue: r.Queue, ApproxDepth: 16, Receives: 3, EmptyReceives: 1, Received: 16, Unique: 16, Released: 16,
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
	var tagged []dlq.Tagged
	add := func(reason deadletter.Reason, key string) {
		tagged = append(tagged, dlq.Tagged{Message: dlq.Message{MessageID: fmt.Sprintf("m%d", len(tagged))}, Reason: reason, Fingerprint: "fp-" + string(reason),
			Hints: dlq.Hints{IdempotencyKey: key}})
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
	var msgs []dlq.Tagged
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
