package console

import (
	"fmt"
	"html/template"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/redrive"
	"github.com/agentdlq/agentdlq/triage/dlq"
	"github.com/agentdlq/agentdlq/triage/report"
)

// TestEveryReaderFollowsTheOnePolicy checks, for every reason, that what
// triage tags, what redrive's plan says, what the console's letter page
// offers and what docs/reasons.md says all come from the one policy
// (deadletter.ReasonInfo): the next action, whether it may be redriven
// as it is, and whether a patch of its args may repair it (the console
// shows the Repair form exactly there; redrive's TestRepairFollowsThePolicy
// checks that `redrive repair` refuses the others).
func TestEveryReaderFollowsTheOnePolicy(t *testing.T) {
	t.Parallel()
	var msgs []dlq.Message
	for i, r := range deadletter.AllReasons() {
		key := fmt.Sprintf("pol-%02d", i)
		m := dlq.Message{MessageID: "m-" + string(r), Body: body(key, "web.search", "tenant-1"), SentTimestamp: t0.Add(-time.Hour)}
		if r != deadletter.ReasonReceiveLimit { // inferred: the broker moved it, no worker metadata
			attrs, err := deadletter.EncodeDeadLetter(deadletter.Meta{Reason: r, Attempts: 1, Error: "failed: " + string(r), IdempotencyKey: key,
				MessageID: "orig-" + key, Tool: "web.search", ToolVersion: "1.2.0", Tenant: "tenant-1", DeadLetteredAt: t0.Add(-time.Hour)}, nil)
			require.NoError(t, err)
			m.Attributes = attrs
		} else {
			m.ReceiveCount = 5
		}
		msgs = append(msgs, m)
	}
	f := newFixtureOf(t, msgs)
	docs, err := os.ReadFile("../docs/reasons.md")
	require.NoError(t, err)

	for _, r := range deadletter.AllReasons() {
		t.Run(string(r), func(t *testing.T) {
			info, ok := r.Info()
			require.True(t, ok)

			// triage: the tag and the report's group.
			var g *report.Group
			for i := range f.r.Groups {
				if f.r.Groups[i].Reason == r {
					g = &f.r.Groups[i]
				}
			}
			require.NotNil(t, g, "triage tags a letter of %s as %s", r, r)
			assert.Equal(t, info.Next, g.NextAction, "triage's next action")
			assert.Equal(t, info.Redrivable, g.Redrivable, "triage's redrivable")

			// redrive's plan: may it redrive, and what instead.
			v := redrive.Decide(r, redrive.Ack{})
			assert.Equal(t, info.Redrivable == deadletter.RedriveYes, v.Allowed, "plan: redriven by policy alone")
			switch info.Next {
			case deadletter.NextReject:
				assert.Contains(t, v.Why, "reject it", "plan says reject, as triage does")
				assert.NotContains(t, v.Why, "repair", "plan offers no patch of a rejected reason")
			case deadletter.NextPatchAndRedrive:
				if info.Redrivable == deadletter.RedriveNever {
					assert.Contains(t, v.Why, "redrive repair", "plan names the patch where it is the way on")
				}
			}
			page := f.get(t, "/redrive?p=agent-tasks&r="+string(r)).Body.String()
			assert.Contains(t, page, `<td data-k="next action">`+string(info.Next)+`</td>`, "the plan's next action")

			// The console's letter page: the patch form where a patch may repair it.
			letter := f.get(t, "/letter?p=agent-tasks&id=m-"+string(r)).Body.String()
			if info.Patchable {
				assert.Contains(t, letter, `id="repair"`, "the Repair form")
				assert.Contains(t, letter, `action="/repair"`, "the Repair form")
			} else {
				assert.NotContains(t, letter, `id="repair"`, "no Repair form")
				assert.NotContains(t, letter, `action="/repair"`, "no Repair form")
				assert.Contains(t, letter, "Next: "+string(info.Next))
				assert.Contains(t, letter, template.HTMLEscapeString(info.Next.Describe()))
			}

			// docs/reasons.md's row.
			patch := map[bool]string{true: "yes", false: "no"}[info.Patchable]
			row := fmt.Sprintf("| `%s` | %s | ", r, info.Class)
			i := strings.Index(string(docs), row)
			require.GreaterOrEqual(t, i, 0, "docs/reasons.md has a row for %s", r)
			line := string(docs[i : i+strings.IndexByte(string(docs[i:]), '\n')])
			assert.Contains(t, line, fmt.Sprintf(" | %s | %s | %s | ", info.Next, info.Redrivable, patch), "docs/reasons.md says the same")
		})
	}
}
