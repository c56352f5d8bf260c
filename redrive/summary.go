package redrive

import (
	"fmt"
	"strings"
)

// Summary says a pass's counts in an operator's words, against the DLQ's
// depth when the pass began, as the CLI prints it and the console's job page
// shows it:
//
//	moved 1; 9 seen and left in the DLQ (not chosen); 5 not reached; the DLQ held 15 when the pass began
//
// "Not chosen" is a letter of another reason or group, or one the filter
// left; "chosen and left" is one the pass chose but did not move (an
// effect_unknown letter not reconciled as no effect, a claim check that
// restored nothing, a failed send: the lines after the summary say which);
// "not reached" is what the DLQ held that the pass never looked at (past
// the limit or the canary, or not received by this pass: a rerun goes on).
func (res *SelectResult) Summary() string {
	var parts []string
	skipped := res.EffectConfirmed + res.NotReconciled
	if res.DryRun {
		parts = append(parts, fmt.Sprintf("would move %d (a dry run: nothing moved)", res.WouldMove))
	} else {
		parts = append(parts, fmt.Sprintf("moved %d", res.Moved))
	}
	if n := res.Seen - res.Matched - skipped; n > 0 {
		parts = append(parts, fmt.Sprintf("%d seen and left in the DLQ (not chosen)", n))
	}
	chosenLeft := res.Matched - res.Moved + skipped
	what := "%d chosen and left in the DLQ (below: why)"
	if res.DryRun {
		chosenLeft = res.Matched - res.WouldMove + skipped
		what = "%d chosen that would stay in the DLQ (below: why)"
	}
	if chosenLeft > 0 {
		parts = append(parts, fmt.Sprintf(what, chosenLeft))
	}
	if res.DepthAtStart > 0 {
		if n := res.DepthAtStart - res.Seen; n > 0 {
			parts = append(parts, fmt.Sprintf("%d not reached (past the limit or the canary, or not received by this pass)", n))
		}
		parts = append(parts, fmt.Sprintf("the DLQ held %d when the pass began", res.DepthAtStart))
	}
	return strings.Join(parts, "; ")
}
