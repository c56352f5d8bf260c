package workload_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/local/workload"
	"github.com/agentdlq/agentdlq/pipeline"
)

func TestAccount(t *testing.T) {
	t.Parallel()
	p := &pipeline.Pipeline{MaxReceiveCount: 4}
	ok0 := workload.Make("a", 0, workload.OK, 0)
	dup := workload.Make("a", 1, workload.Duplicate, 0)
	bad := workload.Make("a", 2, workload.SchemaInvalid, 0)
	ex := workload.Make("a", 3, workload.BudgetExhausted, 0)
	ok4 := workload.Make("a", 4, workload.OK, 0)
	sent := []workload.Sent{{"m0", ok0}, {"m1", dup}, {"m2", bad}, {"m3", ex}, {"m4", ok4}}
	done := func(key string) bool { return key == ledger.Key(p.Name, ok0.Tenant, ok0.Key) } // the ledger key, scoped as the worker writes it
	tests := []struct {
		name     string
		dlq      []workload.DeadLetter
		inFlight int
		want     workload.Accounting
	}{
		{
			name:     "everything where it should be, one still in flight",
			dlq:      []workload.DeadLetter{{"m2", deadletter.ReasonSchemaInvalid}, {"m3", deadletter.ReasonBudgetExhausted}},
			inFlight: 1,
			want: workload.Accounting{Sent: 5, Processed: 2, Duplicates: 2, DeadLettered: 2, InFlight: 1,
				ByReason: map[deadletter.Reason]int{deadletter.ReasonSchemaInvalid: 1, deadletter.ReasonBudgetExhausted: 1}},
		},
		{
			name: "a message neither done, dead-lettered nor on the queue is lost",
			dlq:  []workload.DeadLetter{{"m2", deadletter.ReasonSchemaInvalid}, {"m3", deadletter.ReasonBudgetExhausted}},
			want: workload.Accounting{Sent: 5, Processed: 2, Duplicates: 2, DeadLettered: 2, Lost: 1,
				ByReason: map[deadletter.Reason]int{deadletter.ReasonSchemaInvalid: 1, deadletter.ReasonBudgetExhausted: 1}},
		},
		{
			name:     "a wrong reason and a second dead letter are reported",
			dlq:      []workload.DeadLetter{{"m2", deadletter.ReasonJSONInvalid}, {"m2", deadletter.ReasonJSONInvalid}, {"m3", deadletter.ReasonBudgetExhausted}, {"zz", deadletter.ReasonReceiveLimit}},
			inFlight: 1,
			want: workload.Accounting{Sent: 5, Processed: 2, Duplicates: 2, DeadLettered: 2, InFlight: 1, ExtraDeadLetters: 2,
				ByReason:   map[deadletter.Reason]int{deadletter.ReasonJSONInvalid: 1, deadletter.ReasonBudgetExhausted: 1},
				Unexpected: []string{"m2 (schema_invalid): dead-lettered as json_invalid, want dead-lettered as schema_invalid"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := workload.Account(p, sent, tt.dlq, tt.inFlight, done)
			assert.Equal(t, tt.want, got)
			assert.True(t, got.AddsUp(), got.Line())
		})
	}
	line := workload.Account(p, sent, tests[0].dlq, 1, done).Line()
	assert.Equal(t, "sent 5 = processed 2 (2 sharing an idempotency key) + dead-lettered 2 (budget_exhausted 1, schema_invalid 1) + in flight 1 + lost 0: adds up", line)
}
