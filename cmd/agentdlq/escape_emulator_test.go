package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/triage/report"
)

// The sequences a producer puts in a task to forge what the operator reads
// (issue 28, finding 4), as JSON string content: a screen clear, an OSC 8
// hyperlink, an OSC 52 clipboard write, a line break that makes a second
// row or key, a Markdown link and a bidi override.
const forgedJSON = `\u001b[2J\u001b]8;;http://evil.example\u001b\\link\u001b]8;;\u001b\\ \u001b]52;c;ZXZpbA==\u0007\nfake_row | 999 [click me](http://evil.example) task-\u202egnp.exe`

// forgedID is the same, short enough for an identifier's maxLength: the
// contract alone refuses it.
const forgedID = `\u001b[2J\u001b]52;c;ZXZpbA==\u0007\n[x](http://e.example)\u202egnp`

// forgedAttr is the same in a message attribute, as SQS allows it there
// (no C0 but tab and line breaks): the C1 CSI U+009B is a one-character
// escape sequence to a terminal in 8-bit mode.
const forgedAttr = "\u009b2J\nfake_row | 999 [click me](http://evil.example) task-\u202egnp.exe"

// safeKey is a key the contract accepts that a `while read` loop (no -r) or
// xargs without -0 would mangle: a backslash, quotes, a command
// substitution, spaces and a Markdown link.
const safeKey = `acme:run-0042:[click me](http://evil.example) 'q' "dq" $(touch pwned) \back`

