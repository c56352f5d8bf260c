package console

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/redrive"
	"github.com/agentdlq/agentdlq/redrive/audit"
)

// A refused redrive's job shows the refusal's next steps as links to the
// forms that take them (the library returns them as data).
func TestJobViewRefusalNext(t *testing.T) {
	rf := &redrive.Refusal{Code: redrive.CodeForbidden, Reason: "schema_invalid needs the deployed fix",
		Next: []redrive.Step{{Action: audit.ActionSelect, Reason: deadletter.ReasonSchemaInvalid, Fingerprint: "fp1", Canary: 2, Needs: []string{"Ack.FixDeployed"}}}}
	j := &Job{ID: "j1", Kind: "redrive", Pipeline: "agent-tasks", err: fmt.Errorf("redrive: %w", rf)}
	v := j.view()
	assert.True(t, v.Refused)
	require.Len(t, v.Next, 1)
	assert.Equal(t, "/redrive?fp=fp1&p=agent-tasks&r=schema_invalid", v.Next[0].Href)
	assert.Contains(t, v.Next[0].Label, "the deployed fix")

	j = &Job{ID: "j2", Kind: "redrive", Pipeline: "agent-tasks", err: fmt.Errorf("plain failure")}
	assert.Empty(t, j.view().Next)
}
