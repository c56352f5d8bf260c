package eval

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/dlq"
)

// TestEvalRecordsKeepTheTrace: an eval item links back to its run. The
// metadata carries the trace_id of the case's first message (as the
// exported input has it: hashed when eval.hash_fields names trace_id) and
// the AWSTraceHeader system attribute where the dead letter has one; a
// body that is not a task object takes dlq_meta's trace id.
func TestEvalRecordsKeepTheTrace(t *testing.T) {
	t.Parallel()
	letters := func(body func(i int) string, header bool) []dlq.Tagged {
		var msgs []dlq.Message
		for i := range 3 {
			id := fmt.Sprintf("t%d", i)
			meta := poisonMeta(deadletter.ReasonSchemaInvalid, "web.search", "1", "acme", "key-"+id, "bad")
			meta.TraceID = "trace-meta-" + id
			m := deadLetter(t, "m"+id, body(i), meta, t0.Add(time.Duration(i)*time.Minute))
			if header {
				m.System = map[string]string{"AWSTraceHeader": "Root=1-6b0c13c0-" + fmt.Sprintf("%024d", i) + ";Sampled=1"}
			}
			msgs = append(msgs, m)
		}
		return tagAll(msgs)
	}
	sameTask := func(i int) string { return task(fmt.Sprintf("t%d", i), "acme", "web.search", "1", `{"query":"a"}`) }

	t.Run("from the task, with the X-Ray header", func(t *testing.T) {
		t.Parallel()
		p := testPipeline(t, false)
		recs, _ := evalRecords(triage.Build(letters(sameTask, true), p, t0.Add(time.Hour)), p)
		require.Len(t, recs, 1, "one case, three occurrences")
		md := recs[0].Metadata
		assert.Equal(t, 3, md.Occurrences)
		assert.Equal(t, "trace-t0", md.TraceID, "the first message's trace: the input's")
		assert.Equal(t, recs[0].Input.(map[string]any)["trace_id"], md.TraceID)
		assert.Equal(t, "Root=1-6b0c13c0-"+fmt.Sprintf("%024d", 0)+";Sampled=1", md.AWSTraceHeader)
		data, err := json.Marshal(recs[0])
		require.NoError(t, err)
		assert.Contains(t, string(data), `"trace_id":"trace-t0"`)
		assert.Contains(t, string(data), `"aws_trace_header":"Root=1-`)
	})
	t.Run("without a header", func(t *testing.T) {
		t.Parallel()
		p := testPipeline(t, false)
		recs, _ := evalRecords(triage.Build(letters(sameTask, false), p, t0.Add(time.Hour)), p)
		require.Len(t, recs, 1)
		assert.Empty(t, recs[0].Metadata.AWSTraceHeader)
		data, _ := json.Marshal(recs[0].Metadata)
		assert.NotContains(t, string(data), "aws_trace_header", "omitted, not empty")
	})
	t.Run("hashed as the input is", func(t *testing.T) {
		t.Parallel()
		p := testPipeline(t, false)
		p.Eval.HashFields = append(p.Eval.HashFields, "trace_id")
		recs, _ := evalRecords(triage.Build(letters(sameTask, false), p, t0.Add(time.Hour)), p)
		require.Len(t, recs, 1)
		assert.Equal(t, triage.HashValue("trace-t0"), recs[0].Metadata.TraceID)
	})
	t.Run("dropped as the input is", func(t *testing.T) {
		t.Parallel()
		p := testPipeline(t, false)
		p.Eval.DropFields = append(p.Eval.DropFields, "trace_id")
		recs, _ := evalRecords(triage.Build(letters(sameTask, false), p, t0.Add(time.Hour)), p)
		require.Len(t, recs, 1)
		assert.Empty(t, recs[0].Metadata.TraceID)
	})
	t.Run("a body that is not a task: dlq_meta's trace", func(t *testing.T) {
		t.Parallel()
		p := testPipeline(t, false)
		recs, _ := evalRecords(triage.Build(letters(func(i int) string { return fmt.Sprintf("not json %d", i) }, true), p, t0.Add(time.Hour)), p)
		require.Len(t, recs, 3, "three distinct inputs")
		got := map[string]bool{}
		for _, r := range recs {
			got[r.Metadata.TraceID] = true
			assert.NotEmpty(t, r.Metadata.AWSTraceHeader)
		}
		assert.Equal(t, map[string]bool{"trace-meta-t0": true, "trace-meta-t1": true, "trace-meta-t2": true}, got)
	})
	t.Run("a body that is not a task: dlq_meta's trace, hashed", func(t *testing.T) {
		t.Parallel()
		p := testPipeline(t, false)
		p.Eval.HashFields = append(p.Eval.HashFields, "trace_id")
		recs, _ := evalRecords(triage.Build(letters(func(i int) string { return fmt.Sprintf("not json %d", i) }, false), p, t0.Add(time.Hour)), p)
		require.Len(t, recs, 3)
		got := map[string]bool{}
		for _, r := range recs {
			got[r.Metadata.TraceID] = true
		}
		assert.Equal(t, map[string]bool{triage.HashValue("trace-meta-t0"): true, triage.HashValue("trace-meta-t1"): true, triage.HashValue("trace-meta-t2"): true}, got)
	})
}
