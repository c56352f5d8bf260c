package eval

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/dlq"
	"github.com/agentdlq/agentdlq/triage/internal/triagetest"
	"github.com/agentdlq/agentdlq/triage/render"
	"github.com/agentdlq/agentdlq/triage/store"
)

// The free text inside an input goes through deadletter.Redact, whose markers
// are its own business: these tests pin what triage adds (drop, hash,
// secret-named keys, structure) and check that the secrets are gone.
func TestRedactInput(t *testing.T) {
	t.Parallel()
	cfg := pipeline.Eval{DropFields: []string{"args.password", "args.nested.drop", "missing.path"}, HashFields: []string{"tenant", "args.user"}}
	r := func(s string) string { return deadletter.Redact(s, 0) }
	tests := []struct {
		name    string
		body    string
		want    any      // after a JSON round trip
		secrets []string // must not appear in the output
	}{
		{
			name: "drop, hash, secret keys and free-text secrets",
			body: `{"tenant":"acme","args":{"password":"hunter2","user":42,"q":"mail bob@example.com","token":"abc","api_key":null,"nested":{"drop":1,"keep":"Bearer abcdefghijklmnop"}}}`,
			want: map[string]any{
				"tenant": triage.HashValue("acme"),
				"args": map[string]any{
					"user": triage.HashValue("42"), "q": r("mail bob@example.com"), "token": "[REDACTED]", "api_key": nil,
					"nested": map[string]any{"keep": r("Bearer abcdefghijklmnop")},
				},
			},
			secrets: []string{"hunter2", "acme", "bob@example.com", `"abc"`, "abcdefghijklmnop", `"drop"`},
		},
		{name: "not JSON: a redacted string", body: `{"task_id": 1, token=sk-abcdefghijklmnopqrstu`, want: r(`{"task_id": 1, token=sk-abcdefghijklmnopqrstu`),
			secrets: []string{"sk-abcdefghijklmnopqrstu"}},
		{name: "JSON array", body: `["a@b.io", 7]`, want: []any{r("a@b.io"), float64(7)}, secrets: []string{"a@b.io"}},
		{name: "two JSON values are not one input", body: `{} {}`, want: `{} {}`},
		{name: "numbers keep their digits", body: `{"n":12345678901234567890}`, want: map[string]any{"n": 1.2345678901234567e+19}},
		{
			name: "the metadata's secret keys",
			body: `{"args":{"pwd":"hunter2","passphrase":"correct horse","card_number":"4111 1111 1111 1111","cvv":737,"passwordConfirm":"hunter3","max_tokens":4096}}`,
			want: map[string]any{"args": map[string]any{
				"pwd": "[REDACTED]", "passphrase": "[REDACTED]", "card_number": "[REDACTED]", "cvv": "[REDACTED]", "passwordConfirm": "[REDACTED]",
				"max_tokens": float64(4096), // not a secret key: kept
			}},
			secrets: []string{"hunter2", "hunter3", "correct horse", "4111", "737"},
		},
		{
			name:    "card numbers under any key, as text or a number",
			body:    `{"note":"paid with 4242-4242-4242-4242","card":4111111111111111,"order":4111111111111112}`,
			want:    map[string]any{"note": "paid with [REDACTED_CARD]", "card": "[REDACTED_CARD]", "order": float64(4111111111111112)},
			secrets: []string{"4242", "4111111111111111"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := RedactInput(tt.body, cfg)
			data, err := json.Marshal(got)
			require.NoError(t, err)
			var back any
			require.NoError(t, json.Unmarshal(data, &back))
			assert.Equal(t, tt.want, back)
			for _, secret := range tt.secrets {
				assert.NotContains(t, string(data), secret)
			}
		})
	}
	// The exact digits survive (json.Number), not a float rendering.
	data, _ := json.Marshal(RedactInput(`{"n":12345678901234567890}`, cfg))
	assert.JSONEq(t, `{"n":12345678901234567890}`, string(data))
}