// TestForgedOutputEndToEnd: dead letters whose tool name, error text, key
// and attributes carry escape sequences, a line break, a Markdown link and
// U+202E go through the worker to the DLQ, then through every text face:
// the triage table, -o markdown, --keys plain, --keys0 and -o json, the
// HTML report, and the console's pipeline, group and letter pages. None
// lets a raw sequence through, tables keep their rows, Markdown has no
// live link, and the exact forms give the key back byte for byte.
func TestForgedOutputEndToEnd(t *testing.T) {
	cfg, _, q, table := onEmulators(t, "agent-tasks")
	client := sqs.NewFromConfig(cfg)
	ctx := context.Background()
	task := func(key, tool, args string) string {
		return `{"task_id":"t-` + key + `","run_id":"run-0042","tenant":"mallory","idempotency_key":"` + key + `","tool":"` + tool + `","tool_version":"1","trace_id":"x","created_at":"2026-11-29T10:00:00Z","schema_version":1,"args":` + args + `}`
	}
	keyJSON, err := json.Marshal(safeKey)
	require.NoError(t, err)
	bodies := []string{
		// Identifiers that carry the sequences: schema_invalid at the door.
		task(`acme:run-0042:task-0007`+forgedID, `web.search`+forgedID, `{"q":"x"}`),
		// A legal task whose tool fails with an error text of the producer's.
		task("mallory:err-1", "web.search", `{"q":"x","fault":{"kind":"error","error":"boom `+forgedJSON+`"}}`),
		// A mutating call whose outcome is unknown, under a key a script must
		// read exactly.
		strings.Replace(task("K", "email.send", `{"to":"a@example.com","subject":"s","body":"b","fault":{"kind":"timeout_after_effect"}}`), `"K"`, string(keyJSON), 1),
	}
	for _, b := range bodies {
		require.True(t, json.Valid([]byte(b)), b)
		_, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.HotURL), MessageBody: aws.String(b),
			MessageAttributes: map[string]types.MessageAttributeValue{"note": {DataType: aws.String("String"), StringValue: aws.String(forgedAttr)}}})
		require.NoError(t, err)
	}
	workUntilIdle(t, table)
	require.Equal(t, 3, depthOf(t, client, q.DLQURL), "the three tasks are dead letters")

	reports := t.TempDir()
	common := []string{"--pipeline", "agent-tasks", "--ledger-table", table, "--no-progress"}
	run := func(args ...string) string {
		t.Helper()
		stdout, stderr, code := runArgs(t, append(append([]string{"triage"}, common...), args...)...)
		require.Equal(t, 0, code, "triage %v: %s", args, stderr)
		noRaw(t, "stderr of triage "+strings.Join(args, " "), stderr, "\n")
		return stdout
	}

	// The report as JSON: the sequences are there, as data (JSON escapes).
	var r report.Report
	jsonOut := run("-o", "json", "--reports", reports)
	noRaw(t, "triage -o json", jsonOut, "\n")
	require.NoError(t, json.Unmarshal([]byte(jsonOut), &r))
	var forgedTool, errGroup, keyGroup *report.Group
	for i, g := range r.Groups {
		switch {
		case strings.Contains(g.Tool, "\x1b[2J"):
			forgedTool = &r.Groups[i]
		case g.Reason == deadletter.ReasonEffectUnknown:
			keyGroup = &r.Groups[i]
		case strings.Contains(g.Signature, "\u202e") || strings.Contains(g.Signature, "\x1b"):
			errGroup = &r.Groups[i]
		}
	}
	require.NotNil(t, forgedTool, "the forged tool name reaches the report: %+v", r.Groups)
	require.NotNil(t, errGroup, "the forged error text reaches the report: %+v", r.Groups)
	require.NotNil(t, keyGroup, "the effect_unknown letter: %+v", r.Groups)
	assert.Equal(t, deadletter.ReasonSchemaInvalid, forgedTool.Reason, "identifiers with controls are refused by the contract")
	assert.Contains(t, forgedTool.Signature, "control characters")
	assert.Equal(t, []string{safeKey}, keyGroup.IdempotencyKeys)

	// The table: no raw sequence, and each group of the report is one row
	// (its fingerprint and count on one line).
	text := run()
	noRaw(t, "triage table", text, "\n")
	assert.Contains(t, text, `\u202egnp@1`, "the tool name, escaped")
	for _, g := range r.Groups {
		assert.Regexp(t, regexp.MustCompile(`(?m)^  `+g.Fingerprint+` .*\s`+fmt.Sprint(g.Count)+`\s`), text, "group %s is one row", g.Fingerprint)
	}
	assert.NotRegexp(t, `(?m)^fake_row`, text, "a line break in a cell makes no row")

	// Markdown: no raw sequence, no live link, no new row.
	md := run("-o", "markdown")
	noRaw(t, "triage -o markdown", md, "\n")
	assert.NotRegexp(t, `(^|[^\\])\[click me[^\]]*[^\\]\]\(`, md, "a live Markdown link")
	assert.NotContains(t, md, "(http://evil.example)")
	assert.NotRegexp(t, `(?m)^fake_row`, md)
	assert.Contains(t, md, `\[x\](http:\/\/e.example)`, "the tool name's link, inert")

	// --keys: plain, one line per key (escaped when it must be); --keys0 and
	// -o json: the exact key.
	plain := run("--keys")
	noRaw(t, "--keys", plain, "\n")
	assert.Equal(t, safeKey+"\n", plain)
	assert.Equal(t, safeKey+"\x00", run("--keys0"), "--keys0 round-trips the key")
	assert.Equal(t, safeKey+"\x00", run("--keys", "--null"))
	var kr keysResult
	keysJSON := run("--keys", "-o", "json")
	noRaw(t, "--keys -o json", keysJSON, "\n")
	require.NoError(t, json.Unmarshal([]byte(keysJSON), &kr))
	assert.Equal(t, []string{safeKey}, kr.Keys, "-o json round-trips the key")

	// The HTML report kept beside the JSON.
	pages, err := filepath.Glob(filepath.Join(reports, "agent-tasks", "reports", "*.html"))
	require.NoError(t, err)
	require.NotEmpty(t, pages)
	html, err := os.ReadFile(pages[len(pages)-1])
	require.NoError(t, err)
	noRaw(t, "report.html", string(html), "\n\t")
	assert.Contains(t, string(html), `\u202egnp@1`)
	assert.Contains(t, string(html), `\u202egnp.exe`)
	assert.Contains(t, string(html), "overflow-wrap:anywhere")

	// The console: the pipeline and group pages from the kept report, then
	// the letter pages after a refresh loads the letters.
	c := startConsole(t, reports)
	noRaw(t, "console pipeline page", c.get("/pipeline?p=agent-tasks"), "\n\t")
	for _, g := range []*report.Group{forgedTool, errGroup, keyGroup} {
		page := c.get("/group?p=agent-tasks&r=" + string(g.Reason) + "&fp=" + g.Fingerprint)
		noRaw(t, "console group page "+string(g.Reason), page, "\n\t")
	}
	c.refresh()
	for _, g := range []*report.Group{forgedTool, errGroup, keyGroup} {
		require.NotEmpty(t, g.SampleMessageIDs)
		page := c.letter(g.SampleMessageIDs[0])
		noRaw(t, "console letter page "+string(g.Reason), page, "\n\t")
		assert.Contains(t, page, `\u202egnp.exe`, "the attribute, escaped")
		assert.Contains(t, page, `\u009b2J`, "the attribute's C1 escape, escaped")
	}
}

