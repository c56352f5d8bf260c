package audit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFileStoreAppendsJSONLines(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit", "agent-tasks.jsonl")
	var logBuf bytes.Buffer
	a := &Auditor{Store: &FileStore{Path: path}, Logger: slog.New(slog.NewJSONHandler(&logBuf, nil)),
		Now: func() time.Time { return time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC) }}
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			assert.NoError(t, a.Record(ctx, Entry{Actor: "platform-oncall", Pipeline: "agent-tasks", Action: ActionSelect,
				Reasons: []string{"schema_invalid"}, Counts: map[string]int{"moved": i}, Why: "fix v2", Outcome: OutcomeOK}))
		}()
	}
	wg.Wait()
	require.NoError(t, a.Record(ctx, Entry{Actor: "mallory", Pipeline: "agent-tasks", Action: ActionStart, Outcome: OutcomeRefused, Error: "refused (owner_mismatch): x"}))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer func() { _ = f.Close() }() // only read
	var recs []Entry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r Entry
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r), sc.Text())
		recs = append(recs, r)
	}
	require.Len(t, recs, 21)
	assert.Equal(t, OutcomeRefused, recs[20].Outcome)
	assert.Equal(t, time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC), recs[0].Time)
	// The log got every record too, with the fixed keys.
	assert.Equal(t, 21, bytes.Count(logBuf.Bytes(), []byte(`"msg":"redrive audit"`)))
	assert.Contains(t, logBuf.String(), `"outcome":"refused"`)
}

type fakeS3 struct {
	mu   sync.Mutex
	objs map[string][]byte
}

func (f *fakeS3) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	b, err := io.ReadAll(in.Body)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.objs[aws.ToString(in.Bucket)+"/"+aws.ToString(in.Key)] = b
	return &s3.PutObjectOutput{}, nil
}

func TestS3StoreOneObjectPerRecord(t *testing.T) {
	t.Parallel()
	s := &fakeS3{objs: map[string][]byte{}}
	store := &S3Store{API: s, Bucket: "evals", Prefix: "team/"}
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for range 3 {
		require.NoError(t, store.Append(context.Background(), Entry{Time: at, Pipeline: "agent-tasks", Action: ActionStart, Outcome: OutcomeOK}))
	}
	require.Len(t, s.objs, 3, "records at the same instant never overwrite each other")
	re := regexp.MustCompile(`^evals/team/agent-tasks/audit/2026/11/29/20261129T120000\.000000000Z-start-[0-9a-f]{8}\.json$`)
	for k, v := range s.objs {
		assert.Regexp(t, re, k)
		var r Entry
		require.NoError(t, json.Unmarshal(v, &r))
		assert.Equal(t, ActionStart, r.Action)
	}
}

func TestParseDest(t *testing.T) {
	t.Parallel()
	b, p, path, err := ParseDest("s3://bucket/some/prefix/")
	require.NoError(t, err)
	assert.Equal(t, []string{"bucket", "some/prefix", ""}, []string{b, p, path})
	b, p, path, err = ParseDest("out/audit/x.jsonl")
	require.NoError(t, err)
	assert.Equal(t, []string{"", "", "out/audit/x.jsonl"}, []string{b, p, path})
	_, _, _, err = ParseDest("s3://")
	assert.Error(t, err)
	assert.Equal(t, filepath.Join("out", "audit", "agent-tasks.jsonl"), DefaultPath("agent-tasks"))
	assert.Equal(t, filepath.Join("out", "audit", "_unknown.jsonl"), DefaultPath("../../etc/passwd"), "a path as a pipeline name names no file")
	assert.Equal(t, filepath.Join("/x", "audit", "agent-tasks.jsonl"), Path("/x", "agent-tasks"))
}

func TestAuditStoreFailureIsReturned(t *testing.T) {
	t.Parallel()
	a := &Auditor{Store: failingStore{io.ErrClosedPipe}, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))}
	err := a.Record(context.Background(), Entry{Pipeline: "p", Action: ActionPlan})
	assert.ErrorIs(t, err, io.ErrClosedPipe)
}

// A file audit read back: strictly (Entries, what redrive plan decides
// from) a line that is not a record is an error naming it; leniently (the
// console's audit page) it is skipped and the records around it are kept.
func TestFileStoreRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jsonl")
	s := &FileStore{Path: path}
	got, err := s.Read(false)
	require.NoError(t, err)
	assert.Empty(t, got, "a missing file holds no record")
	ctx := context.Background()
	require.NoError(t, s.Append(ctx, Entry{Pipeline: "agent-tasks", Action: ActionReject, Actor: "alice", Outcome: OutcomeOK}))
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("not json\n\n{\"pipeline\":\"agent-tasks\"}\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.NoError(t, s.Append(ctx, Entry{Pipeline: "other", Action: ActionSelect, Actor: "bob", Outcome: OutcomeOK}))

	_, err = s.Read(false)
	require.ErrorContains(t, err, "line 2")
	_, err = s.Entries(ctx, "agent-tasks")
	require.ErrorContains(t, err, "line 2")
	got, err = s.Read(true)
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, []string{"alice", "bob"}, []string{got[0].Actor, got[1].Actor})
}

// failingStore refuses every record.
type failingStore struct{ err error }

func (f failingStore) Append(context.Context, Entry) error { return f.err }
