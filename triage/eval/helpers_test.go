package eval

import "github.com/agentdlq/agentdlq/triage/internal/triagetest"

// The shared fixture and helpers (package triagetest), under the names the
// tests of package triage use for theirs.
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
	tagAll       = triagetest.TagAll
	many         = triagetest.Many
)
