package console

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/internal/textutil"
	"github.com/agentdlq/agentdlq/triage"
)

// hostile is what a producer writes into a tool name, an error, a key and
// an attribute: a terminal escape, a line break, a Markdown link and a
// bidi override (html/template escapes the HTML, not these).
const hostile = "\x1b[2J[click me](http://evil.example)\nrow\u202egnp.exe"

// TestPagesEscapeControls: the group and letter pages show a producer's
// control and bidi characters escaped, in every field they print.
func TestPagesEscapeControls(t *testing.T) {
	t.Parallel()
	at := t0.Add(-time.Minute)
	reason := deadletter.ReasonUnclassified
	m := deadletter.Meta{
		Version: deadletter.MetaVersion, Class: reason.Class(), Reason: reason, NextAction: reason.NextAction(), Attempts: 1,
		FirstFailureAt: at, LastFailureAt: at, ErrorCode: "e" + hostile, Error: "boom " + hostile,
		History:        []deadletter.Attempt{{Receive: 1, At: at, Class: reason.Class(), Error: "boom " + hostile}},
		DeadLetteredAt: at, TaskID: "task" + hostile, RunID: "run" + hostile, Tenant: "tenant" + hostile, Tool: "tool" + hostile + strings.Repeat("x", 100),
		ToolVersion: "1" + hostile, SchemaVersion: 1, IdempotencyKey: "key" + hostile, TraceID: "trace" + hostile,
	}
	attrs, err := deadletter.EncodeDeadLetter(m, map[string]deadletter.Attribute{"note": {DataType: "String", StringValue: "attr" + hostile}})
	require.NoError(t, err)
	f := newFixtureOf(t, []triage.Message{{MessageID: "m-hostile", Body: `{"q":"body` + strings.ReplaceAll(hostile, "\n", `\n`) + `","raw":"` + "\u202e" + `"}`, Attributes: attrs, SentTimestamp: at}})
	require.Len(t, f.r.Groups, 1)
	g := f.r.Groups[0]
	for _, path := range []string{"/letter?p=agent-tasks&id=m-hostile", "/group?p=agent-tasks&r=" + string(g.Reason) + "&fp=" + g.Fingerprint, "/pipeline?p=agent-tasks"} {
		w := f.get(t, path)
		require.Equal(t, 200, w.Code, path)
		page := w.Body.String()
		for i := 0; i < len(page); {
			r, size := utf8.DecodeRuneInString(page[i:])
			if textutil.IsControl(r) && r != '\n' && r != '\t' {
				t.Errorf("%s: a raw %U at %d: %q", path, r, i, page[max(0, i-40):min(len(page), i+40)])
				break
			}
			i += size
		}
		assert.Contains(t, page, `\u202egnp.exe`, path)
		assert.Contains(t, page, `\x1b[2J`, path)
		assert.NotContains(t, page, `href="http://evil.example"`, path)
	}
	letter := f.get(t, "/letter?p=agent-tasks&id=m-hostile").Body.String()
	for _, want := range []string{`key\x1b[2J`, `attr\x1b[2J`, `boom \x1b[2J`} {
		assert.Contains(t, letter, want)
	}
}
