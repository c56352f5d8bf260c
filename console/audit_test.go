package console

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/redrive/audit"
)

// Both audit logs read back what redrive's stores wrote, and the page puts
// the newest first.
func TestAuditLogs(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
	t.Cleanup(srv.Close)
	client := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	_, err := client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String("audit")})
	require.NoError(t, err)

	logs := map[string]AuditLog{
		"file": &FileAudit{FileStore: audit.FileStore{Path: filepath.Join(t.TempDir(), "a", "agent-tasks.jsonl")}},
		"s3":   &S3Audit{S3Store: audit.S3Store{API: client, Bucket: "audit", Prefix: "team"}, Read: client, Pipeline: "agent-tasks"},
	}
	for name, log := range logs {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			none, err := log.Records(ctx)
			require.NoError(t, err)
			assert.Empty(t, none, "no audit yet is not an error")
			for i, action := range []audit.Action{audit.ActionPlan, audit.ActionSelect, ActionReveal} {
				require.NoError(t, log.Append(ctx, audit.Entry{Time: t0.Add(time.Duration(i) * time.Second), Actor: "platform-oncall",
					Pipeline: "agent-tasks", Action: action, Outcome: audit.OutcomeOK}))
			}
			recs, err := log.Records(ctx)
			require.NoError(t, err)
			newestFirst(recs)
			require.Len(t, recs, 3)
			assert.Equal(t, []audit.Action{ActionReveal, audit.ActionSelect, audit.ActionPlan}, []audit.Action{recs[0].Action, recs[1].Action, recs[2].Action})

			// The decisions the redrive and group pages show are read back
			// through redrive's reader (audit.Auditor.Entries).
			require.NoError(t, log.Append(ctx, audit.Entry{Time: t0.Add(time.Minute), Actor: "platform-oncall", Pipeline: "agent-tasks",
				Action: audit.ActionReconcile, Outcome: audit.OutcomeOK, Why: "mail log: nothing sent",
				Detail: map[string]string{"idempotency_key": "k-1", "outcome": "no_effect"}}))
			es, err := (&audit.Auditor{Store: log}).Entries(ctx, "agent-tasks", audit.ActionReject, audit.ActionReconcile)
			require.NoError(t, err)
			require.Len(t, es, 1, "only the decisions' actions")
			assert.Equal(t, "mail log: nothing sent", es[0].Why)
		})
	}
}
