package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeS3 is an S3API that must not be called (for parsing tests).
type fakeS3 struct{ S3API }

func TestParse(t *testing.T) {
	t.Parallel()
	d, err := Parse("s3://bucket/evals/prod/", &fakeS3{})
	require.NoError(t, err)
	assert.Equal(t, "s3://bucket/evals/prod/", d.String())
	d, err = Parse("s3://bucket", &fakeS3{})
	require.NoError(t, err)
	assert.Equal(t, "s3://bucket/", d.String())
	d, err = Parse("./out/evals", nil)
	require.NoError(t, err)
	assert.Equal(t, Folder{Root: "./out/evals"}, d)
	for _, bad := range []string{"s3://", "https://x/y", " "} {
		_, err := Parse(bad, &fakeS3{})
		assert.ErrorIs(t, err, ErrBadDestination, bad)
	}
	_, err = Parse("s3://b/p", nil)
	assert.ErrorIs(t, err, ErrBadDestination)
}

// A folder writes whole files, lists keys under a prefix in order, and
// refuses a key that would leave its root.
func TestFolder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := Folder{Root: t.TempDir()}
	require.NoError(t, f.Put(ctx, "p/reports/b.json", []byte("b"), "application/json"))
	require.NoError(t, f.Put(ctx, "p/reports/a.json", []byte("a"), "application/json"))
	require.NoError(t, f.Put(ctx, "q/x", []byte("x"), ""))
	keys, err := f.List(ctx, "p/")
	require.NoError(t, err)
	assert.Equal(t, []string{"p/reports/a.json", "p/reports/b.json"}, keys)
	got, err := f.Get(ctx, "p/reports/a.json")
	require.NoError(t, err)
	assert.Equal(t, "a", string(got))
	assert.Error(t, f.Put(ctx, "../escape", []byte("x"), ""))
	_, err = os.Stat(filepath.Join(filepath.Dir(f.Root), "escape"))
	assert.ErrorIs(t, err, os.ErrNotExist)
	empty, err := Folder{Root: filepath.Join(t.TempDir(), "none")}.List(ctx, "")
	require.NoError(t, err)
	assert.Empty(t, empty, "a folder not written yet holds nothing")
}
