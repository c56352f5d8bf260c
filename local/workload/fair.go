package workload

import (
	"encoding/json"

	"github.com/agentdlq/agentdlq/pipeline"
)

// FairQueue returns tasks with each one's TenantGroup set to its tenant
// (the body's "tenant", as pipeline.TenantGroupID admits it) when p makes
// its standard hot queue a fair queue (p.FairQueueTenants()), so that Send
// gives SQS the tenant as MessageGroupId; otherwise tasks as they are. A
// body with no tenant, or one that cannot be a MessageGroupId, is sent
// without one: SQS counts it a tenant of its own. tasks is not modified.
func FairQueue(p *pipeline.Pipeline, tasks []Task) []Task {
	if !p.FairQueueTenants() {
		return tasks
	}
	out := make([]Task, len(tasks))
	for i, t := range tasks {
		t.TenantGroup = pipeline.TenantGroupID(TenantOf(t.Body))
		out[i] = t
	}
	return out
}

// TenantOf is a body's "tenant" string, or "" when the body is not a JSON
// object or has none.
func TenantOf(body string) string {
	var fields struct {
		Tenant any `json:"tenant"`
	}
	if json.Unmarshal([]byte(body), &fields) != nil {
		return ""
	}
	s, _ := fields.Tenant.(string)
	return s
}
