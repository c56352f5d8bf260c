package deadletter_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
)

// architectureRows is the founding design's "Failure classes and reasons"
// table, row by row, in the words of that table (the design is not in the
// repository, so the rows are written out here; docs/architecture.md points
// to the table generated from the code, docs/reasons.md). The taxonomy in
// reason.go must say the same. Issue 29 changed the next actions where the
// table contradicted itself: a reason never redriven is rejected, or
// patched where its args may be at fault (guardrail_reject,
// idempotency_key_reused and policy_limit said human_review); "repair"
// became "fix the producer" or "patch and redrive", two names.
var architectureRows = []struct {
	class      string // the table's class column
	action     string // the table's worker action column
	reasons    []deadletter.Reason
	next       []string // the table's next action column, one per reason
	redrivable string   // the table's redrivable column
}{
	{"transient", "retry with backoff inside the budget", []deadletter.Reason{"budget_exhausted"}, []string{"retry"}, "yes"},
	{"poison", "dead-letter at once, zero retries", []deadletter.Reason{"json_invalid", "schema_invalid", "tool_unknown", "tool_version_unsupported"}, []string{"fix the producer", "patch and redrive", "fix the producer", "fix the producer"}, "after the fix"},
	// idempotency_key_reused is issue 21's addition to the security row.
	{"security", "dead-letter at once", []deadletter.Reason{"signature_invalid", "guardrail_reject", "idempotency_key_reused"}, []string{"reject", "reject", "reject"}, "no"},
	{"authorization / configuration", "retry inside the budget (a config fix may land)", []deadletter.Reason{"auth_config"}, []string{"retry after the fix"}, "after the fix"},
	{"dependency open", "fail fast; dead-letter when the budget is spent", []deadletter.Reason{"dependency_open"}, []string{"retry"}, "yes"},
	{"ambiguous external outcome", "dead-letter at once", []deadletter.Reason{"effect_unknown"}, []string{"human_review (reconcile first)"}, "never blindly"},
	{"policy limit", "dead-letter at once", []deadletter.Reason{"policy_limit"}, []string{"patch and redrive"}, "no"},
	{"unknown", "dead-letter at once (never assume retryable)", []deadletter.Reason{"unclassified"}, []string{"fix the producer"}, "after the fix"},
	{"(inferred by triage)", "—", []deadletter.Reason{"receive_limit"}, []string{"human_review"}, "after review"},
	{"(ledger)", "dead-letter", []deadletter.Reason{"redrive_loop"}, []string{"reject"}, "no"},
}

// The table's words, mapped to the constants.
var (
	classOf = map[string]deadletter.Class{
		"transient": deadletter.ClassTransient, "poison": deadletter.ClassPoison, "security": deadletter.ClassSecurity,
		"authorization / configuration": deadletter.ClassAuthorization, "dependency open": deadletter.ClassDependency,
		"ambiguous external outcome": deadletter.ClassAmbiguous, "policy limit": deadletter.ClassPolicy, "unknown": deadletter.ClassUnknown,
		"(inferred by triage)": deadletter.ClassBroker, "(ledger)": deadletter.ClassLedger,
	}
	nextOf = map[string]deadletter.NextAction{
		"retry": deadletter.NextRetry, "fix the producer": deadletter.NextFixProducer, "patch and redrive": deadletter.NextPatchAndRedrive, "reject": deadletter.NextReject, "human_review": deadletter.NextHumanReview,
		"retry after the fix": deadletter.NextRetryAfter, "human_review (reconcile first)": deadletter.NextHumanReview,
	}
	redrivableOf = map[string]deadletter.Redrivable{
		"yes": deadletter.RedriveYes, "after the fix": deadletter.RedriveAfterFix, "no": deadletter.RedriveNever,
		"never blindly": deadletter.RedriveNeverBlind, "after review": deadletter.RedriveAfterReview,
	}
)

func TestTaxonomyMatchesArchitecture(t *testing.T) {
	t.Parallel()
	var want []deadletter.Reason
	for _, row := range architectureRows {
		require.Len(t, row.next, len(row.reasons), row.class)
		for i, r := range row.reasons {
			want = append(want, r)
			t.Run(string(r), func(t *testing.T) {
				info, ok := r.Info()
				require.True(t, ok, "%s is in the taxonomy", r)
				class, ok := classOf[row.class]
				require.True(t, ok, row.class)
				assert.Equal(t, class, info.Class, "class")
				assert.Equal(t, nextOf[row.next[i]], info.Next, "next action")
				assert.Equal(t, redrivableOf[row.redrivable], info.Redrivable, "redrivable")
				immediate := row.action == "dead-letter at once" || row.action == "dead-letter at once, zero retries" ||
					row.action == "dead-letter at once (never assume retryable)" || row.action == "dead-letter"
				assert.Equal(t, immediate, info.Immediate, "dead-lettered on the first failure")
				assert.Equal(t, row.class == "(inferred by triage)", info.Inferred, "inferred by triage")
				assert.NotEmpty(t, info.Summary)
				assert.Equal(t, info.Class, r.Class())
				assert.Equal(t, info.Next, r.NextAction())
				assert.Equal(t, info.Redrivable, r.Redrivable())
			})
		}
	}
	assert.Equal(t, want, deadletter.AllReasons(), "the taxonomy holds exactly the table's reasons, in its order")
}

