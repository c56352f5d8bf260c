package console

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter/redacttest"
	"github.com/agentdlq/agentdlq/functions/sampleworker"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/local/esm"
	"github.com/agentdlq/agentdlq/local/workload"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/testkit/localtest"
	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/eval"
	"github.com/agentdlq/agentdlq/triage/render"
	"github.com/agentdlq/agentdlq/triage/store"
)

// Issue 28, finding 3: the redaction corpus (every secret key spelling,
// every shape of secret in text, secret-named message attributes) sent by a
// producer through the real worker to the DLQ, then read back through
// triage's eval export and report and the console's pages (the letter's
// body, metadata and attribute views, folded attributes included). Must
// hold: no planted secret appears anywhere, and the evidence around them
// (the keys, token counts, the tool's error text) does.
func TestRedactionCorpusEndToEnd(t *testing.T) {
	cfg := localtest.AWS(t)
	ctx := context.Background()
	p := workload.Quick(testPipeline(t))
	p.Eval.DropFields, p.Eval.HashFields = nil, nil // the redactor alone stands between the body and the export
	client := sqs.NewFromConfig(cfg)
	q := localtest.Queues(t, cfg, p)
	led := ledger.NewDynamo(dynamodb.NewFromConfig(cfg), localtest.Table(t, cfg))

	w, err := sampleworker.New(sampleworker.Config{Pipeline: p, Queues: q, SQS: client, Ledger: led, WorkerVersion: "redact-test",
		Logger: quiet, Metrics: io.Discard})
	require.NoError(t, err)
	mc := esm.FromPipeline(p, q, cfg.Region)
	mc.Logger, mc.WaitTime = quiet, time.Second
	m, err := esm.New(client, w.Handle, mc)
	require.NoError(t, err)
	wctx, stop := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() { defer close(stopped); _, _ = m.Run(wctx) }()
	defer func() { stop(); <-stopped }()

	// eval.threshold tasks of one case: the corpus in the args, and a tool
	// error (unclassified: dead-lettered at once) that carries secrets too.
	const toolError = "auth failed for password=Zq7e01 at postgres://app:Zq7e02@db/main; Authorization: Bearer Zq7e03abcdefgh; privateKey=Zq7e04"
	prefix := localtest.Unique("rd")
	attrNames := []string{"password", "X-Api-Key", "sessionToken", "privateKey", "ssh_key", "pw", "Cookie", "credentials", "client-secret", "auth"}
	for i := range p.Eval.Threshold {
		args := redacttest.Args()
		args["fault"] = map[string]any{"kind": "error", "error": toolError}
		task := map[string]any{"task_id": fmt.Sprintf("%s-%d", prefix, i), "run_id": prefix + "-run", "tenant": "acme",
			"idempotency_key": fmt.Sprintf("acme:%s:%d", prefix, i), "tool": "web.search", "tool_version": "1.2.0",
			"trace_id": fmt.Sprintf("trace-%s-%d", prefix, i), "created_at": "2026-12-01T10:00:00Z", "schema_version": 1, "args": args}
		b, err := json.Marshal(task)
		require.NoError(t, err)
		attrs := map[string]sqstypes.MessageAttributeValue{}
		for j, n := range attrNames { // ten: eight stay on the dead letter, two are folded into dlq_meta
			attrs[n] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(fmt.Sprintf("%sa%02d", redacttest.Marker, j))}
		}
		_, err = client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.HotURL), MessageBody: aws.String(string(b)), MessageAttributes: attrs})
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { return depth(t, client, q.DLQURL) == p.Eval.Threshold }, 90*time.Second, 250*time.Millisecond, "the worker dead-letters every task")
	stop()
	<-stopped

	// The dead letters themselves: the body and attributes are the
	// producer's (redrive restores them), dlq_meta's error text is redacted.
	got, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.DLQURL), MaxNumberOfMessages: 10, VisibilityTimeout: 1,
		MessageAttributeNames: []string{"All"}, WaitTimeSeconds: 1})
	require.NoError(t, err)
	require.NotEmpty(t, got.Messages)
	meta := aws.ToString(got.Messages[0].MessageAttributes["dlq_meta"].StringValue)
	assert.Contains(t, meta, `"reason":"unclassified"`)
	assert.Contains(t, meta, "auth failed for password=[REDACTED]")
	assert.Contains(t, meta, `"folded":`, "two of the ten attributes are folded into dlq_meta")
	require.Eventually(t, func() bool { return depth(t, client, q.DLQURL) == p.Eval.Threshold }, 10*time.Second, 250*time.Millisecond)

	// Triage: the eval export and the kept report.
	out := t.TempDir()
	r, err := triage.Run(ctx, triage.Config{Pipeline: p, DLQURL: q.DLQURL, SQS: client, Export: eval.To(store.Folder{Root: out}), Keep: render.KeepIn(store.Folder{Root: out}), Logger: quiet,
		Scan: triage.ScanOptions{VisibilityTimeout: 10 * time.Second}})
	require.NoError(t, err)
	require.NotNil(t, r.Export)
	require.Equal(t, 1, r.Export.Exported, "one case of %d letters", p.Eval.Threshold)
	var files int
	var evals string
	require.NoError(t, filepath.WalkDir(out, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		assert.Empty(t, redacttest.Leaks(string(b)), "%s", path)
		if strings.Contains(path, "evals-") && strings.HasSuffix(path, ".jsonl") {
			evals += string(b)
		}
		return nil
	}))
	assert.GreaterOrEqual(t, files, 4, "the eval records, their manifest and the report's JSON, Markdown and HTML")
	require.NotEmpty(t, evals)
	// The evidence around the secrets is kept: the keys, the counts, the error text.
	for _, want := range []string{`"privateKey":`, `"ssh_key":`, `"max_tokens":512`, `"token_count":77`, `"[REDACTED]"`,
		`auth failed for password=[REDACTED] at postgres://[REDACTED]@db/main`, `[REDACTED_PEM]`} {
		assert.True(t, strings.Contains(evals, want), "the eval input holds %s", want)
	}

	// The console: refresh, then every page of the pipeline, its group and
	// each letter (body, metadata, attributes).
	log := &FileAudit{FileStore: audit.FileStore{Path: filepath.Join(t.TempDir(), "audit.jsonl")}}
	srv, err := New(ctx, Config{
		Pipelines: []*pipeline.Pipeline{p}, SQS: client, Ledger: led, Reports: store.Folder{Root: t.TempDir()}, Loopback: true, Logger: quiet,
		Audit:   func(string) AuditLog { return log },
		Resolve: func(context.Context, *pipeline.Pipeline) (pipeline.Queues, error) { return q, nil },
	})
	require.NoError(t, err)
	f := &fixture{s: srv, p: p}
	w0 := f.post(t, "/refresh", url.Values{"p": {p.Name}})
	require.Equal(t, http.StatusSeeOther, w0.Code, w0.Body.String())
	job := w0.Header().Get("Location")
	require.Eventually(t, func() bool { return strings.Contains(f.get(t, job).Body.String(), "Open the pipeline") }, 60*time.Second, 250*time.Millisecond)
	pl := f.get(t, "/pipeline?p="+p.Name).Body.String()
	assert.Empty(t, redacttest.Leaks(pl), "pipeline page")
	group := regexp.MustCompile(`/group\?p=` + p.Name + `&amp;r=unclassified&amp;fp=[0-9a-f]+`).FindString(pl)
	require.NotEmpty(t, group, "the pipeline page links the unclassified group")
	gp := f.get(t, strings.ReplaceAll(group, "&amp;", "&")).Body.String()
	assert.Empty(t, redacttest.Leaks(gp), "group page")
	letters := regexp.MustCompile(`/letter\?p=`+p.Name+`&amp;id=[^"&]+`).FindAllString(gp, -1)
	require.NotEmpty(t, letters)
	for _, l := range letters {
		w := f.get(t, strings.ReplaceAll(l, "&amp;", "&"))
		require.Equal(t, http.StatusOK, w.Code)
		page := w.Body.String()
		assert.Empty(t, redacttest.Leaks(page), "letter page %s", l)
		for _, n := range attrNames {
			assert.True(t, strings.Contains(page, `<td class="mono">`+n+`</td>`), "attribute %s is listed", n)
		}
		assert.Equal(t, 2, strings.Count(page, "(folded in dlq_meta)"), "the folded attributes are listed")
		assert.True(t, strings.Contains(page, "&#34;privateKey&#34;: "), "the body keeps its keys")
		assert.True(t, strings.Contains(page, "&#34;max_tokens&#34;: 512"), "and its evidence")
		assert.True(t, strings.Contains(page, "<dd>auth failed for password=[REDACTED] at postgres://[REDACTED]@db/main"), "the metadata keeps the error's shape")
	}
}
