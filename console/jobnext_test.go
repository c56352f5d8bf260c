package console

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/redrive"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
)

// A refused redrive's job shows the refusal's next steps as links to the
// forms that take them (the library returns them as data).
func TestJobViewRefusalNext(t *testing.T) {
	rf := &redrive.Refusal{Code: redrivetype.CodeForbidden, Reason: "schema_invalid needs the deployed fix",
		Next: []redrivetype.Step{{Action: audit.ActionSelect, Reason: deadletter.ReasonSchemaInvalid, Fingerprint: "fp1", Canary: 2, Needs: []string{"Ack.FixDeployed"}}}}
	j := &Job{ID: "j1", Kind: "redrive", Pipeline: "agent-tasks", err: fmt.Errorf("redrive: %w", rf)}
	v := j.view()
	assert.True(t, v.Refused)
	require.Len(t, v.Next, 1)
	assert.Equal(t, "/redrive?fp=fp1&p=agent-tasks&r=schema_invalid", v.Next[0].Href)
	assert.Contains(t, v.Next[0].Label, "the deployed fix")

	j = &Job{ID: "j2", Kind: "redrive", Pipeline: "agent-tasks", err: fmt.Errorf("plain failure")}
	assert.Empty(t, j.view().Next)
}

// A redrive's page says how many letters it left in the DLQ because the
// worker dead-lettered them again while the run went on (never moved twice
// by one run): without it, "Done: 3 moved" sat beside a DLQ that still
// held them, unexplained.
func TestJobPageShowsTheLettersReturned(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 3)
	j := &Job{ID: "j-returned", Kind: "redrive", Pipeline: "agent-tasks", Started: t0, done: true,
		result: &redrive.SelectResult{Seen: 3, Matched: 3, Moved: 3, Returned: 2}}
	f.s.mu.Lock()
	f.s.jobs[j.ID] = j
	f.s.mu.Unlock()
	body := f.get(t, "/job?id=j-returned").Body.String()
	assert.Contains(t, body, "<dt>dead-lettered again, left in the DLQ</dt><dd>2</dd>")

	j.result.Returned = 0
	assert.NotContains(t, f.get(t, "/job?id=j-returned").Body.String(), "dead-lettered again, left")
}

// A dry run's page says its counts as the CLI does, against the DLQ's
// depth: no bare "released 15" (every letter of a dry run is released).
func TestJobPageSaysCountsAgainstTheDepth(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 3)
	j := &Job{ID: "j-dry", Kind: "dry_run", Pipeline: "agent-tasks", Started: t0, done: true,
		result: &redrive.SelectResult{DryRun: true, Seen: 15, Matched: 4, WouldMove: 4, Released: 15, DepthAtStart: 15}}
	f.s.mu.Lock()
	f.s.jobs[j.ID] = j
	f.s.mu.Unlock()
	body := f.get(t, "/job?id=j-dry").Body.String()
	assert.Contains(t, body, "would move 4 (a dry run: nothing moved); 11 seen and left in the DLQ (not chosen); the DLQ held 15 when the pass began")
	assert.NotContains(t, body, "released")
}

// The redrive form starts from the plan's canary, as the plan's command
// line says it (redrive.SuggestedCanary): never the whole group, and the
// same number the plan prints above the form.
func TestRedriveFormCanaryIsThePlans(t *testing.T) {
	t.Parallel()
	for _, n := range []int{4, 100} {
		f := newFixture(t, n)
		g := f.r.Groups[0]
		body := f.get(t, "/redrive?p=agent-tasks&r="+string(g.Reason)+"&fp="+g.Fingerprint).Body.String()
		want := redrive.SuggestedCanary(g.Count)
		assert.Contains(t, body, fmt.Sprintf(`name="canary" type="number" min="0" value="%d"`, want), "n=%d", n)
		if g.Count > 1 {
			assert.Less(t, want, g.Count)
		}
		if n == 100 {
			assert.Greater(t, want, 1, "a group of %d: more than the old default of 1", g.Count)
		}
	}
}

// The audit page says a select's counts in the job page's words: no bare
// "released" (what the pass left in the DLQ) or "matched" (chosen).
func TestAuditCountsInWords(t *testing.T) {
	t.Parallel()
	got := countsLine(map[string]int{"seen": 15, "matched": 4, "moved": 0, "released": 15})
	assert.Equal(t, "chosen 4, moved 0, left in the DLQ 15, seen 15", got)
}
