package loadbench

import (
	"testing"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/capacity"
	"github.com/agentdlq/agentdlq/local/workload"
)

// The cost mixes hold their kinds in the stated proportions, and every
// duplicate reuses the key of an earlier valid task.
func TestMakeMixProportions(t *testing.T) {
	for name, parts := range Mixes {
		total := 0
		for _, p := range parts {
			total += p.n
		}
		require.Equal(t, 100, total, "%s: proportions per 100", name)
		tasks, err := MakeMix(name, "t", 1000, 7)
		require.NoError(t, err)
		counts := kindCounts(tasks)
		keys := map[string]bool{}
		for _, task := range tasks {
			if task.Kind == workload.OK {
				keys[task.Key] = true
			}
		}
		for _, p := range parts {
			if p.kind == workload.Duplicate || p.kind == workload.OK {
				continue // a duplicate with nothing before it becomes ok
			}
			assert.Equal(t, 10*p.n, counts[p.kind], "%s: %s", name, p.kind)
		}
		assert.Equal(t, 10*total, len(tasks))
		for _, task := range tasks {
			if task.Kind == workload.Duplicate {
				assert.True(t, keys[task.Key], "%s: a duplicate reuses a valid task's key", name)
			}
		}
	}
	_, err := MakeMix("nope", "t", 10, 1)
	require.Error(t, err)
	demo, err := MakeMix("demo", "t", 100, 1)
	require.NoError(t, err)
	assert.Equal(t, workload.Mix("t", 100, 1), demo)
}

// ItemSize counts attribute names and values as DynamoDB does.
func TestItemSize(t *testing.T) {
	item := map[string]ddbtypes.AttributeValue{
		"pk":    &ddbtypes.AttributeValueMemberS{Value: "acme:run-1:task-1"}, // 2 + 17
		"count": &ddbtypes.AttributeValueMemberN{Value: "12345"},             // 5 + 4
		"ok":    &ddbtypes.AttributeValueMemberBOOL{Value: true},             // 2 + 1
		"m": &ddbtypes.AttributeValueMemberM{Value: map[string]ddbtypes.AttributeValue{ // 1 + 3 + (1 + 1 + 1)
			"a": &ddbtypes.AttributeValueMemberS{Value: "x"},
		}},
	}
	assert.Equal(t, 19+9+3+7, ItemSize(item))
}

// The Powertools model's arithmetic: 2 writes for a valid task, 1 for a
// duplicate, 4 for a transient that recovers on its second receive, and
// put+delete on each of maxReceiveCount receives for a failure with a key.
func TestPowertoolsModel(t *testing.T) {
	tasks := []workload.Task{{Kind: workload.OK}, {Kind: workload.Duplicate}, {Kind: workload.TransientRecovers}, {Kind: workload.AuthConfig}, {Kind: workload.JSONInvalid}}
	pt := powertoolsModel(tasks, capacity.PerTask{BilledMsPerInvocation: 25}, 4)
	// writes: 2 + 1 + 4 + 8 + 0 = 15; deliveries: 1 + 1 + 2 + 4 + 4 = 12
	assert.InDelta(t, 15.0/5, pt.WriteUnits, 1e-9)
	assert.InDelta(t, 12.0/5/10, pt.Invocations, 1e-9)
	assert.InDelta(t, 12.0/5*2/10, pt.SQSRequests, 1e-9)
	assert.Equal(t, 25.0, pt.BilledMsPerInvocation)
}

// A small run keeps the mix's proportions (a cost run of 40 tasks is half
// outage, not 40 valid tasks).
func TestMakeMixSmall(t *testing.T) {
	tasks, err := MakeMix("outage", "t", 40, 5)
	require.NoError(t, err)
	assert.Equal(t, 20, kindCounts(tasks)[workload.DependencyOpen])
	tasks, err = MakeMix("mostly-ok", "t", 7, 5)
	require.NoError(t, err)
	assert.Len(t, tasks, 7)
}