func TestEvalRecords(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, false)
	r := triage.Build(tagAll(fixture(t)), p, t0)
	recs, skipped := evalRecords(r, p)
	assert.Empty(t, skipped)

	byReason := map[deadletter.Reason][]evalRecord{}
	for _, rec := range recs {
		byReason[rec.Expected.Reason] = append(byReason[rec.Expected.Reason], rec)
		assert.Equal(t, "dead_letter", rec.Expected.Outcome)
		assert.Regexp(t, `^[0-9a-f]{32}$`, rec.ID)
		assert.Equal(t, rec.Expected.Reason.Class(), rec.Expected.Class)
		assert.Equal(t, string(rec.Expected.Reason), rec.Tags[0])
		assert.Equal(t, inputHash(rec.Input), rec.Metadata.InputSHA256)
		assert.Equal(t, caseHash(rec.Input), rec.Metadata.CaseSHA256)
		assert.Equal(t, evalID(rec.Metadata.Fingerprint, rec.Metadata.CaseSHA256), rec.ID)
	}
	assert.Len(t, recs, 5, "schema_invalid: 3 distinct inputs of 4; json_invalid: 2 of 3")
	require.Len(t, byReason[deadletter.ReasonSchemaInvalid], 3)
	require.Len(t, byReason[deadletter.ReasonJSONInvalid], 2)
	assert.Empty(t, byReason[deadletter.ReasonToolUnknown], "one-off poison is not exported")

	occ := 0
	for _, rec := range byReason[deadletter.ReasonSchemaInvalid] {
		occ += rec.Metadata.Occurrences
		assert.Equal(t, []string{"schema_invalid", "poison", "web.search"}, rec.Tags)
		assert.Equal(t, 4, rec.Metadata.GroupCount)
		assert.Equal(t, "args.q: required field is missing in task <n>", rec.Metadata.ErrorSignature)
		assert.Equal(t, t0.Add(-30*time.Hour), rec.Metadata.FirstSeen)
		data, _ := json.Marshal(rec)
		for _, secret := range []string{"hunter2", "sk-abcdefghijklmnopqrstuv", "ops@example.com", `"globex"`, `"acme"`, "si-"} {
			assert.NotContains(t, string(data), secret, "no secret, email, plain tenant or message id in an eval record")
		}
	}
	assert.Equal(t, 4, occ, "every message is a case or an occurrence of one")

	// Stable across runs: the same DLQ, scanned again later with new message ids, gives the same ids.
	again := fixture(t)
	for i := range again {
		again[i].MessageID = "redriven-" + again[i].MessageID
	}
	r2 := triage.Build(tagAll(again), p, t0.Add(time.Hour))
	recs2, _ := evalRecords(r2, p)
	assert.Equal(t, ids(recs), ids(recs2))
}

func TestEvalRecordsOneCasePerContent(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, false)
	// The same bad task sent 50 times with fresh ids, and a second one 10 times.
	var msgs []dlq.Message
	for i := range 60 {
		args := `{"query":"a"}`
		if i >= 50 {
			args = `{"query":"b"}`
		}
		id := fmt.Sprintf("t%d", i)
		msgs = append(msgs, deadLetter(t, "m"+id, task(id, "acme", "web.search", "1", args),
			poisonMeta(deadletter.ReasonSchemaInvalid, "web.search", "1", "acme", "key-"+id, "bad"), t0))
	}
	recs, _ := evalRecords(triage.Build(tagAll(msgs), p, t0), p)
	require.Len(t, recs, 2)
	occ := map[string]int{}
	for _, r := range recs {
		occ[r.Input.(map[string]any)["args"].(map[string]any)["query"].(string)] = r.Metadata.Occurrences
		assert.Contains(t, r.Input, "task_id", "the input keeps the schema's fields")
	}
	assert.Equal(t, map[string]int{"a": 50, "b": 10}, occ)
}

func ids(recs []evalRecord) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.ID
	}
	return out
}

func TestEvalRecordsSkipNonUTF8(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, false)
	var msgs []dlq.Message
	for i := range 3 {
		m := deadLetter(t, "m"+string(rune('0'+i)), "{\"q\":\"\xff\"}", poisonMeta(deadletter.ReasonJSONInvalid, "", "", "", "", "not JSON"), t0)
		msgs = append(msgs, m)
	}
	r := triage.Build(tagAll(msgs), p, t0)
	recs, skipped := evalRecords(r, p)
	assert.Empty(t, recs)
	assert.Len(t, skipped, 3)
	assert.Equal(t, "export", skipped[0].Stage)
}

func readJSONL(t *testing.T, data []byte) []evalRecord {
	t.Helper()
	var out []evalRecord
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var raw map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(sc.Bytes(), &raw))
		keys := make([]string, 0, len(raw))
		for k := range raw {
			keys = append(keys, k)
		}
		assert.ElementsMatch(t, []string{"id", "input", "expected", "metadata", "tags"}, keys)
		var rec evalRecord
		require.NoError(t, json.Unmarshal(sc.Bytes(), &rec))
		out = append(out, rec)
	}
	return out
}

