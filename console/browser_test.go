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
	"strconv"
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

	"github.com/agentdlq/agentdlq/breaker"
	"github.com/agentdlq/agentdlq/breaker/dynamostore"
	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/functions/sampleworker"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/local/esm"
	"github.com/agentdlq/agentdlq/local/workload"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
	"github.com/agentdlq/agentdlq/testkit/localtest"
	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/dlq"
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
	poison int // the letters the real worker dead-letters
	// effects is the worker's effect store, which the console's catalog
	// verifies against (as agentdlq ui's does locally).
	effects sampleworker.EffectDir
	// breakers is where the worker (its breaker on) and the console share
	// the circuit breakers: the ledger table, as in AWS.
	breakers *dynamostore.Store
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
	p.Breaker.Enabled = true // the worker guards its dependencies; the console shows the breakers
	s := &seeded{p: p, client: sqs.NewFromConfig(cfg), budget: 4, effects: sampleworker.EffectDir{Dir: t.TempDir()}}
	s.q = localtest.Queues(t, cfg, p)
	table := localtest.Table(t, cfg)
	s.led = ledger.NewDynamo(dynamodb.NewFromConfig(cfg), table)
	s.breakers = dynamostore.New(dynamodb.NewFromConfig(cfg), table)

	// The worker, as Lambda's event source runs it.
	w, err := sampleworker.New(sampleworker.Config{Pipeline: p, Queues: s.q, SQS: s.client, Ledger: s.led, WorkerVersion: "ui-test", Logger: quiet, Metrics: io.Discard,
		Effects: s.effects, BreakerStore: s.breakers})
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
	for k, count := range map[workload.Kind]int{workload.JSONInvalid: 2, workload.SchemaInvalid: 3, workload.ToolUnknown: 3, workload.PolicyLimit: 1, workload.Unclassified: 2, workload.EffectUnknown: 1,
		workload.ToolVersionUnsupported: 1} {
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
	s.poison = len(tasks)
	want := len(tasks) + s.budget
	require.Eventually(t, func() bool { return depth(t, s.client, s.q.DLQURL) == want }, 60*time.Second, 250*time.Millisecond, "the worker dead-letters the poison")

	// Earlier triage runs, for the chart's history.
	reports := store.Folder{Root: t.TempDir()}
	for h := 6; h >= 1; h-- {
		var msgs []dlq.Message
		for i := range 3 + (6-h)*2 {
			reason := []deadletter.Reason{deadletter.ReasonToolUnknown, deadletter.ReasonSchemaInvalid, deadletter.ReasonBudgetExhausted}[i%3]
			attrs, _ := deadletter.EncodeDeadLetter(deadletter.Meta{Class: reason.Class(), Reason: reason, NextAction: reason.NextAction(), DeadLetteredAt: now.Add(-time.Duration(h) * time.Hour)}, nil)
			msgs = append(msgs, dlq.Message{MessageID: fmt.Sprintf("h%d-%d", h, i), Body: "{}", Attributes: attrs, SentTimestamp: now.Add(-time.Duration(h) * time.Hour)})
		}
		at := now.Add(-time.Duration(h) * time.Hour)
		_, err := render.WriteReport(ctx, reports, triage.Build(tagAll(msgs), p, at), at)
		require.NoError(t, err)
	}

	s.audit = &FileAudit{FileStore: audit.FileStore{Path: filepath.Join(t.TempDir(), "audit.jsonl")}}
	s.srv, err = New(ctx, Config{
		Pipelines: []*pipeline.Pipeline{p}, SQS: s.client, Ledger: s.led, Reports: reports, Loopback: true, Logger: quiet,
		Catalog: sampleworker.Catalog(s.effects), Breakers: s.breakers,
		Audit: func(string) AuditLog { return s.audit },
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
	a, err := strconv.Atoi(out.Attributes["ApproximateNumberOfMessages"])
	require.NoError(t, err)
	b, err := strconv.Atoi(out.Attributes["ApproximateNumberOfMessagesNotVisible"])
	require.NoError(t, err)
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

	// shoot writes the page as it is now at 1280×800 (the viewport), whole
	// at 1280 px, and whole at a phone's 390 px (then back to the desktop): a page that
	// changes later (a letter redriven) is shot as it was.
	shoot := func(name string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			write := func(suffix string, shot chromedp.Action[[]byte]) error {
				if shots == "" {
					return nil
				}
				png, err := shot(ctx, tg)
				if err != nil {
					return err
				}
				return os.WriteFile(filepath.Join(shots, name+suffix), png, 0o644)
			}
			if err := write("-1280x800.png", chromedp.CaptureScreenshot()); err != nil {
				return err
			}
			if err := write("-1280-full.png", chromedp.Screenshot(chromedp.CSS("body"))); err != nil {
				return err
			}
			if _, err := chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile)(ctx, tg); err != nil {
				return err
			}
			// The layout holds on a phone: nothing wider than the window
			// (a table scrolls inside its card; a long id or reason wraps).
			wide, err := chromedp.Evaluate[int](`document.documentElement.scrollWidth - document.documentElement.clientWidth`)(ctx, tg)
			if err != nil {
				return err
			}
			if !assert.LessOrEqual(t, wide, 0, "%s: the page is %d px wider than a phone's window", name, wide) {
				what, _ := chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('main *')).filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1 && !e.closest('.scroll')).slice(-3).map(e => e.tagName + '.' + e.className + ' ' + (e.textContent || '').slice(0, 60))`)(ctx, tg)
				t.Logf("%s: wider than the window: %q", name, what)
			}
			if err := write("-phone.png", chromedp.Screenshot(chromedp.CSS("body"))); err != nil {
				return err
			}
			_, err = chromedp.EmulateViewport(1280, 800)(ctx, tg)
			return err
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
	// Before any refresh the pipeline page renders the latest kept report
	// (an hour old, 13 letters) and says, beside it, what the DLQ holds now.
	run("pipeline from the kept report", chromedp.Navigate(ts.URL+"/pipeline?p=agent-tasks"), chromedp.WaitVisible(css(`#live`)), shoot("pipeline-kept"))
	assert.Contains(t, text(`#live`), "This report is older than the queue. It counted 13 dead letters 1h 0m ago")
	assert.Contains(t, text(`#live`), "read from the kept reports")
	assert.Equal(t, fmt.Sprint(s.poison+s.budget), text(`#live-count`))
	run("back to the overview", chromedp.Navigate(ts.URL+"/"), chromedp.WaitVisible(`//h1[text()="Dead-letter queues"]`))
	run("refresh", chromedp.Click(css(`form[action="/refresh"] button`)), chromedp.WaitVisible(`//a[text()="Open the pipeline"]`), shoot("refresh"))
	assert.Contains(t, text("main"), fmt.Sprintf("Triaged: %d dead letters", s.poison+s.budget))
	run("overview after", chromedp.Navigate(ts.URL+"/"), chromedp.WaitVisible(`//h1[text()="Dead-letter queues"]`), shoot("overview"))

	// 2. A group, then one of its letters.
	run("pipeline", chromedp.Navigate(ts.URL+"/pipeline?p=agent-tasks"), chromedp.WaitVisible(css(`#reason-budget_exhausted`)), shoot("pipeline"))
	assert.Contains(t, text("main"), "tool_unknown")
	assert.Contains(t, text(`#live`), fmt.Sprintf("Live: the DLQ holds %d now, as this report counted", s.poison+s.budget), "fresh: the report is the queue")
	run("group", chromedp.Click(css(`#reason-budget_exhausted a[href^="/group"]`)), chromedp.WaitVisible(`//h2[text()="Letters"]`), shoot("group"))
	run("letter", chromedp.Click(css(`a[href^="/letter"]`)), chromedp.WaitVisible(`//h3[text()="Attempt history"]`), shoot("letter"))
	letter := text("main")
	assert.Contains(t, letter, "search API 429")
	assert.Contains(t, letter, "redacted")
	assert.NotContains(t, letter, "sk-live-SECRET", "the body is redacted by default")
	// The real worker dead-letters a task of an unknown tool version before
	// reading it: its dlq_meta names no tool; the page shows the group's
	// (from the body, and says so), and the long reason breaks between words.
	run("tool_version_unsupported letter", chromedp.Navigate(ts.URL+"/pipeline?p=agent-tasks"), chromedp.Click(css(`#reason-tool_version_unsupported a[href^="/group"]`)),
		chromedp.WaitVisible(`//h2[text()="Letters"]`), chromedp.Click(css(`a[href^="/letter"]`)), chromedp.WaitVisible(css(`#tool`)), shoot("letter-tool-version"))
	assert.Equal(t, "http.fetch@9 · schema v1", text(`#tool`))
	assert.NotEqual(t, "-", text(`#key`))
	assert.Contains(t, text(`#from-body`), "read from the body")
	assert.Contains(t, text(`#receives`), "not the worker's attempts")
	assert.Contains(t, text(`#clock`), "counted from when the worker sent it to the DLQ")
	run("back to the budget group", chromedp.Navigate(ts.URL+"/pipeline?p=agent-tasks"), chromedp.Click(css(`#reason-budget_exhausted a[href^="/group"]`)),
		chromedp.WaitVisible(`//h2[text()="Letters"]`), chromedp.Click(css(`a[href^="/letter"]`)), chromedp.WaitVisible(`//h3[text()="Attempt history"]`))

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
	assert.Equal(t, s.poison+s.budget, depth(t, s.client, s.q.DLQURL), "a dry run moves nothing")

	// 4. Refused: the wrong owner.
	run("wrong owner", chromedp.Navigate(redriveURL), chromedp.WaitVisible(css(`#owner`)), form("mallory"),
		chromedp.Click(css(`button[value="redrive"]`)), chromedp.WaitVisible(css(`#outcome`)), shoot("refused"))
	assert.Contains(t, text("#outcome"), "Refused ("+redrivetype.CodeOwner+")")

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
	require.Eventually(t, func() bool { return depth(t, s.client, s.q.DLQURL) == s.poison }, 30*time.Second, 250*time.Millisecond, "the redriven letters were processed, not dead-lettered again")
	// The report still counts the redriven letters: the page says the DLQ holds fewer now.
	run("pipeline after the redrive", chromedp.Navigate(ts.URL+"/pipeline?p=agent-tasks"), chromedp.WaitVisible(css(`#live`)))
	assert.Contains(t, text(`#live`), fmt.Sprintf("This report is older than the queue. It counted %d dead letters", s.poison+s.budget))
	assert.Equal(t, fmt.Sprint(s.poison), text(`#live-count`))

	// 5b. Reject the policy_limit group: its page shows it rejected and
	// offers no redrive, before and after a refresh; the pipeline page marks it.
	run("policy_limit group", chromedp.Click(css(`#reason-policy_limit a[href^="/group"]`)), chromedp.WaitVisible(css(`#redrive-link`)))
	rejectedURL, err := chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	run("reject", chromedp.Click(css(`#redrive-link`)), chromedp.WaitVisible(css(`#rowner`)),
		chromedp.SetValue(css(`#rowner`), s.p.Owner), chromedp.SetValue(css(`#rwhy`), "over the tenant's budget by design (INC-52)"),
		chromedp.Click(css(`form[action="/reject"] button`)), chromedp.WaitVisible(css(`#audit`)))
	assert.Contains(t, text(`#audit`), "over the tenant's budget by design (INC-52)")
	checkRejected := func(when string) {
		t.Helper()
		run("rejected group "+when, chromedp.Navigate(rejectedURL), chromedp.WaitVisible(css(`#closed`)))
		assert.Equal(t, "rejected", text(`#rejected`), when)
		assert.Contains(t, text(`#decision`), "rejected by "+s.p.Owner, when)
		assert.Contains(t, text(`#decision`), "the dead letters stay until retention deletes them", when)
		links, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('main a[href^="/redrive"]')).map(a => a.textContent)`))
		require.NoError(t, err)
		assert.Empty(t, links, "a rejected group offers no redrive (%s)", when)
	}
	checkRejected("before a refresh")
	run("rejected shot", shoot("group-rejected"))
	run("refresh again", chromedp.Navigate(ts.URL+"/pipeline?p=agent-tasks"), chromedp.WaitVisible(css(`#live`)),
		chromedp.Click(css(`form[action="/refresh"] button`)), chromedp.WaitVisible(`//a[text()="Open the pipeline"]`))
	checkRejected("after a refresh")
	run("pipeline marks it", chromedp.Navigate(ts.URL+"/pipeline?p=agent-tasks"), chromedp.WaitVisible(css(`#reason-policy_limit`)))
	assert.Contains(t, text(`#reason-policy_limit`), "rejected")
	assert.Contains(t, text(`#live`), fmt.Sprintf("Live: the DLQ holds %d now", s.poison), "refreshed: the report is the queue again")

	// 5c. The whole pipeline's plan: every group, its decision, its next step.
	run("plan", chromedp.Click(css(`#plan-link`)), chromedp.WaitVisible(css(`#plan`)), shoot("plan"))
	assert.Equal(t, "The plan of agent-tasks", text("h1"))
	plan := text(`#plan`)
	for _, r := range []string{"json_invalid", "schema_invalid", "tool_unknown", "tool_version_unsupported", "policy_limit", "unclassified", "effect_unknown"} {
		assert.Contains(t, plan, r)
	}
	assert.Contains(t, plan, "rejected by "+s.p.Owner)
	assert.Contains(t, plan, "the dead letters stay until retention deletes them")
	forms, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('form[action="/redrive"], form[action="/reject"]').length`))
	require.NoError(t, err)
	assert.Zero(t, forms, "the whole plan is the plan, not a form")

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

	// 7. The circuit breakers: a real breaker on the emulator's DynamoDB
	// opens search-api after its failures, and the owner holds crm open
	// (why in a producer's or an owner's words: escaped). The pipeline page
	// lists both, open first; the overview names them.
	run("no breaker stored", chromedp.Navigate(ts.URL+"/pipeline?p=agent-tasks"), chromedp.WaitVisible(css(`#breakers`)))
	assert.Contains(t, text(`#breakers`), "every one closed")
	b, err := breaker.New(breaker.Config{Pipeline: s.p.Name, Store: s.breakers, Settings: s.p.Breaker.Settings(), Logger: quiet, Metrics: io.Discard})
	require.NoError(t, err)
	for i := range b.Settings().Threshold { // of two tenants: min_tenants 2
		require.NoError(t, b.Record(ctx, "search-api", []string{"acme", "globex"}[i%2], true, 0))
	}
	require.NoError(t, b.Record(ctx, "mail-relay", "acme", true, 0))
	_, _, err = b.Force(ctx, "crm", true, s.p.Owner, "INC-77 <b>provider</b> down")
	require.NoError(t, err)
	st, err := s.breakers.Get(ctx, s.p.Name, "search-api")
	require.NoError(t, err)
	require.Equal(t, breaker.Open, st.Mode, "the real breaker opened")
	run("breakers", chromedp.Navigate(ts.URL+"/pipeline?p=agent-tasks"), chromedp.WaitVisible(css(`#breaker-table`)), shoot("breakers"))
	assert.Contains(t, text(`#breakers-open`), "2 of 3 not closed.")
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('#breaker-table tbody tr')).map(r => r.dataset.dependency + ' ' + r.className)`))
	require.NoError(t, err)
	assert.Equal(t, []string{"crm brk-open", "search-api brk-open", "mail-relay brk-closed"}, rows)
	assert.Contains(t, text(`#breaker-table`), "INC-77 <b>provider</b> down", "the owner's why shown as written, not as markup")
	assert.Contains(t, text(`#breaker-table`), "until the owner closes it")
	assert.Contains(t, text(`#breaker-table`), breaker.CauseThreshold)
	run("overview with breakers", chromedp.Navigate(ts.URL+"/"), chromedp.WaitVisible(css(`#breakers-agent-tasks`)), shoot("overview-breakers"))
	assert.Equal(t, "breaker crm: open (held) search-api: open", strings.Join(strings.Fields(text(`#breakers-agent-tasks`)), " "))

	// 8. Refused: a request without the token, a POST without the CSRF token.
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
