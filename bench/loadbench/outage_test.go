package loadbench_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/bench/loadbench"
	"github.com/agentdlq/agentdlq/testkit/localtest"
)

// A short outage with the breaker on, its tolerance longer than the
// outage: the musts of issue 32 that do not depend on the machine's speed
// hold (the healthy half's throughput, which does, is the bench's to
// report, not this test's: its FAIL line in the log, if any, is not this
// test's verdict). Nothing is lost, no effect is repeated, no
// task is dead-lettered, the backlog drains after recovery, and no task
// that needs the dependency spends more than 2 receives of its budget.
func TestRunOutageWithBreaker(t *testing.T) {
	t.Parallel()
	cfg := localtest.AWS(t)
	outage := 15 * time.Second
	p := loadbench.WithOutageBreaker(agentTasks(t), outage)
	require.NoError(t, p.Validate())
	require.Greater(t, p.Breaker.ToleranceSeconds, int(outage.Seconds()), "the tolerance is longer than the outage")
	res, err := loadbench.RunOutage(context.Background(), loadbench.OutageConfig{AWS: cfg, Pipeline: p, Rate: 4,
		Before: 10 * time.Second, Outage: outage, After: 5 * time.Second, Pollers: 4, Run: localtest.Unique("lbout")})
	require.NoError(t, err)
	var out bytes.Buffer
	res.Print(&out)
	t.Log(out.String())

	require.True(t, res.Breaker)
	assert.Equal(t, 120, res.Sent, "4 tasks a second for 30 s")
	assert.Equal(t, 60, res.Affected, "every other task needs the dependency")
	assert.Zero(t, res.Lost, "lost")
	assert.Zero(t, res.DuplicateEffects, "duplicate effects")
	assert.Empty(t, res.Dead, "dead-lettered with the breaker on and the tolerance longer than the outage")
	assert.Zero(t, res.InFlight, "in flight after the drain")
	assert.Equal(t, res.Affected, res.Done["affected"], "every affected task done after recovery")
	assert.Equal(t, res.Healthy, res.Done["healthy"], "every healthy task done")
	assert.NotEmpty(t, res.Transitions, "the breaker opened and closed")
	assert.Positive(t, res.Requeues, "the affected tasks were deferred with uncounted requeues")
}

// The receives: an affected task spends at most 2 of its budget on the
// outage (one failure before the breaker knew, then deferrals that count
// none).
func TestRunOutageReceivesPerAffectedTask(t *testing.T) {
	t.Parallel()
	cfg := localtest.AWS(t)
	outage := 15 * time.Second
	res, err := loadbench.RunOutage(context.Background(), loadbench.OutageConfig{AWS: cfg, Pipeline: loadbench.WithOutageBreaker(agentTasks(t), outage), Rate: 4,
		Before: 10 * time.Second, Outage: outage, After: 5 * time.Second, Pollers: 4, Run: localtest.Unique("lbrcv")})
	require.NoError(t, err)
	var out bytes.Buffer
	res.Print(&out)
	require.Positive(t, res.Done["affected"], "%s", out.String())
	assert.LessOrEqual(t, res.ReceivesMax, 2, "receives spent per affected task: %s", out.String())
}
