package sampleworker

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/breaker"
	"github.com/agentdlq/agentdlq/internal/sqsio"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/pipeline"
)

// The sample worker reports each task's failure to the breaker with the
// task's tenant: two tasks of one tenant (umbrella-labs) failing on
// search-api reach the threshold and leave it closed (min_tenants 2 by
// default); one task of another tenant (acme-corp) opens it.
func TestWorkerReportsTheTasksTenant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, q := testPipeline(t, false, 4)
	p.Breaker = pipeline.Breaker{Enabled: true, Threshold: 2}
	p.ApplyDefaults()
	p.RetryAfterRequeues = p.Breaker.RequiredRequeues()
	require.NoError(t, p.Validate())
	require.Equal(t, 2, p.Breaker.MinTenants)
	store := breaker.NewMemory()
	w, err := New(Config{Pipeline: p, Queues: q, SQS: &sqsio.Recorder{}, Ledger: ledger.NewMemory(), BreakerStore: store,
		Dependencies: &fakeDeps{down: map[string]bool{"search-api": true}},
		Logger:       slog.New(slog.DiscardHandler), Metrics: io.Discard, Rand: func(int64) int64 { return 0 }})
	require.NoError(t, err)
	fixture, _ := loadEvent(t, "sqs-dependency-open.json")
	umbrella, acme := fixture.Records[0], fixture.Records[1]
	require.Contains(t, umbrella.Body, `"tenant":"umbrella-labs"`)
	require.Contains(t, acme.Body, `"tenant":"acme-corp"`)
	acme.Attributes["ApproximateReceiveCount"] = "1"
	again := umbrella // another task of the same tenant
	again.MessageId, again.ReceiptHandle = again.MessageId+"-2", again.ReceiptHandle+"-2"
	again.Body = strings.ReplaceAll(again.Body, "task-dependency-open-000", "task-dependency-open-100")

	_, err = w.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{umbrella, again}})
	require.NoError(t, err)
	st, err := store.Get(ctx, p.Name, "search-api")
	require.NoError(t, err)
	assert.Contains(t, []breaker.Mode{"", breaker.Closed}, st.Mode, "one tenant's failures leave it closed")
	assert.Equal(t, 2, st.Failures)
	require.Len(t, st.Tenants, 1)
	assert.Equal(t, breaker.TenantHash("umbrella-labs"), st.Tenants[0].Hash, "the task's tenant, hashed")

	_, err = w.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{acme}})
	require.NoError(t, err)
	st, err = store.Get(ctx, p.Name, "search-api")
	require.NoError(t, err)
	assert.Equal(t, breaker.Open, st.Mode, "a second tenant's failure opens it")
}
