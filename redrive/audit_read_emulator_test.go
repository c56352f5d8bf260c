package redrive

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/testkit/localtest"
)

// TestS3StoreReadsBackOnEmulator: the S3 audit store that audit.Open opens
// with an *s3.Client reads its records back (the local S3), only the
// asked-for actions, oldest first, only the pipeline's.
func TestS3StoreReadsBackOnEmulator(t *testing.T) {
	cfg := localtest.AWS(t)
	bucket := localtest.Bucket(t, cfg)
	ctx := context.Background()
	a, err := audit.Open("s3://"+bucket+"/team", "agent-tasks", s3.NewFromConfig(cfg), nil)
	require.NoError(t, err)
	store, ok := a.Store.(*audit.S3Store)
	require.True(t, ok)
	require.NotNil(t, store.ReadAPI, "an *s3.Client reads too")
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for _, e := range []audit.Entry{
		{Time: t0.Add(3 * time.Second), Pipeline: "agent-tasks", Action: audit.ActionReject, Outcome: audit.OutcomeOK, Why: "second"},
		{Time: t0, Pipeline: "agent-tasks", Action: audit.ActionPlan, Outcome: audit.OutcomeShown},
		{Time: t0.Add(time.Second), Pipeline: "agent-tasks", Action: audit.ActionReject, Outcome: audit.OutcomeOK, Why: "first"},
		{Time: t0.Add(2 * time.Second), Pipeline: "agent-tasks", Action: audit.ActionReconcile, Outcome: audit.OutcomeOK,
			Detail: map[string]string{"idempotency_key": "k1", "outcome": "no_effect"}},
		{Time: t0, Pipeline: "other-pipeline", Action: audit.ActionReject, Outcome: audit.OutcomeOK},
	} {
		require.NoError(t, a.Record(ctx, e))
	}
	es, err := a.Entries(ctx, "agent-tasks", decisionActions()...)
	require.NoError(t, err)
	require.Len(t, es, 3)
	assert.Equal(t, "first", es[0].Why)
	assert.Equal(t, audit.ActionReconcile, es[1].Action)
	assert.Equal(t, "second", es[2].Why)
	all, err := a.Entries(ctx, "agent-tasks")
	require.NoError(t, err)
	assert.Len(t, all, 4, "with no action named, every record of the pipeline")

	d := decisionsFrom(es)
	assert.Len(t, d.Rejections, 2)
	assert.Equal(t, "no_effect", string(d.Reconciled["k1"].Outcome))

	// A store that only appends says so.
	_, err = (&audit.Auditor{Store: &audit.S3Store{API: s3.NewFromConfig(cfg), Bucket: bucket}}).Entries(ctx, "agent-tasks")
	require.ErrorIs(t, err, audit.ErrUnreadable)
}
