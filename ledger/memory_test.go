package ledger_test

import (
	"testing"

	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/ledger/ledgertest"
)

func TestMemoryConformance(t *testing.T) {
	t.Parallel()
	ledgertest.Run(t, func(*testing.T) ledger.Ledger { return ledger.NewMemory() })
}

// One Memory for every subtest: the suite's keys do not collide.
func TestMemoryConformanceShared(t *testing.T) {
	t.Parallel()
	m := ledger.NewMemory()
	ledgertest.Run(t, func(*testing.T) ledger.Ledger { return m })
}

func TestCountingConformance(t *testing.T) {
	t.Parallel()
	ledgertest.Run(t, func(*testing.T) ledger.Ledger { return ledger.NewCounting(ledger.NewMemory()) })
}
