package loadbench_test

import (
	"bytes"
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/bench/chaos"
	"github.com/agentdlq/agentdlq/bench/loadbench"
	"github.com/agentdlq/agentdlq/local/workload"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/testkit/localtest"
)

func agentTasks(t *testing.T) *pipeline.Pipeline {
	t.Helper()
	f, err := pipeline.Load("../../" + pipeline.DefaultFile)
	require.NoError(t, err)
	p, err := f.Get("agent-tasks")
	require.NoError(t, err)
	return workload.Quick(p)
}

// A small run of the bench on the emulators: every message sent is
// accounted for (the sum holds), no effect was repeated, and the figures
// are printed. Lost and poison-invocation figures are the bench's musts,
// reported in Failures; a small run on fauxqs can show a lost/extra pair (a
// send whose id the emulator reported otherwise; main's bench shows it
// too), so this test leaves them to the bench's own exit status.
func TestRunOnEmulators(t *testing.T) {
	t.Parallel()
	cfg := localtest.AWS(t)
	type tick struct {
		deleted, sent int
		done          bool
	}
	var (
		mu    sync.Mutex
		ticks []tick
	)
	res, err := loadbench.Run(context.Background(), loadbench.Config{AWS: cfg, Pipeline: agentTasks(t), Tasks: 120, Seed: 1,
		Pollers: 4, RawMessages: 50, Run: localtest.Unique("lb"),
		Drained: func(deleted, sent int, done bool) {
			mu.Lock()
			ticks = append(ticks, tick{deleted, sent, done})
			mu.Unlock()
		}})
	require.NoError(t, err)
	// The drain reported its progress, ending with one final report.
	require.NotEmpty(t, ticks)
	last := ticks[len(ticks)-1]
	assert.True(t, last.done, "the last report is the drain's end")
	assert.Equal(t, 120, last.sent)
	assert.Positive(t, last.deleted, "records were acknowledged")
	for i, tk := range ticks {
		assert.Equal(t, i == len(ticks)-1, tk.done, "report %d", i)
		if i > 0 {
			assert.GreaterOrEqual(t, tk.deleted, ticks[i-1].deleted, "the count never goes back")
		}
	}
	assert.Equal(t, 120, res.Tasks)
	assert.Equal(t, 4, res.Pollers)
	assert.True(t, res.AddsUp(), res.Line())
	assert.Zero(t, res.DuplicateEffects, "no effect repeated, per the ledger")
	assert.Positive(t, res.PoisonInvocations.Messages, "the mix holds poison")
	assert.Positive(t, res.RawMsgsPerSec)
	var out bytes.Buffer
	res.Print(&out)
	assert.Contains(t, out.String(), "duplicate side effects 0 (must be 0, per the ledger)")
	assert.Contains(t, out.String(), "handler invocations per poison message")
}

func TestRunRefusesBadConfig(t *testing.T) {
	t.Parallel()
	fifo := agentTasks(t)
	fifo.FIFO = true
	tests := []struct {
		name string
		cfg  loadbench.Config
		want string // a fragment of the error
	}{
		{name: "no pipeline", cfg: loadbench.Config{Tasks: 1}, want: "Pipeline is required"},
		{name: "FIFO", cfg: loadbench.Config{Pipeline: fifo, Tasks: 1}, want: "standard pipelines"},
		{name: "no tasks", cfg: loadbench.Config{Pipeline: agentTasks(t)}, want: "Tasks must be at least 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := loadbench.Run(context.Background(), tt.cfg)
			assert.ErrorContains(t, err, tt.want)
		})
	}
}

// make test's one toxic scenario: a few hundred tasks through a proxy that
// resets a fifth of the worker's SQS requests at their response (a
// ReceiveMessage whose messages are then hidden for the visibility timeout,
// a DeleteMessageBatch or a DLQ send the worker cannot tell happened).
// Nothing may be lost, no side effect may happen twice, and the network must
// have broken some exchanges (else the scenario tested nothing). The
// visibility timeout is cut to 10 s (the worker's timeout to 3 s, over its
// 2 s deadline margin) so that hidden messages come back soon.
// make bench-chaos runs every toxic over 20,000 tasks.
func TestRunUnderChaos(t *testing.T) {
	t.Parallel()
	cfg := localtest.AWS(t)
	p := agentTasks(t)
	p.WorkerTimeoutSeconds, p.VisibilityTimeoutSeconds = 3, 10
	toxic := chaos.Scenarios["reset"]
	toxic.Toxicity = 0.2
	res, err := loadbench.Run(context.Background(), loadbench.Config{AWS: cfg, Pipeline: p, Tasks: 240, Seed: 2, Pollers: 4, RawMessages: 20,
		Run: localtest.Unique("lbc"), Chaos: &toxic, ChaosName: "reset", ChaosPath: "sqs", ChaosUpstream: os.Getenv(localtest.EnvSQS)})
	require.NoError(t, err)
	assert.Equal(t, "reset on sqs", res.Chaos)
	assert.Positive(t, res.ChaosBroken, "the toxic broke exchanges (of %d)", res.ChaosRequests)
	assert.Zero(t, res.Lost, "lost: %v", res.LostDetail)
	assert.Greater(t, res.Processed, res.Tasks/2, "most of the mix is processed: %s", res.Line())
	assert.Zero(t, res.DuplicateEffects, "duplicate side effects")
	assert.True(t, res.AddsUp(), "every message accounted for: %s", res.Line())
	assert.GreaterOrEqual(t, res.Receives, res.Tasks, "every message was received")
	t.Logf("%s; network broke %d of %d exchanges; %d extra receives, %.0f messages/s active",
		res.Line(), res.ChaosBroken, res.ChaosRequests, res.ExtraReceives, res.ActiveMsgsPerSec)
}

