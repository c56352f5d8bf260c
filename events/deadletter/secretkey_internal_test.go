package deadletter

import (
	"strings"
	"testing"
)

// Every term of IsSecretKey holds a trigger of the pair rule: a pair under a
// secret key is never left unread because no trigger fired.
func TestPairTriggersCoverTheTerms(t *testing.T) {
	t.Parallel()
	for _, term := range append(append([]string{}, longTerms...), shortTerms...) {
		covered := false
		for _, tr := range pairTriggers {
			if strings.Contains(term, tr) {
				covered = true
				break
			}
		}
		if !covered {
			t.Errorf("no trigger of the pair rule in %q", term)
		}
	}
}
