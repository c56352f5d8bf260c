package redrive

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/pipeline"
)

// TestEmulatorPerTenantBudget: one tenant's runaway agent filled the DLQ;
// a pass with a per-tenant budget moves at most that many of each tenant,
// so the flood's replay does not crowd the hot queue ahead of the others,
// and the next pass moves the next share. The real worker dead-letters the
// tasks; the redriver is wired as the CLI wires it.
func TestEmulatorPerTenantBudget(t *testing.T) {
	t.Parallel()
	l := newLocal(t, "agent-tasks")
	ctx := context.Background()
	for tenant, n := range map[string]int{"flood": 8, "quiet": 2, "calm": 1} {
		for i := range n {
			var body map[string]any
			key := fmt.Sprintf("%s-%d", tenant, i)
			require.NoError(t, json.Unmarshal([]byte(task(key, "web.search")), &body))
			body["tenant"] = tenant
			body["args"] = map[string]any{"q": key, "fault": map[string]any{"kind": "error", "error": "tool crashed"}}
			b, err := json.Marshal(body)
			require.NoError(t, err)
			in := &sqs.SendMessageInput{QueueUrl: aws.String(l.q.HotURL), MessageBody: aws.String(string(b))}
			if g := pipeline.TenantGroupID(tenant); g != "" {
				in.MessageGroupId = aws.String(g) // as a producer of a fair queue sends it
			}
			_, err = l.client.SendMessage(ctx, in)
			require.NoError(t, err)
		}
	}
	l.work()
	require.Equal(t, 11, l.depth(l.q.DLQURL), "the worker dead-lettered every task")

	r := l.redriver()
	req := SelectRequest{Who: Who{Owner: l.p.Owner, Why: "tool fixed in worker v2"}, Reasons: []deadletter.Reason{deadletter.ReasonUnclassified},
		Ack: Ack{FixDeployed: "worker v2"}, Rate: 200, WaitSeconds: 1, IdleReceives: 3, PerTenant: 2}
	res, err := r.Select(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, 5, res.Moved, "2 of flood, 2 of quiet, 1 of calm")
	assert.Equal(t, 6, res.OverTenantBudget)
	assert.Contains(t, res.Partial, "per-tenant budget of 2 reached")
	assert.Equal(t, 6, l.depth(l.q.DLQURL), "the flood's other six wait for the next pass")

	byTenant := func() map[string]int {
		out := map[string]int{}
		for _, m := range l.drainQueue(l.q.HotURL) {
			var v struct {
				Tenant string `json:"tenant"`
			}
			require.NoError(t, json.Unmarshal([]byte(aws.ToString(m.Body)), &v))
			out[v.Tenant]++
		}
		return out
	}
	assert.Equal(t, map[string]int{"flood": 2, "quiet": 2, "calm": 1}, byTenant())

	res, err = r.Select(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, 2, res.Moved, "the next pass: the flood's next two")
	assert.Equal(t, map[string]int{"flood": 2}, byTenant())
	assert.Equal(t, 4, l.depth(l.q.DLQURL))
	last := l.store.all()[len(l.store.all())-1]
	assert.Equal(t, "2", last.Detail["per_tenant"], "the audit names the budget")
}
