package console

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/functions/sampleworker"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/local/esm"
	"github.com/agentdlq/agentdlq/local/workload"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/testkit/localtest"
	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/render"
	"github.com/agentdlq/agentdlq/triage/store"
)

// EnvScreenshots names the folder TestBrowser writes a PNG of every page
// to, at 1280×800 and at a phone's 390×844 (make ui-screenshots sets it).
const EnvScreenshots = "AGENTDLQ_SCREENSHOTS"

// EnvChromium names the Chromium binary (default: chromium, chromium-browser
// or google-chrome on the PATH).
const EnvChromium = "AGENTDLQ_CHROMIUM"

// chromium finds the browser; without one the test skips, or fails when
// the emulators are required (make test installs it in CI: .ci/run).
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv(EnvChromium); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no Chromium on the PATH (apt-get install chromium, or set " + EnvChromium + ")"
	if os.Getenv(localtest.EnvRequire) == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// seeded is one pipeline on the emulators with a seeded DLQ, the real
// worker running on its hot queue, and a console over it.
type seeded struct {
	p      *pipeline.Pipeline
	q      pipeline.Queues
	client *sqs.Client
	led    ledger.Ledger
	audit  *FileAudit
	srv    *Server
	budget int // crafted budget_exhausted letters: valid tasks, redrivable
	// effects is the worker's effect store, which the console's catalog
	// verifies against (as agentdlq ui's does locally).
	effects sampleworker.EffectDir
}

