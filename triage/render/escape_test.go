package render

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/internal/textutil"
	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/report"
)

// forged is what a producer can put in a tool name and an error text: a
// screen clear, an OSC 8 hyperlink, an OSC 52 clipboard write, a line
// break, a Markdown link, HTML and a bidi override.
const forgedTool = "web.search\x1b[2J\x1b]52;c;ZXZpbA==\x07"
const forgedSig = "boom\n| fake_reason | 999 |\x1b]8;;http://evil.example\x1b\\here\x1b]8;;\x1b\\ [click me](http://evil.example) <img src=x> task-\u202egnp.exe"

func hostileReport(t *testing.T) *report.Report {
	t.Helper()
	r := triage.Build(tagAll(fixture(t)), testPipeline(t, false), t0)
	for i := range r.Groups {
		if r.Groups[i].Tool != "" {
			r.Groups[i].Tool = forgedTool + strings.Repeat("x", 128)
			r.Groups[i].Signature = forgedSig
		}
	}
	r.Attention = append(r.Attention, "tool "+forgedTool+" failed: "+forgedSig)
	return r
}

// rawControl is the first control, bidi control or invalid byte in s that
// is not one of keep.
func rawControl(s, keep string) (rune, bool) {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || (textutil.IsControl(r) && !strings.ContainsRune(keep, r)) {
			return r, true
		}
		i += size
	}
	return 0, false
}

// TestTextFacesEscape: no face of the report carries a producer's control
// or bidi character, a table row stays one row, and Markdown has no link.
func TestTextFacesEscape(t *testing.T) {
	t.Parallel()
	r := hostileReport(t)
	var text, mdown, page bytes.Buffer
	require.NoError(t, Text(&text, r))
	require.NoError(t, Markdown(&mdown, r))
	require.NoError(t, HTML(&page, r, nil))

	for name, out := range map[string]string{"text": text.String(), "markdown": mdown.String(), "html": page.String()} {
		if c, ok := rawControl(out, "\n"); ok {
			t.Errorf("%s holds a raw %U", name, c)
		}
		assert.Contains(t, out, `\u202egnp.exe`, name)
		assert.Contains(t, out, `\x1b`, name)
		assert.NotContains(t, out, "\nfake_reason", name)
		assert.NotContains(t, out, "\n| fake_reason", name)
	}
	// Every group row is one line: the row's text and its count together.
	for _, l := range strings.Split(text.String(), "\n") {
		if strings.Contains(l, "web.search") && !strings.Contains(l, "Attention") && !strings.HasPrefix(l, "  !") {
			assert.Regexp(t, `fake_reason \| 999 \|.*\s\d+\s`, l, "the group's count is on its row")
		}
	}
	md := mdown.String()
	assert.NotRegexp(t, regexp.MustCompile(`[^\\]\[click me[^\\]*[^\\]\]\(`), md, "a live Markdown link")
	assert.NotContains(t, md, "<img")
	assert.NotContains(t, md, "http://evil", "an autolink")
	assert.Contains(t, md, `\[click me\](http:\/\/evil.example)`)
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "| ↳") {
			assert.Equal(t, 7, cellPipes(l), "a group row keeps its six cells: %s", l)
		}
	}
	html := page.String()
	assert.NotContains(t, html, "<img src=x>")
	assert.Contains(t, html, "overflow-wrap:anywhere;word-break:break-word", "long tokens wrap in the table")
	assert.Contains(t, html, `<span class="badge tool">`)
}

// TestHTMLBidiOnly: a bidi control alone (no other control) is shown
// escaped in the page; html/template would pass it.
func TestHTMLBidiOnly(t *testing.T) {
	t.Parallel()
	r := triage.Build(tagAll(fixture(t)), testPipeline(t, false), t0)
	for i := range r.Groups {
		r.Groups[i].Signature = "task-\u202egnp.exe"
	}
	var page bytes.Buffer
	require.NoError(t, HTML(&page, r, nil))
	assert.NotContains(t, page.String(), "\u202e")
	assert.Contains(t, page.String(), `task-\u202egnp.exe`)
	_ = deadletter.ReasonSchemaInvalid
}

// cellPipes counts the |s of a Markdown table line that delimit cells (not
// escaped by an odd run of backslashes).
func cellPipes(l string) int {
	n, bs := 0, 0
	for i := 0; i < len(l); i++ {
		switch l[i] {
		case '\\':
			bs++
			continue
		case '|':
			if bs%2 == 0 {
				n++
			}
		}
		bs = 0
	}
	return n
}
