package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/dlq"
	"github.com/agentdlq/agentdlq/triage/eval"
	"github.com/agentdlq/agentdlq/triage/internal/triagetest"
	"github.com/agentdlq/agentdlq/triage/render"
	"github.com/agentdlq/agentdlq/triage/report"
	"github.com/agentdlq/agentdlq/triage/store"
)

// The tests of a whole run as the Lambda makes it: scan, export, kept
// report, and every form the report takes.

// TestRunMarksAPartialScan: a letter held by another reader makes the scan
// partial; the report says so in every form it takes (JSON, text,
// Markdown, HTML, the alarm summary, the metrics), and says when to rerun.
func TestRunMarksAPartialScan(t *testing.T) {
	t.Parallel()
	for _, held := range []bool{false, true} {
		name := "complete"
		if held {
			name = "one letter held elsewhere"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			clock := newClock()
			f := newFakeSQS(t, clock, map[string][]dlq.Message{dlqURL: fixture(t)})
			setDuration(f, dlqURL, "VisibilityTimeout", 45*time.Second)
			if held {
				f.Queue(dlqURL).Messages[2].VisibleAt = t0.Add(time.Hour)
			}
			r, err := triage.Run(t.Context(), triage.Config{Pipeline: testPipeline(t, false), DLQURL: "http://q/agent-tasks-dlq", SQS: f, Now: clock.Now, Logger: quiet})
			require.NoError(t, err, "a partial scan is a report, not an error: the Lambda keeps reporting")

			data, err := json.Marshal(r)
			require.NoError(t, err)
			assert.NoError(t, triagetest.ValidateReport(t, data))
			var doc map[string]any
			require.NoError(t, json.Unmarshal(data, &doc))
			assert.Equal(t, !held, doc["complete"])

			var text, mdown, page, emf bytes.Buffer
			require.NoError(t, render.Text(&text, r))
			require.NoError(t, render.Markdown(&mdown, r))
			require.NoError(t, render.HTML(&page, r, []triage.HistoryPoint{triage.PointOf(r, "")}))
			require.NoError(t, writeEMF(&emf, r, t0))
			subject, body := summary(r, "dlq-alarm", alarmLinks{}, nil)
			assert.Equal(t, !held, emfDocs(t, emf.Bytes())[0]["ScanComplete"])

			if !held {
				assert.True(t, r.Complete)
				assert.False(t, r.Partial, r.PartialReasons)
				for _, out := range []string{text.String(), mdown.String(), page.String(), subject, body} {
					assert.NotContains(t, out, "PARTIAL SCAN")
				}
				assert.NotContains(t, page.String(), `id="partial-scan"`)
				return
			}
			assert.False(t, r.Complete)
			assert.True(t, r.Partial)
			assert.Equal(t, 15, r.Totals.Messages, "what it saw")
			assert.Equal(t, triage.CauseInFlight, r.Scan.PartialCause)
			assert.Equal(t, 45, r.Scan.RetryAfterSeconds, "the queue's visibility timeout, longer than the scan's 30 s")

			banner := "PARTIAL SCAN: saw 15 of about 16 dead letters (15 visible and 1 in flight when it started); the counts are a lower bound"
			assert.Contains(t, text.String(), "!!! "+banner)
			assert.Contains(t, text.String(), "Rerun in about 45s")
			assert.True(t, strings.HasPrefix(mdown.String(), "# Triage of `agent-tasks`\n\n> **"+banner), mdown.String()[:200])
			assert.Contains(t, page.String(), `<div class="notice bad" id="partial-scan"><b>`+banner)
			assert.Contains(t, page.String(), "<div class=\"v\">≥ 15</div>", "the count is a lower bound")
			assert.NotContains(t, text.String(), "PARTIAL: scan:", "the banner says it once")
			assert.NotContains(t, page.String(), "Partial report.", "nothing else fell short")
			assert.Contains(t, page.String(), "held by another reader until their visibility timeout lapses (about 45s: ")
			assert.True(t, strings.HasPrefix(subject, "agentdlq agent-tasks: at least 15 dead letters (partial scan), top "), subject)
			assert.Contains(t, body, banner)
		})
	}
}

// TestRunNeverChangesTheDLQ runs the whole triage, export included, against
// the fake queue, and with a destination that refuses the write.
func TestRunNeverChangesTheDLQ(t *testing.T) {
	t.Parallel()
	for _, refuse := range []bool{false, true} {
		t.Run(fmt.Sprintf("refuse=%v", refuse), func(t *testing.T) {
			t.Parallel()
			clock := newClock()
			f := newFakeSQS(t, clock, map[string][]dlq.Message{dlqURL: fixture(t)})
			before := snapshot(f, dlqURL)
			var dest store.Destination = store.Folder{Root: t.TempDir()}
			if refuse {
				dest = triagetest.RefusingDest{Folder: store.Folder{Root: t.TempDir()}, RefusePut: true}
			}
			r, err := triage.Run(t.Context(), triage.Config{Pipeline: testPipeline(t, false), DLQURL: "http://q/agent-tasks-dlq", SQS: f, Export: eval.To(dest), Keep: render.KeepIn(dest), Now: clock.Now, Logger: quiet})
			require.NotNil(t, r)
			assert.Equal(t, 16, r.Totals.Messages)
			assert.Equal(t, before, snapshot(f, dlqURL))
			assert.Equal(t, 0, hidden(f, dlqURL))
			if refuse {
				require.ErrorContains(t, err, "triage: eval export failed")
				assert.True(t, r.Partial)
				assert.True(t, strings.HasPrefix(r.PartialReasons[0], "eval export failed"), r.PartialReasons)
				assert.Empty(t, r.Written)
				return
			}
			require.NoError(t, err)
			assert.False(t, r.Partial, r.PartialReasons)
			assert.Equal(t, 5, r.Export.Exported)
			assert.Len(t, r.Written, 3) // JSON, Markdown, HTML
		})
	}
}

// TestSummaryEscapes: the alarm summary (an email, a chat message) shows
// an attention line that quotes a message with its controls escaped.
func TestSummaryEscapes(t *testing.T) {
	t.Parallel()
	r := &report.Report{Pipeline: "agent-tasks", Complete: true, Attention: []string{"tool web.search\x1b[2J\nfake line task-\u202egnp.exe failed"}}
	_, body := summary(r, "dlq-alarm", alarmLinks{}, nil)
	assert.NotContains(t, body, "\x1b")
	assert.NotContains(t, body, "\u202e")
	assert.NotContains(t, body, "\nfake line")
	assert.Contains(t, body, `! tool web.search\x1b[2J\nfake line task-\u202egnp.exe failed`)
}
