package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/internal/textutil"
	"github.com/agentdlq/agentdlq/triage/dlq"
	"github.com/agentdlq/agentdlq/triage/report"
)

// forged is what a producer can put in a key, a tool name or an error: a
// screen clear, an OSC 52 clipboard write, a line break that makes a second
// key (a victim's), a Markdown link and a bidi override.
const forged = "mallory\x1b[2J\x1b]52;c;ZXZpbA==\x07\nacme:run-0042:task-0007 [click me](http://evil.example) task-\u202egnp.exe"

// rawControl reports the first control, bidi control or invalid byte of s
// that is not in keep.
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

func keysReport(keys ...string) *report.Report {
	return &report.Report{Pipeline: "agent-tasks", Groups: []report.Group{{Reason: deadletter.ReasonEffectUnknown, IdempotencyKeys: keys}}}
}

// TestPrintKeysForms: the plain form never prints a key as two nor drives
// the terminal, and says on stderr that it escaped; --keys0 and -o json give
// each key back exactly; --keys0 leaves out (and fails on) a key with a NUL.
func TestPrintKeysForms(t *testing.T) {
	t.Parallel()
	keys := []string{"acme:run-1:task-1", forged, `back\slash 'quote' $(rm -rf /) "dq"`}
	r := keysReport(keys...)

	var out, errb bytes.Buffer
	require.NoError(t, printKeys(&out, &errb, r, keysPlain))
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	assert.Len(t, lines, 3, "three keys, three lines: %q", out.String())
	assert.NotContains(t, lines, "acme:run-0042:task-0007 [click me](http://evil.example) task-\u202egnp.exe", "the forged key's second half is no key of its own")
	_, raw := rawControl(out.String(), "\n")
	assert.False(t, raw, "plain keys hold no control: %q", out.String())
	assert.Contains(t, out.String(), `mallory\x1b[2J\x1b]52;c;ZXZpbA==\x07\nacme:run-0042:task-0007`)
	assert.Contains(t, errb.String(), "1 keys hold control or bidi characters and are printed escaped")

	out.Reset()
	errb.Reset()
	require.NoError(t, printKeys(&out, &errb, r, keysNull))
	got := strings.Split(strings.TrimSuffix(out.String(), "\x00"), "\x00")
	want := append([]string(nil), keys...)
	assert.ElementsMatch(t, want, got, "--keys0 gives back each key exactly")
	assert.Empty(t, errb.String())

	out.Reset()
	require.NoError(t, printKeys(&out, &errb, r, keysJSON))
	var kr keysResult
	require.NoError(t, json.Unmarshal(out.Bytes(), &kr), out.String())
	assert.ElementsMatch(t, keys, kr.Keys, "-o json gives back each key exactly")
	_, raw = rawControl(out.String(), "\n")
	assert.False(t, raw, "the JSON holds no raw control: %q", out.String())

	out.Reset()
	errb.Reset()
	err := printKeys(&out, &errb, keysReport("ok", "nul\x00inside"), keysNull)
	require.ErrorIs(t, err, errKeyWithNUL)
	assert.Equal(t, "ok\x00", out.String())
}

// TestTablesEscape: writeTable keeps a row a row and a column a column;
// mdTable's cells are inert, its code spans too.
func TestTablesEscape(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	writeTable(&b, []string{"key", "state"}, [][]string{{forged + "\tfake", "done"}, {"k2", "open"}})
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	require.Len(t, lines, 3, b.String())
	assert.True(t, strings.HasSuffix(lines[1], "done"), lines[1])
	_, raw := rawControl(b.String(), "\n")
	assert.False(t, raw)

	b.Reset()
	require.NoError(t, mdTable(&b, []string{"a", "b"}, [][]string{{forged, code("x`|y" + forged)}}))
	lines = strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	require.Len(t, lines, 3, b.String())
	_, raw = rawControl(b.String(), "\n")
	assert.False(t, raw)
	assert.Contains(t, lines[2], `\[click me\](http:\/\/evil.example)`)
	assert.NotContains(t, b.String(), "\x00")
	assert.Contains(t, lines[2], "`x'¦y")
}

// TestLogsEscape: a logged key is quoted by the text handler and written
// with \u escapes by the JSON one (on a terminal either way).
func TestLogsEscape(t *testing.T) {
	t.Parallel()
	for _, format := range []string{logText, logJSON} {
		var b bytes.Buffer
		slog.New(logHandler(&b, format, slog.LevelInfo)).Warn("duplicate "+forged, "key", forged)
		_, raw := rawControl(b.String(), "\n")
		assert.False(t, raw, "%s: %q", format, b.String())
		assert.Equal(t, 1, strings.Count(b.String(), "\n"), "%s: one line", format)
		assert.Contains(t, b.String(), `\u202e`, format)
	}
}

// TestKeysFlags: --null needs --keys; --keys has no Markdown, and the NUL
// form no JSON (bad input, before anything is read).
func TestKeysFlags(t *testing.T) {
	for _, args := range [][]string{{"--null"}, {"--keys", "-o", "markdown"}, {"--keys0", "-o", "json"}, {"--keys", "--null", "--json"}} {
		stdout, stderr, code := runArgs(t, append([]string{"triage", "--pipeline", "agent-tasks"}, args...)...)
		assert.Equal(t, 2, code, "%v: %s", args, stderr)
		assert.Contains(t, stdout+stderr, "--keys", "%v (a JSON refusal is on stdout)", args)
	}
}

// TestPrintKeysJSONNamesTenants: a key is its tenant's within the pipeline
// (ledger get and reconcile take --tenant), so -o json says each key's
// tenants, from the letters the scan read — two tenants' same key included.
func TestPrintKeysJSONNamesTenants(t *testing.T) {
	t.Parallel()
	letter := func(tenant, key string) *dlq.Tagged {
		return &dlq.Tagged{Reason: deadletter.ReasonEffectUnknown, Hints: dlq.Hints{Tenant: tenant, IdempotencyKey: key}}
	}
	r := &report.Report{Pipeline: "agent-tasks", Groups: []report.Group{
		{Reason: deadletter.ReasonEffectUnknown, IdempotencyKeys: []string{"k1", "k2"},
			Letters: []*dlq.Tagged{letter("umbrella", "k1"), letter("acme", "k1"), letter("acme", "k2")}},
		{Reason: deadletter.ReasonSchemaInvalid, Letters: []*dlq.Tagged{letter("globex", "k3")}},
	}}
	var out, errb bytes.Buffer
	require.NoError(t, printKeys(&out, &errb, r, keysJSON))
	var kr keysResult
	require.NoError(t, json.Unmarshal(out.Bytes(), &kr), out.String())
	assert.Equal(t, []string{"k1", "k2"}, kr.Keys)
	assert.Equal(t, map[string][]string{"k1": {"acme", "umbrella"}, "k2": {"acme"}}, kr.Tenants, "only effect_unknown keys, every tenant of each")

	out.Reset()
	require.NoError(t, printKeys(&out, &errb, keysReport("k1"), keysJSON))
	assert.NotContains(t, out.String(), `"tenants"`, "a report read back holds no letters: no tenants, not empty ones")
}
