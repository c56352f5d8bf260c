package console

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/functions/sampleworker"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/testkit/localtest"
	"github.com/agentdlq/agentdlq/triage/report"
	"github.com/agentdlq/agentdlq/triage/store"
)

// The console's filters are the URL's: the pages show the letters they
// choose and every link keeps them; the redrive form carries them.
func TestFiltersInTheURL(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 40)
	// 40 letters: 30 budget_exhausted (two signatures), 10 schema_invalid;
	// tenants tenant-0..6; dead-lettered over the last 40 minutes.
	w := f.get(t, "/pipeline?p=agent-tasks&contains=429")
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	body := w.Body.String()
	assert.Contains(t, body, "Filtered:</b> contains=429: 10 of 40 dead letters seen")
	assert.Contains(t, body, "&amp;contains=429\">", "group links keep the filter")
	assert.NotContains(t, body, "schema_invalid</h3>")
	assert.Contains(t, body, `name="contains" value="429"`, "the form shows the filter")

	// Relative times become absolute in the links: a link chooses the same letters later.
	w = f.get(t, "/pipeline?p=agent-tasks&since=10m&tenant=tenant-1")
	require.Equal(t, http.StatusOK, w.Code)
	since := t0.Add(-10 * time.Minute).Format(time.RFC3339)
	assert.Contains(t, w.Body.String(), "since="+url.QueryEscape(since))

	g := f.r.Groups[0]
	w = f.get(t, "/group?p=agent-tasks&r="+string(g.Reason)+"&fp="+g.Fingerprint+"&tenant=tenant-1")
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	body = w.Body.String()
	assert.Contains(t, body, "Filtered:</b> tenant=")
	assert.Contains(t, body, "&amp;tenant=tenant-1\">Redrive or reject this group")
	for _, l := range g.Letters {
		if l.Hints.Tenant == "tenant-1" {
			assert.Contains(t, body, l.MessageID)
		} else {
			assert.NotContains(t, body, ">"+l.MessageID+"<")
		}
	}

	w = f.get(t, "/redrive?p=agent-tasks&r="+string(g.Reason)+"&tenant=tenant-1")
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.Contains(t, w.Body.String(), `<input type="hidden" name="tenant" value="tenant-1">`)
	assert.Contains(t, w.Body.String(), "the audit record names the filter")

	// A bad filter is a 400 that says why; the page shows the whole report.
	w = f.get(t, "/pipeline?p=agent-tasks&since=yesterday")
	assert.Equal(t, http.StatusBadRequest, w.Code)
	assert.Contains(t, w.Body.String(), "neither an RFC 3339 time")
	w = f.get(t, "/group?p=agent-tasks&r="+string(g.Reason)+"&fp="+g.Fingerprint+"&since=1h&until=2h")
	assert.Equal(t, http.StatusBadRequest, w.Code)

	// A report read back from storage has no letters: refresh first.
	f.s.snaps[f.p.Name] = newSnapshot(stripped(t, f.r), "k.json", nil)
	w = f.get(t, "/pipeline?p=agent-tasks&tool=web.search")
	assert.Equal(t, http.StatusOK, w.Code)
	assert.Contains(t, w.Body.String(), "Filters need the letters")
	w = f.get(t, "/redrive?p=agent-tasks&r=budget_exhausted&tool=web.search")
	assert.Equal(t, http.StatusConflict, w.Code)
	assert.Empty(t, f.audit.all(), "page views record nothing")
}

// stripped is r as read back from storage: no letters.
func stripped(t *testing.T, r *report.Report) *report.Report {
	b, err := json.Marshal(r)
	require.NoError(t, err)
	var back report.Report
	require.NoError(t, json.Unmarshal(b, &back))
	return &back
}

