package eval

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/store"
)

// newFakeS3 serves gofakes3 in-process and returns a real S3 client for it.
func newFakeS3(t *testing.T) *s3.Client {
	t.Helper()
	srv := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
	t.Cleanup(srv.Close)
	return s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
	})
}

func TestExportS3(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	api := newFakeS3(t)
	_, err := api.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("evals")})
	require.NoError(t, err)
	dest, err := store.Parse("s3://evals/datasets", api)
	require.NoError(t, err)
	p := testPipeline(t, false)

	r := triage.Build(tagAll(fixture(t)), p, t0)
	res, err := Export(ctx, dest, r, p, t0)
	require.NoError(t, err)
	assert.Equal(t, 5, res.Exported)
	out, err := api.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("evals"), Key: aws.String("datasets/" + res.RecordsKey)})
	require.NoError(t, err)
	defer out.Body.Close()
	assert.True(t, strings.HasPrefix(res.RecordsKey, "agent-tasks/2026-11-29/"), "one prefix per pipeline and date")

	got, err := existingIDs(ctx, dest, "agent-tasks")
	require.NoError(t, err)
	assert.Len(t, got, 5)
	for _, id := range res.IDs {
		assert.True(t, got[id])
	}
	res2, err := Export(ctx, dest, triage.Build(tagAll(fixture(t)), p, t0), p, t0)
	require.NoError(t, err)
	assert.Equal(t, 0, res2.Exported)
	assert.Equal(t, 5, res2.AlreadyExported)

	keys, err := dest.List(ctx, "agent-tasks/")
	require.NoError(t, err)
	assert.Len(t, keys, 3, "one records file, two manifests")
}

func TestExportS3MissingBucket(t *testing.T) {
	t.Parallel()
	api := newFakeS3(t)
	dest, err := store.Parse("s3://no-such-bucket/x", api)
	require.NoError(t, err)
	p := testPipeline(t, false)
	r := triage.Build(tagAll(fixture(t)), p, t0)
	_, err = Export(context.Background(), dest, r, p, t0)
	require.ErrorIs(t, err, errExport)
	assert.Contains(t, err.Error(), "s3://no-such-bucket/x/")
	assert.True(t, r.Partial)
}
