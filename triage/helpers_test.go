package triage

import (
	"github.com/agentdlq/agentdlq/triage/internal/triagetest"
)

// The shared fixture and helpers (package triagetest, which does not
// import triage, so that these tests may import it), under the names
// these tests use.
var (
	t0           = triagetest.T0
	quiet        = triagetest.Quiet
	newClock     = triagetest.NewClock
	testPipeline = triagetest.Pipeline
	task         = triagetest.Task
	deadLetter   = triagetest.DeadLetter
	brokerMoved  = triagetest.BrokerMoved
	poisonMeta   = triagetest.PoisonMeta
	fixture      = triagetest.Fixture
)

type (
	fakeClock  = triagetest.Clock
	fakeLedger = triagetest.Ledger
)

var _ KeyReader = fakeLedger(nil)