// TestRepairInTheConsoleOnEmulators previews and applies a repair from the
// console against the emulators: a refusal and a preview change nothing,
// the repair keeps the original, sends the repaired task and deletes the
// letter; every step is audited.
func TestRepairInTheConsoleOnEmulators(t *testing.T) {
	cfg := localtest.AWS(t)
	ctx := context.Background()
	p := testPipeline(t)
	client := sqs.NewFromConfig(cfg)
	q := localtest.Queues(t, cfg, p)
	led := ledger.NewDynamo(dynamodb.NewFromConfig(cfg), localtest.Table(t, cfg))
	bucket := localtest.Bucket(t, cfg)
	s3c := s3.NewFromConfig(cfg)
	body := `{"task_id":"t-1","run_id":"r","tenant":"acme","idempotency_key":"rp-1","tool":"web.search","tool_version":"1.2.0","trace_id":"x","created_at":"2026-11-29T10:00:00Z","schema_version":1,"args":{"query":"orders","max_results":"ten"}}`
	attrs, err := deadletter.EncodeDeadLetter(deadletter.Meta{Reason: deadletter.ReasonUnclassified, IdempotencyKey: "rp-1", MessageID: "orig-rp-1", Tool: "web.search",
		ToolVersion: "1.2.0", Tenant: "acme", Error: "web.search: max_results: not a number", Effect: deadletter.EffectNone}, nil)
	require.NoError(t, err)
	sent, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.DLQURL), MessageBody: aws.String(body), MessageAttributes: localtest.SQSAttributes(attrs)})
	require.NoError(t, err)
	id := aws.ToString(sent.MessageId)
	log := &FileAudit{FileStore: audit.FileStore{Path: filepath.Join(t.TempDir(), "audit.jsonl")}}
	srv, err := New(ctx, Config{
		Pipelines: []*pipeline.Pipeline{p}, SQS: client, Ledger: led, Reports: store.Folder{Root: t.TempDir()}, Loopback: true, Logger: quiet,
		Evidence: s3c, EvidenceWriter: s3c, EvidenceBucket: bucket, Catalog: sampleworker.Catalog(nil),
		Audit:   func(string) AuditLog { return log },
		Resolve: func(context.Context, *pipeline.Pipeline) (pipeline.Queues, error) { return q, nil },
	})
	require.NoError(t, err)
	f := &fixture{s: srv, p: p}
	patch := `[{"op":"replace","path":"/max_results","value":10}]`
	form := func(mode, owner string) url.Values {
		return url.Values{"p": {p.Name}, "id": {id}, "owner": {owner}, "why": {"planner sent a string (INC-88)"}, "patch": {patch}, "mode": {mode}}
	}

	w := f.post(t, "/repair", form("repair", "mallory"))
	assert.Equal(t, http.StatusUnprocessableEntity, w.Code)
	assert.Contains(t, w.Body.String(), "owner_mismatch")
	w = f.post(t, "/repair", url.Values{"p": {p.Name}, "id": {id}, "owner": {p.Owner}, "why": {"x"}, "patch": {`[{"op":"replace","path":"/max_results","value":[}`}, "mode": {"preview"}})
	assert.Equal(t, http.StatusUnprocessableEntity, w.Code)
	assert.Contains(t, w.Body.String(), "is not an RFC 6902 JSON Patch")
	assert.Equal(t, 1, depth(t, client, q.DLQURL))

	w = f.post(t, "/repair", form("preview", p.Owner))
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	page := w.Body.String()
	assert.Contains(t, page, "Preview:")
	assert.Contains(t, page, `{&#34;query&#34;:&#34;orders&#34;,&#34;max_results&#34;:&#34;ten&#34;}`)
	assert.Contains(t, page, `{&#34;query&#34;:&#34;orders&#34;,&#34;max_results&#34;:10}`)
	assert.Contains(t, page, `value="repair"`, "a button applies exactly this patch")
	assert.Equal(t, 1, depth(t, client, q.DLQURL), "a preview changes nothing")
	assert.Equal(t, 0, depth(t, client, q.HotURL))

	w = f.post(t, "/repair", form("repair", p.Owner))
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.Contains(t, w.Body.String(), "Repaired.")
	assert.Contains(t, w.Body.String(), "s3://"+bucket+"/agent-tasks/repairs/")
	assert.Equal(t, 0, depth(t, client, q.DLQURL))
	assert.Equal(t, 1, depth(t, client, q.HotURL))

	w = f.post(t, "/repair", form("repair", p.Owner))
	assert.Equal(t, http.StatusUnprocessableEntity, w.Code, "a rerun finds no letter")
	assert.Equal(t, 1, depth(t, client, q.HotURL), "nothing sent twice")

	recs, err := log.Entries(ctx, p.Name, audit.ActionRepair)
	require.NoError(t, err)
	var got []string
	for _, r := range recs {
		got = append(got, string(r.Outcome))
	}
	assert.Equal(t, []string{"refused", "refused", "dry_run", "begun", "ok", "refused"}, got)
}

// The way back from a dry run's page keeps the filter the form was sent with.
func TestJobBackKeepsTheFilter(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 4)
	j := f.s.newJob("dry_run", f.p, "budget_exhausted", 3)
	j.form = &redriveForm{Reason: "budget_exhausted", Filter: map[string]string{"tool": "web.search", "since": "2026-11-29T11:00:00Z"}}
	back, err := url.Parse(j.view().Back)
	require.NoError(t, err)
	assert.Equal(t, "web.search", back.Query().Get("tool"))
	assert.Equal(t, "2026-11-29T11:00:00Z", back.Query().Get("since"))
	assert.Equal(t, "budget_exhausted", back.Query().Get("r"))
}
