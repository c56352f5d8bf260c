package console

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/internal/textutil"
	"github.com/agentdlq/agentdlq/triage/dlq"
)

// hostile is what a producer writes into a tool name, an error, a key and
// an attribute: a terminal escape, a line break, a Markdown link and a
// bidi override (html/template escapes the HTML, not these).
const hostile = "\x1b[2J[click me](http://evil.example)\nrow\u202egnp.exe"

// hostileLetter is a dead letter as the worker writes one, with every
// field of the task (tool) and the error text given.
func hostileLetter(t testing.TB, id, tool, errText string) dlq.Message {
	t.Helper()
	at := t0.Add(-time.Minute)
	reason := deadletter.ReasonUnclassified
	m := deadletter.Meta{
		Version: deadletter.MetaVersion, Class: reason.Class(), Reason: reason, NextAction: reason.NextAction(), Attempts: 1,
		FirstFailureAt: at, LastFailureAt: at, Error: errText, DeadLetteredAt: at, TaskID: "task-" + id, RunID: "run-1",
		Tenant: "t", Tool: tool, ToolVersion: "1.0.0", SchemaVersion: 1, IdempotencyKey: "key-" + id + strings.Repeat("k", 200), TraceID: "trace",
	}
	attrs, err := deadletter.EncodeDeadLetter(m, nil)
	require.NoError(t, err)
	return dlq.Message{MessageID: id, Body: body("key-"+id, tool, "t"), Attributes: attrs, SentTimestamp: at}
}

// TestLongTokensWrap: in Chromium, a 128-character tool name and a long
// error token without a space wrap inside the reason's card, the group's
// and the letter's: no table is wider than the card that holds it.
func TestLongTokensWrap(t *testing.T) {
	bin := chromium(t)
	tool := strings.Repeat("t", 124) + ".run"
	f := newFixtureOf(t, []dlq.Message{hostileLetter(t, "m-long", tool, "boom:"+strings.Repeat("x", 300))})
	ts := httptest.NewServer(f.s)
	defer ts.Close()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.WindowSize(1280, 800), chromedp.Flag("hide-scrollbars", true))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelA()
	bctx, cancelC := chromedp.NewContext(actx)
	defer cancelC()
	require.NoError(t, chromedp.Do(bctx, chromedp.EmulateViewport(1280, 800)), "start Chromium")
	ctx, cancel := context.WithTimeout(bctx, 2*time.Minute)
	defer cancel()
	g := f.r.Groups[0]
	// overflow lists each table or card wider than its card, by how much.
	const overflow = `Array.from(document.querySelectorAll("section.reason, .card")).flatMap(c => {
		const box = c.getBoundingClientRect();
		return Array.from(c.querySelectorAll("table, .badge, dd, .sig")).filter(e => e.getBoundingClientRect().right > box.right + 1)
			.map(e => e.tagName + "." + e.className + " overflows by " + Math.round(e.getBoundingClientRect().right - box.right) + "px");
	})`
	for _, path := range []string{"/pipeline?p=agent-tasks", "/group?p=agent-tasks&r=" + string(g.Reason) + "&fp=" + g.Fingerprint, "/letter?p=agent-tasks&id=m-long"} {
		for _, width := range []int64{1280, 900, 390} {
			require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(width, 800), chromedp.Navigate(ts.URL+path+"&token="+f.s.Token()), chromedp.WaitReady(chromedp.CSS("main"))), path)
			got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](overflow))
			require.NoError(t, err, path)
			assert.Empty(t, got, "%s at %dpx: a long token pushes past its card", path, width)
			body, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth <= window.innerWidth + 1`))
			require.NoError(t, err)
			assert.True(t, body, "%s at %dpx: the page scrolls sideways", path, width)
		}
	}
}

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
	f := newFixtureOf(t, []dlq.Message{{MessageID: "m-hostile", Body: `{"q":"body` + strings.ReplaceAll(hostile, "\n", `\n`) + `","raw":"` + "\u202e" + `"}`, Attributes: attrs, SentTimestamp: at}})
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
