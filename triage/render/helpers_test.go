package render

import (
	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/dlq"
	"github.com/agentdlq/agentdlq/triage/internal/triagetest"
)

// The shared fixture and helpers (package triagetest), under the names the
// tests of package triage use for theirs (those this package's tests use).
var (
	t0           = triagetest.T0
	testPipeline = triagetest.Pipeline
	fixture      = triagetest.Fixture
	tagAll       = func(msgs []dlq.Message) []dlq.Tagged { return triagetest.TagAll(msgs, triage.Tag) }
)
