package audit

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The typed actions and outcomes: each list is complete, without
// duplicates, and each value is its JSON spelling.
func TestTypedValues(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, values []string, want int) {
		t.Helper()
		assert.Len(t, values, want)
		seen := map[string]bool{}
		for _, v := range values {
			assert.False(t, seen[v], "%s twice", v)
			seen[v] = true
			b, err := json.Marshal(v)
			require.NoError(t, err)
			assert.Equal(t, `"`+v+`"`, string(b))
		}
	}
	var actions, outcomes []string
	for _, a := range allActions() {
		actions = append(actions, string(a))
	}
	for _, o := range allOutcomes() {
		outcomes = append(outcomes, string(o))
	}
	check(t, actions, 14) // breaker_open and breaker_close (issue 32)
	check(t, outcomes, 9)
}
