package loadbench_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/internal/loadbench"
	"github.com/agentdlq/agentdlq/internal/localtest"
	"github.com/agentdlq/agentdlq/internal/workload"
	"github.com/agentdlq/agentdlq/pipeline"
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
	res, err := loadbench.Run(context.Background(), loadbench.Config{AWS: cfg, Pipeline: agentTasks(t), Tasks: 120, Seed: 1,
		Pollers: 4, RawMessages: 50, Run: localtest.Unique("lb")})
	require.NoError(t, err)
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
