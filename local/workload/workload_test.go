package workload_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/agenttask"
	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/functions/sampleworker"
	"github.com/agentdlq/agentdlq/local/workload"
	"github.com/agentdlq/agentdlq/pipeline"
)

// Every kind decodes as the worker will see it: valid kinds are valid tasks,
// the poison kinds fail with their own reason, and the kind reads back.
func TestMakeDecodesAsIntended(t *testing.T) {
	t.Parallel()
	cat := sampleworker.Catalog(nil)
	for i, k := range workload.AllKinds() {
		t.Run(string(k), func(t *testing.T) {
			t.Parallel()
			task := workload.Make("t", i, k, 0)
			got, ok := workload.KindOf(task.Body)
			require.True(t, ok, task.Body)
			assert.Equal(t, k, got)
			decoded, err := agenttask.DecodeTask([]byte(task.Body), cat)
			switch k {
			case workload.JSONInvalid, workload.SchemaInvalid, workload.ToolUnknown, workload.ToolVersionUnsupported:
				var ve *agenttask.ValidationError
				require.ErrorAs(t, err, &ve)
				assert.Equal(t, deadletter.Reason(k), ve.Reason)
			default:
				require.NoError(t, err)
				assert.Equal(t, task.Key, decoded.IdempotencyKey)
				assert.Equal(t, task.TaskID, decoded.TaskID)
			}
		})
	}
}

func TestDuplicateSharesTheKey(t *testing.T) {
	t.Parallel()
	orig := workload.Make("p", 7, workload.OK, 0)
	dup := workload.Make("p", 9, workload.Duplicate, 7)
	assert.Equal(t, orig.Key, dup.Key)
	assert.NotEqual(t, orig.TaskID, dup.TaskID)
}

func TestExpect(t *testing.T) {
	t.Parallel()
	p := &pipeline.Pipeline{MaxReceiveCount: 4}
	tests := []struct {
		kind workload.Kind
		want workload.Expect
	}{
		{workload.OK, workload.Expect{Processed: true, Attempts: 1}},
		{workload.TransientRecovers, workload.Expect{Processed: true, Attempts: 2}},
		{workload.BudgetExhausted, workload.Expect{Reason: deadletter.ReasonBudgetExhausted, Attempts: 4}},
		{workload.SchemaInvalid, workload.Expect{Reason: deadletter.ReasonSchemaInvalid, Attempts: 1}},
		{workload.Panic, workload.Expect{Reason: deadletter.ReasonUnclassified, Attempts: 1}},
		{workload.EffectUnknown, workload.Expect{Reason: deadletter.ReasonEffectUnknown, Attempts: 1}},
	}
	for _, tt := range tests {
		t.Run(string(tt.kind), func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, tt.kind.Expect(p))
		})
	}
	for _, k := range workload.AllKinds() {
		e := k.Expect(p)
		if !e.Processed {
			assert.True(t, e.Reason.Valid(), "kind %s expects a known reason", k)
		}
	}
}

func TestMixProportionsAndDeterminism(t *testing.T) {
	t.Parallel()
	a := workload.Mix("m", 1000, 42)
	b := workload.Mix("m", 1000, 42)
	require.Equal(t, a, b, "same seed, same workload")
	counts := map[workload.Kind]int{}
	for _, task := range a {
		counts[task.Kind]++
	}
	assert.InDelta(t, 700, counts[workload.OK], 10) // duplicates before the first ok become ok
	assert.Equal(t, 20, counts[workload.SchemaInvalid])
	assert.Equal(t, 10, counts[workload.BudgetExhausted])
	keys := map[string]bool{}
	for _, task := range a {
		if task.Kind == workload.Duplicate {
			assert.True(t, keys[task.Key], "a duplicate repeats an earlier key")
		}
		keys[task.Key] = true
	}
}

func TestDemoHasEveryKind(t *testing.T) {
	t.Parallel()
	seen := map[workload.Kind]bool{}
	for _, task := range workload.Demo("d") {
		seen[task.Kind] = true
	}
	for _, k := range workload.AllKinds() {
		assert.True(t, seen[k], k)
	}
}
