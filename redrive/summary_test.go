package redrive

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Every count of a pass is said against the DLQ's depth, in words an
// operator reads without knowing what "released" meant: the pass
// (limit 1, ten received of fifteen) and a dry run that chose four.
func TestSelectResultSummary(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		res  SelectResult
		want string
	}{
		{"limit 1 of 15", SelectResult{Seen: 10, Matched: 1, Moved: 1, Released: 9, DepthAtStart: 15},
			"moved 1; 9 seen and left in the DLQ (not chosen); 5 not reached (past the limit or the canary, or not received by this pass); the DLQ held 15 when the pass began"},
		{"dry run", SelectResult{DryRun: true, Seen: 15, Matched: 4, WouldMove: 4, Released: 15, DepthAtStart: 15},
			"would move 4 (a dry run: nothing moved); 11 seen and left in the DLQ (not chosen); the DLQ held 15 when the pass began"},
		{"effect_unknown not reconciled", SelectResult{Seen: 3, Matched: 1, Moved: 1, NotReconciled: 1, Released: 2, DepthAtStart: 3},
			"moved 1; 1 seen and left in the DLQ (not chosen); 1 chosen and left in the DLQ (below: why); the DLQ held 3 when the pass began"},
		{"depth unknown", SelectResult{Seen: 2, Matched: 2, Moved: 2}, "moved 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, tt.res.Summary())
			assert.NotContains(t, tt.res.Summary(), "released")
		})
	}
}