// A cost mix counts the drain's AWS calls at its clients: the mapping's
// receives and deletes, the worker's ledger writes with the capacity
// DynamoDB reported (dynalite computes it as DynamoDB does), its log
// bytes; the ledger's items are sized, and the counts are priced.
func TestRunCountsRequests(t *testing.T) {
	t.Parallel()
	cfg := localtest.AWS(t)
	res, err := loadbench.Run(context.Background(), loadbench.Config{AWS: cfg, Pipeline: agentTasks(t), Tasks: 100, Seed: 3, Mix: "mostly-ok",
		NoRawRates: true, IdleTimeout: 5 * time.Second, Pollers: 4, Run: localtest.Unique("lbc")})
	require.NoError(t, err)
	require.Zero(t, res.Lost)
	q := res.Requests
	require.NotNil(t, q)
	assert.Equal(t, "mostly-ok", q.Mix)
	ops := map[string]loadbench.OpCount{}
	for _, o := range q.Ops {
		ops[o.Role+" "+o.Service+" "+o.Operation] = o
	}
	recv, del, upd := ops["mapping SQS ReceiveMessage"], ops["mapping SQS DeleteMessageBatch"], ops["worker DynamoDB UpdateItem"]
	assert.Positive(t, recv.Calls)
	assert.EqualValues(t, res.Receives, recv.Entries, "every delivery came through the counted receive")
	assert.Positive(t, del.Entries)
	// One ledger write a processed read-only task (CompleteReadOnly), three
	// a mutating one (Begin, StartEffect, Complete), one unit each: the
	// items are under 1 KB, and DynamoDB's reported units say so. A call
	// that failed (on a loaded machine the emulator can time out) reports
	// no capacity: the units are those of the calls that answered.
	answered := upd.Calls - upd.Errors + upd.ConditionFailed // a refused condition answered (and is billed)
	assert.GreaterOrEqual(t, answered, int64(res.Processed), "%+v", upd.Stats)
	assert.InDelta(t, float64(answered), upd.WriteUnits+float64(upd.ConditionFailed), 0.5, "%+v", upd.Stats)
	assert.Positive(t, q.Items.Count)
	assert.Zero(t, q.Items.Over1KB)
	assert.Positive(t, q.LogBytes)
	if upd.Errors == 0 {
		assert.InDelta(t, 1.1, q.PerTask.WriteUnits, 0.3)
	}
	assert.Positive(t, q.Cost.DynamoDB)
	assert.InDelta(t, q.Cost.SQS+q.Cost.DynamoDB+q.Cost.S3+q.Cost.LambdaRequests+q.Cost.LambdaDuration+q.Cost.Logs, q.Cost.Total, 1e-9)
	assert.Positive(t, q.PowertoolsCost.Total)
	require.Len(t, q.Options, 2)
	var out bytes.Buffer
	res.Print(&out)
	assert.Contains(t, out.String(), "requests per 1,000 tasks (mostly-ok mix")
}

// The outage mix: search-api is down for the drain, so its tasks end
// dependency_open after their receives; then it is back up, the dead
// letters are redriven with the gated selective redrive and processed, and
// that phase is counted apart (the redrive's own calls under "redrive").
func TestRunOutageRecovers(t *testing.T) {
	t.Parallel()
	cfg := localtest.AWS(t)
	res, err := loadbench.Run(context.Background(), loadbench.Config{AWS: cfg, Pipeline: agentTasks(t), Tasks: 40, Seed: 5, Mix: "outage",
		NoRawRates: true, IdleTimeout: 8 * time.Second, Pollers: 4, Run: localtest.Unique("lbo")})
	require.NoError(t, err)
	require.Zero(t, res.Lost)
	assert.Equal(t, 20, res.ByReason["dependency_open"], "half the outage mix calls search-api: %s", res.Line())
	require.NotNil(t, res.Recovery)
	assert.Equal(t, 20, res.Recovery.Moved)
	roles := map[string]bool{}
	for _, o := range res.Recovery.Ops {
		roles[o.Role+" "+o.Service+" "+o.Operation] = true
	}
	assert.True(t, roles["redrive SQS SendMessage"] || roles["redrive SQS SendMessageBatch"], "the redrive's sends are counted: %v", roles)
	assert.True(t, roles["worker DynamoDB UpdateItem"], "the tasks were processed again: %v", roles)
	assert.Positive(t, res.Recovery.Cost.Total)
}