// noRaw fails the test when out holds a control character, a bidi control
// or a byte that is not UTF-8, other than those in keep.
func noRaw(t *testing.T, face, out, keep string) {
	t.Helper()
	if r, ok := rawControl(out, keep); ok {
		i := strings.IndexRune(out, r)
		t.Errorf("%s shows a raw %U: %q", face, r, out[max(0, i-60):min(len(out), i+60)])
	}
}

// console is `agentdlq ui` run in the test, with a client holding its cookie.
type consoleClient struct {
	t    *testing.T
	base string
	c    *http.Client
}

func startConsole(t *testing.T, reports string) *consoleClient {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	root := newRootCmd()
	pr, pw := io.Pipe()
	root.SetOut(pw)
	root.SetErr(io.Discard)
	root.SetArgs([]string{"--config", filepath.Join("..", "..", pipeline.DefaultFile), "ui", "--no-browser", "--reports", reports})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx); _ = pw.Close() }() // Close of a pipe's writer returns nil
	t.Cleanup(func() { cancel(); assert.NoError(t, <-done, "the cancel stops it cleanly") })
	line, err := bufio.NewReader(pr).ReadString('\n')
	require.NoError(t, err)
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	m := regexp.MustCompile(`^agentdlq ui: (http://127\.0\.0\.1:\d+/)\?token=([0-9a-f]{64})\n$`).FindStringSubmatch(line)
	require.NotNil(t, m, line)
	jar, _ := cookiejar.New(nil)
	cc := &consoleClient{t: t, base: strings.TrimSuffix(m[1], "/"), c: &http.Client{Jar: jar}}
	cc.get("/?token=" + m[2])
	return cc
}

func (c *consoleClient) get(path string) string {
	c.t.Helper()
	resp, err := c.c.Get(c.base + path)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	require.Equal(c.t, http.StatusOK, resp.StatusCode, "%s: %s", path, b)
	return string(b)
}

// refresh runs triage from the console (its Refresh button), so that its
// pages hold the letters.
func (c *consoleClient) refresh() {
	c.t.Helper()
	page := c.get("/pipeline?p=agent-tasks")
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(page)
	require.NotNil(c.t, m, "the refresh form")
	req, err := http.NewRequest(http.MethodPost, c.base+"/refresh", strings.NewReader(url.Values{"csrf": {m[1]}, "p": {"agent-tasks"}}.Encode()))
	require.NoError(c.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", c.base)
	resp, err := c.c.Do(req)
	require.NoError(c.t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.Less(c.t, resp.StatusCode, 400, "refresh")
}

// letter is a letter's page once the refresh has loaded it.
func (c *consoleClient) letter(id string) string {
	c.t.Helper()
	var page string
	require.Eventually(c.t, func() bool {
		page = c.get("/letter?p=agent-tasks&id=" + url.QueryEscape(id))
		return !strings.Contains(page, "This letter is not loaded")
	}, 60*time.Second, 250*time.Millisecond, "the refresh loads letter %s", id)
	return page
}
