package ledger_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/agentdlq/agentdlq/ledger"
)

func TestKeyExample(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "scope:11:agent-tasks:4:acme:acme:run-0042:task-0007", ledger.Key("agent-tasks", "acme", "acme:run-0042:task-0007"))
	for _, k := range []string{"acme:run-0042:task-0007", "scope:", "scope:1:a", "scope:1:a:1:b", "scope:01:a:1:b:k", "scope:2:a:1:b:k", "scope:-1:a:1:b:k"} {
		_, _, _, ok := ledger.ParseKey(k)
		assert.False(t, ok, "%q is not a scoped key", k)
		if k == "acme:run-0042:task-0007" {
			assert.Equal(t, k, ledger.Unscoped(k), "an unscoped key is its own")
		}
	}
	assert.Equal(t, "k", ledger.Unscoped(ledger.Key("p", "t", "k")))
}

// FuzzKey: ParseKey reads back every part Key wrote, so no two different
// (pipeline, tenant, key) make the same ledger key.
func FuzzKey(f *testing.F) {
	f.Add("agent-tasks", "acme", "acme:run-0042:task-0007")
	f.Add("p:4", "acme:", ":k")
	f.Add("", "", "")
	f.Fuzz(func(t *testing.T, pipeline, tenant, key string) {
		p, tn, k, ok := ledger.ParseKey(ledger.Key(pipeline, tenant, key))
		if !ok || p != pipeline || tn != tenant || k != key {
			t.Fatalf("ParseKey(Key(%q, %q, %q)) = %q, %q, %q, %v", pipeline, tenant, key, p, tn, k, ok)
		}
	})
}