// seed fills a fresh DLQ: the real worker dead-letters poison of several
// reasons, and budget_exhausted letters (valid tasks a 429 kept failing)
// are written as the worker writes them. Earlier triage reports make a
// history for the chart. The worker keeps running until the test ends.
func seed(t *testing.T) *seeded {
	t.Helper()
	cfg := localtest.AWS(t)
	ctx := t.Context()
	p := workload.Quick(testPipeline(t))
	s := &seeded{p: p, client: sqs.NewFromConfig(cfg), budget: 4, effects: sampleworker.EffectDir{Dir: t.TempDir()}}
	s.q = localtest.Queues(t, cfg, p)
	s.led = ledger.NewDynamo(dynamodb.NewFromConfig(cfg), localtest.Table(t, cfg))

	// The worker, as Lambda's event source runs it.
	w, err := sampleworker.New(sampleworker.Config{Pipeline: p, Queues: s.q, SQS: s.client, Ledger: s.led, WorkerVersion: "ui-test", Logger: quiet, Metrics: io.Discard,
		Effects: s.effects})
	require.NoError(t, err)
	mc := esm.FromPipeline(p, s.q, cfg.Region)
	mc.Logger, mc.WaitTime = quiet, time.Second
	m, err := esm.New(s.client, w.Handle, mc)
	require.NoError(t, err)
	wctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _, _ = m.Run(wctx) }()
	t.Cleanup(func() { stop(); <-done })

	prefix := localtest.Unique("ui")
	var tasks []workload.Task
	n := 0
	for k, count := range map[workload.Kind]int{workload.JSONInvalid: 2, workload.SchemaInvalid: 3, workload.ToolUnknown: 3, workload.PolicyLimit: 1, workload.Unclassified: 2, workload.EffectUnknown: 1} {
		for range count {
			tasks = append(tasks, workload.Make(prefix, n, k, 0))
			n++
		}
	}
	_, err = workload.Send(ctx, s.client, s.q.HotURL, p.FIFO, tasks, 2)
	require.NoError(t, err)

	now := time.Now().UTC()
	for i := range s.budget {
		key := fmt.Sprintf("%s:budget-%d", prefix, i)
		body, _ := json.Marshal(map[string]any{
			"task_id": "task-" + key, "run_id": "run-7", "tenant": []string{"acme", "globex"}[i%2], "idempotency_key": key,
			"tool": "web.search", "tool_version": "1.4.0", "trace_id": "trace-" + key, "created_at": now.Add(-time.Hour).Format(time.RFC3339),
			"schema_version": 1, "args": map[string]any{"query": "status of order 41", "api_key": "sk-live-SECRET-" + key, "notify": "ana@example.com"},
		})
		at := now.Add(-time.Duration(s.budget-i) * time.Second) // sent to the DLQ right after
		var hist []deadletter.Attempt
		for r := 1; r <= p.MaxReceiveCount; r++ {
			hist = append(hist, deadletter.Attempt{Receive: r, At: at.Add(-time.Duration(p.MaxReceiveCount-r) * 40 * time.Minute), Class: deadletter.ClassTransient,
				ErrorCode: "http_429", Error: "search API 429 Too Many Requests (retry after 30s)"})
		}
		attrs, err := deadletter.EncodeDeadLetter(deadletter.Meta{
			Class: deadletter.ClassTransient, Reason: deadletter.ReasonBudgetExhausted, NextAction: deadletter.NextRetry,
			Attempts: p.MaxReceiveCount, FirstFailureAt: hist[0].At, LastFailureAt: at, ErrorCode: "http_429",
			Error: "search API 429 Too Many Requests (retry after 30s)", History: hist, SourceQueueARN: s.q.HotARN,
			MessageID: fmt.Sprintf("orig-%d", i), SentAt: hist[0].At, DeadLetteredAt: at, WorkerVersion: "v1.8.2",
			TaskID: "task-" + key, RunID: "run-7", Tenant: []string{"acme", "globex"}[i%2], Tool: "web.search", ToolVersion: "1.4.0",
			SchemaVersion: 1, IdempotencyKey: key, TraceID: "trace-" + key, InputSHA256: fmt.Sprintf("%x", sha256.Sum256(body)),
		}, map[string]deadletter.Attribute{"traceparent": {DataType: "String", StringValue: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}})
		require.NoError(t, err)
		_, err = s.client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(s.q.DLQURL), MessageBody: aws.String(string(body)), MessageAttributes: localtest.SQSAttributes(attrs)})
		require.NoError(t, err)
		_, err = s.led.DeadLettered(ctx, key, deadletter.ReasonBudgetExhausted, at)
		require.NoError(t, err)
	}
	want := len(tasks) + s.budget
	require.Eventually(t, func() bool { return depth(t, s.client, s.q.DLQURL) == want }, 60*time.Second, 250*time.Millisecond, "the worker dead-letters the poison")

	// Earlier triage runs, for the chart's history.
	reports := store.Folder{Root: t.TempDir()}
	for h := 6; h >= 1; h-- {
		var msgs []triage.Message
		for i := range 3 + (6-h)*2 {
			reason := []deadletter.Reason{deadletter.ReasonToolUnknown, deadletter.ReasonSchemaInvalid, deadletter.ReasonBudgetExhausted}[i%3]
			attrs, _ := deadletter.EncodeDeadLetter(deadletter.Meta{Class: reason.Class(), Reason: reason, NextAction: reason.NextAction(), DeadLetteredAt: now.Add(-time.Duration(h) * time.Hour)}, nil)
			msgs = append(msgs, triage.Message{MessageID: fmt.Sprintf("h%d-%d", h, i), Body: "{}", Attributes: attrs, SentTimestamp: now.Add(-time.Duration(h) * time.Hour)})
		}
		at := now.Add(-time.Duration(h) * time.Hour)
		_, err := render.WriteReport(ctx, reports, triage.Build(tagAll(msgs), p, at), at)
		require.NoError(t, err)
	}

	s.audit = &FileAudit{FileStore: audit.FileStore{Path: filepath.Join(t.TempDir(), "audit.jsonl")}}
	s.srv, err = New(ctx, Config{
		Pipelines: []*pipeline.Pipeline{p}, SQS: s.client, Ledger: s.led, Reports: reports, Loopback: true, Logger: quiet,
		Catalog: sampleworker.Catalog(s.effects),
		Audit:   func(string) AuditLog { return s.audit },
		Resolve: func(context.Context, *pipeline.Pipeline) (pipeline.Queues, error) {
			return s.q, nil
		},
	})
	require.NoError(t, err)
	return s
}