func TestExportFolder(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, false)
	dest := store.Folder{Root: t.TempDir()}
	ctx := t.Context()

	r := triage.Build(tagAll(fixture(t)), p, t0)
	res, err := Export(ctx, dest, r, p, t0)
	require.NoError(t, err)
	assert.Equal(t, 5, res.Exported)
	assert.Equal(t, 5, res.Candidates)
	assert.True(t, strings.HasPrefix(res.RecordsKey, "agent-tasks/2026-11-29/evals-120000Z-"), res.RecordsKey)
	assert.False(t, r.Partial)
	doc, err := json.Marshal(r)
	require.NoError(t, err)
	assert.NoError(t, triagetest.ValidateReport(t, doc), "a report with an export")
	data, err := os.ReadFile(filepath.Join(dest.Root, res.RecordsKey))
	require.NoError(t, err)
	assert.Len(t, readJSONL(t, data), 5)

	var m manifest
	mdata, err := os.ReadFile(filepath.Join(dest.Root, res.ManifestKey))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(mdata, &m))
	assert.Equal(t, manifestVersion, m.ManifestVersion)
	assert.Equal(t, "agent-tasks", m.Pipeline)
	assert.Equal(t, r.SHA256(), m.ReportSHA256)
	assert.Equal(t, res.IDs, m.IDs)
	assert.Equal(t, map[string]int{"schema_invalid": 3, "json_invalid": 2}, m.ByReason)

	// Other files under the pipeline's prefix are not read as exports.
	require.NoError(t, dest.Put(ctx, "agent-tasks/audit/2026-11-29.jsonl", []byte(`{"id":"not-an-eval"}`+"\n"), "application/x-ndjson"))
	got, err := existingIDs(ctx, dest, "agent-tasks")
	require.NoError(t, err)
	assert.Len(t, got, 5)
	assert.False(t, got["not-an-eval"])

	// The next run, a day later, finds the same cases: nothing is exported twice.
	r2 := triage.Build(tagAll(fixture(t)), p, t0.Add(24*time.Hour))
	res2, err := Export(ctx, dest, r2, p, t0.Add(24*time.Hour))
	require.NoError(t, err)
	assert.Equal(t, 0, res2.Exported)
	assert.Equal(t, 5, res2.AlreadyExported)
	assert.Empty(t, res2.RecordsKey, "no empty records file")
	assert.NotEmpty(t, res2.ManifestKey, "a manifest per export, even an empty one")

	// The report is kept under <pipeline>/reports/: JSON, Markdown, HTML.
	keys, err := render.WriteReport(ctx, dest, r, t0)
	require.NoError(t, err)
	require.Len(t, keys, 3)
	assert.True(t, strings.HasPrefix(keys[0], "agent-tasks/reports/20261129T"), keys[0])
	md, err := os.ReadFile(filepath.Join(dest.Root, keys[1]))
	require.NoError(t, err)
	assert.Contains(t, string(md), "# Triage of `agent-tasks`")
}

func TestExportRefused(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, false)
	// A folder path that is a file: the OS refuses the write.
	file := filepath.Join(t.TempDir(), "a-file")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	tests := []struct {
		name string
		dest store.Destination
		op   string
	}{
		{"list refused", triagetest.RefusingDest{Folder: store.Folder{Root: t.TempDir()}, RefuseList: true}, "read existing ids"},
		{"write refused", triagetest.RefusingDest{Folder: store.Folder{Root: t.TempDir()}, RefusePut: true}, "write records"},
		{"folder is a file", store.Folder{Root: file}, "write records"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := triage.Build(tagAll(fixture(t)), p, t0)
			res, err := Export(t.Context(), tt.dest, r, p, t0)
			require.Error(t, err)
			assert.ErrorIs(t, err, errExport)
			assert.Contains(t, err.Error(), ": "+tt.op+" ")
			assert.True(t, r.Partial, "the report says it is partial")
			assert.Contains(t, r.PartialReasons[0], "eval export failed")
			assert.Equal(t, err.Error(), res.Error)
			assert.Equal(t, 16, r.Totals.Messages, "the report itself is whole")
		})
	}
}
