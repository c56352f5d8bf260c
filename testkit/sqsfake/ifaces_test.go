package sqsfake_test

import (
	"github.com/agentdlq/agentdlq/console"
	"github.com/agentdlq/agentdlq/redrive"
	"github.com/agentdlq/agentdlq/testkit/sqsfake"
	"github.com/agentdlq/agentdlq/triage"
)

// The adapter interfaces the fake serves, one check each: a method added to
// one of them fails here before it fails a test.
var (
	_ triage.ScanAPI = (*sqsfake.Fake)(nil)
	_ redrive.API    = (*sqsfake.Fake)(nil)
	_ console.SQSAPI = (*sqsfake.Fake)(nil)
)