func depth(t *testing.T, c *sqs.Client, url string) int {
	out, err := c.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	require.NoError(t, err)
	var a, b int
	fmt.Sscan(out.Attributes["ApproximateNumberOfMessages"], &a)
	fmt.Sscan(out.Attributes["ApproximateNumberOfMessagesNotVisible"], &b)
	return a + b
}

// TestBrowser drives the console in headless Chromium the way a responder
// would: open it with the token, refresh, go to a group and a letter, dry
// run a redrive, be refused as the wrong owner, redrive with the worker
// running and see the progress and the audit entry, let the tools verify
// the key of the effect_unknown letter (a proposal), then reconcile it; then check that a request without the token
// and a POST without the CSRF token are refused.
func TestBrowser(t *testing.T) {
	bin := chromium(t)
	s := seed(t)
	ts := httptest.NewServer(s.srv)
	defer ts.Close()
	shots := os.Getenv(EnvScreenshots)
	if shots != "" {
		require.NoError(t, os.MkdirAll(shots, 0o755))
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.WindowSize(1280, 800), chromedp.Flag("hide-scrollbars", true))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelA()
	bctx, cancelC := chromedp.NewContext(actx)
	defer cancelC()
	require.NoError(t, chromedp.Do(bctx, chromedp.EmulateViewport(1280, 800)), "start Chromium")
	ctx, cancelT := context.WithTimeout(bctx, 4*time.Minute) // after the first run: a timeout there would stop the browser
	defer cancelT()

	var pages []string // name and URL of each page, for the phone screenshots
	shoot := func(name string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			u, err := chromedp.Location()(ctx, tg)
			if err != nil {
				return err
			}
			pages = append(pages, name+" "+u)
			if shots == "" {
				return nil
			}
			png, err := chromedp.CaptureScreenshot()(ctx, tg)
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(shots, name+"-1280x800.png"), png, 0o644)
		})
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		require.NoError(t, err, sel)
		return s
	}
	run := func(step string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		require.NoError(t, chromedp.Do(ctx, actions...), step)
	}
	css := func(sel string) chromedp.CSS { return chromedp.CSS(sel) }

	// 1. The overview, opened with the token; then a refresh runs triage.
	run("open with the token", chromedp.Navigate(ts.URL+"/?token="+s.srv.Token()), chromedp.WaitVisible(`//h1[text()="Dead-letter queues"]`))
	assert.Contains(t, text("main"), "agent-tasks")
	run("refresh", chromedp.Click(css(`form[action="/refresh"] button`)), chromedp.WaitVisible(`//a[text()="Open the pipeline"]`))
	assert.Contains(t, text("main"), fmt.Sprintf("Triaged: %d dead letters", 12+s.budget))
	run("overview after", chromedp.Navigate(ts.URL+"/"), chromedp.WaitVisible(`//h1[text()="Dead-letter queues"]`), shoot("overview"))

	// 2. A group, then one of its letters.
	run("pipeline", chromedp.Navigate(ts.URL+"/pipeline?p=agent-tasks"), chromedp.WaitVisible(css(`#reason-budget_exhausted`)), shoot("pipeline"))
	assert.Contains(t, text("main"), "tool_unknown")
	run("group", chromedp.Click(css(`#reason-budget_exhausted a[href^="/group"]`)), chromedp.WaitVisible(`//h2[text()="Letters"]`), shoot("group"))
	run("letter", chromedp.Click(css(`a[href^="/letter"]`)), chromedp.WaitVisible(`//h3[text()="Attempt history"]`), shoot("letter"))
	letter := text("main")
	assert.Contains(t, letter, "search API 429")
	assert.Contains(t, letter, "redacted")
	assert.NotContains(t, letter, "sk-live-SECRET", "the body is redacted by default")

	// 3. A dry run of the group: the preview lists what would move; nothing moves.
	form := func(owner string) chromedp.Action[chromedp.Void] {
		return chromedp.Steps(
			chromedp.SetValue(css(`#owner`), owner), chromedp.SetValue(css(`#why`), "search API quota raised (INC-41)"),
			chromedp.SetValue(css(`#rate`), "50"), chromedp.SetValue(css(`#canary`), "1"),
		)
	}
	run("redrive page", chromedp.Click(`//a[contains(., "Redrive or reject its group")]`), chromedp.WaitVisible(css(`#owner`)), form(s.p.Owner), shoot("redrive"))
	redriveURL, err := chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	run("dry run", chromedp.Click(css(`button[value="dry_run"]`)), chromedp.WaitVisible(css(`#outcome`)))
	assert.Contains(t, text("#outcome"), fmt.Sprintf("Dry run: %d of", s.budget))
	assert.Contains(t, text("#preview"), "budget-0")
	run("dry run shot", shoot("dry-run"))
	assert.Equal(t, 12+s.budget, depth(t, s.client, s.q.DLQURL), "a dry run moves nothing")

	// 4. Refused: the wrong owner.
	run("wrong owner", chromedp.Navigate(redriveURL), chromedp.WaitVisible(css(`#owner`)), form("mallory"),
		chromedp.Click(css(`button[value="redrive"]`)), chromedp.WaitVisible(css(`#outcome`)), shoot("refused"))
	assert.Contains(t, text("#outcome"), "Refused ("+redrive.CodeOwner+")")

	// 5. The redrive, with the worker running: progress, the canary, the audit.
	run("redrive", chromedp.Navigate(redriveURL), chromedp.WaitVisible(css(`#owner`)), form(s.p.Owner),
		chromedp.Click(css(`button[value="redrive"]`)), chromedp.WaitVisible(css(`#progress`)))
	run("redrive done", chromedp.WaitVisible(css(`#outcome`)), shoot("redrive-done"))
	assert.Contains(t, text("#outcome"), fmt.Sprintf("Done: %d moved", s.budget))
	assert.Contains(t, text("#progress"), fmt.Sprintf("%d of %d moved", s.budget, s.budget))
	assert.Contains(t, text("main"), "1 processed")
	run("audit", chromedp.Click(`//a[text()="Audit"]`), chromedp.WaitVisible(css(`#audit`)), shoot("audit"))
	auditText := text("#audit")
	assert.Contains(t, auditText, "select")
	assert.Contains(t, auditText, "canary")
	assert.Contains(t, auditText, "owner_mismatch")
	assert.Contains(t, auditText, "dry_run")
	require.Eventually(t, func() bool { return depth(t, s.client, s.q.DLQURL) == 12 }, 30*time.Second, 250*time.Millisecond, "the redriven letters were processed, not dead-lettered again")

	// 6. Reconcile the key of the effect_unknown letter the worker left: the
	// group lists it as effect_unknown; the owner records no effect; the
	// ledger, the group's decision and the audit say so.
	run("effect_unknown group", chromedp.Navigate(ts.URL+"/pipeline?p=agent-tasks"), chromedp.WaitVisible(css(`#reason-effect_unknown`)),
		chromedp.Click(css(`#reason-effect_unknown a[href^="/group"]`)), chromedp.WaitVisible(css(`#keys-table`)), shoot("keys"))
	key := text(`#keys-table td.lead`)
	assert.Contains(t, text(`#keys-table`), "effect_unknown")
	assert.Contains(t, text(`#decision`), "0/1 keys reconciled")
	groupURL, err := chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	// Let the tools check first: the verifier proposes no_effect (the call
	// reached the worker's effect store and did nothing); nothing changes.
	// The POST starts a job; its page reloads itself until the rows are in.
	run("verify", chromedp.SetValue(css(`#vf-owner`), s.p.Owner), chromedp.SetValue(css(`#vf-why`), "INC-77: check the mail relay"),
		chromedp.Click(css(`#verify-form button[value="propose"]`)), chromedp.WaitVisible(css(`#job-state`)),
		chromedp.WaitVisible(css(`#verify-table`)), shoot("verify"))
	verifyURL, err := chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	assert.Regexp(t, `/job\?id=[0-9a-f]{16}$`, verifyURL, "the verify runs as a job")
	assert.Regexp(t, `^Proposal: started .* · finished `, text(`#job-state`))
	assert.Contains(t, text(`#outcome`), "Proposal: nothing changed")
	assert.Regexp(t, key+`\s+email.send\s+1\s+no_effect`, text(`#verify-table`))
	assert.Contains(t, text(`#verify-table`), "none took effect")
	// The ledger's key is scoped to the pipeline and the task's tenant,
	// which the workload's keys start with (tenant:run:task).
	lkey := ledger.Key(s.p.Name, strings.SplitN(key, ":", 2)[0], key)
	e, found, err := s.led.Get(ctx, lkey)
	require.NoError(t, err)
	require.True(t, found)
	assert.True(t, e.EffectUnknown(time.Now()), "a proposal changes nothing")
	run("back to the keys", chromedp.Navigate(groupURL), chromedp.WaitVisible(css(`#keys-table`)))
	run("reconcile page", chromedp.Click(`//a[text()="Reconcile…"]`), chromedp.WaitVisible(css(`#rc-owner`)), shoot("reconcile"))
	run("reconcile", chromedp.Click(css(`#rc-none`)), chromedp.SetValue(css(`#rc-owner`), s.p.Owner),
		chromedp.SetValue(css(`#rc-why`), "mail log: nothing sent for the run (INC-77)"),
		chromedp.Click(css(`#reconcile button[type="submit"]`)), chromedp.WaitVisible(css(`#outcome`)), shoot("reconciled"))
	assert.Contains(t, text(`#outcome`), key+" is reconciled as no_effect by "+s.p.Owner)
	assert.Regexp(t, `effect started\s+true\s+false`, text(`#changed`))
	e, found, err = s.led.Get(ctx, lkey)
	require.NoError(t, err)
	require.True(t, found)
	assert.True(t, e.NoEffect(), "the ledger holds the reconciliation")
	run("group after", chromedp.Click(`//a[text()="The group's other keys"]`), chromedp.WaitVisible(css(`#keys-table`)))
	assert.Contains(t, text(`#keys-table`), "reconciled: no_effect")
	assert.Contains(t, text(`#keys-table`), "nothing sent for the run (INC-77)")
	assert.Contains(t, text(`#decision`), "1/1 keys reconciled (1 no_effect)")
	run("audit of the reconcile", chromedp.Navigate(ts.URL+"/audit?p=agent-tasks&action=reconcile"), chromedp.WaitVisible(css(`#audit`)))
	assert.Contains(t, text(`#audit`), "idempotency_key="+key)
	assert.Contains(t, text(`#audit`), "local: "+audit.OSUser())

	// Phone-sized screenshots of the same pages.
	if shots != "" {
		run("phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile))
		for _, pg := range pages {
			name, u, _ := strings.Cut(pg, " ")
			if name == "refused" || name == "dry-run" || name == "redrive-done" || name == "reconciled" || name == "verify" {
				continue // job pages and a POST's result: on a desktop only
			}
			run("phone "+name, chromedp.Navigate(u), chromedp.WaitReady(css("main")))
			png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(shots, name+"-phone.png"), png, 0o644))
		}
	}

	// 7. Refused: a request without the token, a POST without the CSRF token.
	resp, err := http.Get(ts.URL + "/pipeline?p=agent-tasks")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/refresh", strings.NewReader(url.Values{"p": {"agent-tasks"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: CookieName, Value: s.srv.Token()})
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
}
