package loadbench

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Every completion of a key after its first is a duplicate effect, and so
// is every start after the first of a key that completed; the no-loss and
// the outage bench both fail on this count.
func TestDuplicateEffects(t *testing.T) {
	started := map[string]int{"a": 2, "b": 1, "c": 1}
	completed := map[string]int{"a": 3, "b": 1, "c": 0}
	assert.Equal(t, (3-1)+(2-1), duplicateEffects(started, completed))
	assert.Zero(t, duplicateEffects(map[string]int{"a": 1}, map[string]int{"a": 1}))
}