func TestAllReasonsOrderAndTaxonomyCopy(t *testing.T) {
	t.Parallel()
	all := deadletter.AllReasons()
	require.Len(t, all, 15)
	assert.Equal(t, deadletter.ReasonBudgetExhausted, all[0])
	assert.Equal(t, deadletter.ReasonRedriveLoop, all[len(all)-1])
	seen := map[deadletter.Reason]bool{}
	for _, r := range all {
		assert.False(t, seen[r], "%s twice", r)
		seen[r] = true
		assert.True(t, r.Valid())
	}
	tx := deadletter.Taxonomy()
	tx[0].Reason = "mutated"
	assert.Equal(t, deadletter.ReasonBudgetExhausted, deadletter.Taxonomy()[0].Reason, "Taxonomy returns a copy")
	all[0] = "mutated"
	assert.Equal(t, deadletter.ReasonBudgetExhausted, deadletter.AllReasons()[0], "AllReasons returns a copy")
}

func TestParseReason(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want deadletter.Reason // "" when the input is refused
	}{
		{"budget_exhausted", deadletter.ReasonBudgetExhausted},
		{"schema_invalid", deadletter.ReasonSchemaInvalid},
		{"  effect_unknown\n", deadletter.ReasonEffectUnknown},
		{"redrive_loop", deadletter.ReasonRedriveLoop},
		{"receive_limit", deadletter.ReasonReceiveLimit},
		{"", ""},
		{"Schema_Invalid", ""},
		{"schema-invalid", ""},
		{"poison", ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := deadletter.ParseReason(tt.in)
			if tt.want == "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "known: budget_exhausted, json_invalid")
				assert.Empty(t, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestUnknownReason(t *testing.T) {
	t.Parallel()
	r := deadletter.Reason("nope")
	assert.False(t, r.Valid())
	_, ok := r.Info()
	assert.False(t, ok)
	assert.Empty(t, r.Class())
	assert.Empty(t, r.NextAction())
	assert.Empty(t, r.Redrivable())
	assert.False(t, r.Patchable())
	assert.Empty(t, deadletter.NextAction("repair").Describe(), "repair is no next action: fix_producer or patch_and_redrive")
}

// TestPolicyHoldsTogether checks each reason's policy against itself: its
// next action never contradicts its redrivability or its patch, and each
// next action and redrivability has words an operator acts on.
func TestPolicyHoldsTogether(t *testing.T) {
	t.Parallel()
	for _, info := range deadletter.Taxonomy() {
		t.Run(string(info.Reason), func(t *testing.T) {
			assert.NotEmpty(t, info.Next.Describe(), "the next action has words")
			assert.NotEmpty(t, info.Redrivable.Describe(), "the redrivability has words")
			assert.Equal(t, info.Patchable, info.Reason.Patchable())
			// retry is exactly "redrivable as it is".
			assert.Equal(t, info.Next == deadletter.NextRetry, info.Redrivable == deadletter.RedriveYes, "retry ⇔ redrivable yes")
			// A reason never redriven as it is is rejected, or patched where a
			// patch may repair it: never human_review (a review with no way on).
			if info.Redrivable == deadletter.RedriveNever {
				want := deadletter.NextReject
				if info.Patchable {
					want = deadletter.NextPatchAndRedrive
				}
				assert.Equal(t, want, info.Next, "never redriven as it is")
			}
			if info.Next == deadletter.NextReject {
				assert.Equal(t, deadletter.RedriveNever, info.Redrivable, "a rejected reason is never redriven")
				assert.False(t, info.Patchable, "a rejected reason is never patched")
			}
			if info.Next == deadletter.NextPatchAndRedrive {
				assert.True(t, info.Patchable, "patch and redrive needs a patch")
			}
			if info.Next == deadletter.NextFixProducer || info.Next == deadletter.NextRetryAfter {
				assert.Equal(t, deadletter.RedriveAfterFix, info.Redrivable, "a fix comes before the redrive")
			}
			// A patch never goes around a security control or a redrive loop,
			// and needs args: a body that is a JSON object.
			if info.Class == deadletter.ClassSecurity || info.Reason == deadletter.ReasonRedriveLoop || info.Reason == deadletter.ReasonJSONInvalid {
				assert.False(t, info.Patchable, "never patched")
			}
		})
	}
	assert.Len(t, deadletter.AllNextActions(), 6)
	assert.Len(t, deadletter.AllRedrivables(), 5)
}

func TestClassesMatchArchitecture(t *testing.T) {
	t.Parallel()
	var want []deadletter.Class
	for _, row := range architectureRows {
		class := classOf[row.class]
		want = append(want, class)
		t.Run(string(class), func(t *testing.T) {
			assert.True(t, class.Valid())
			// The worker retries inside the budget exactly where the table says so.
			retried := row.action == "retry with backoff inside the budget" ||
				row.action == "retry inside the budget (a config fix may land)" ||
				row.action == "fail fast; dead-letter when the budget is spent"
			assert.Equal(t, retried, class.Retryable(), "retried inside the budget")
		})
	}
	assert.Equal(t, want, deadletter.AllClasses(), "the classes are the table's, in its order")
	assert.False(t, deadletter.Class("authorization / configuration").Valid(), "an unknown class is not valid")
}
