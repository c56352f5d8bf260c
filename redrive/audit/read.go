package audit

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// S3ReadAPI is the S3 calls that read an S3 audit store back (`redrive
// plan` and `reject` show the decisions already taken).
type S3ReadAPI interface {
	ListObjectsV2(ctx context.Context, params *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	GetObject(ctx context.Context, params *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

// Reader is a Store that can be read back. FileStore and S3Store (with
// ReadAPI) are.
type Reader interface {
	// Entries returns the pipeline's records of the given actions (all
	// actions when none is given), oldest first.
	Entries(ctx context.Context, pipelineName string, actions ...Action) ([]Entry, error)
}

// ErrUnreadable is returned when the audit store cannot be read back (a store that
// only appends, or an S3 store without a reading client).
var ErrUnreadable = errors.New("the audit store cannot be read back")

// Entries reads the pipeline's records of the given actions back from the
// store (see Reader).
func (a *Auditor) Entries(ctx context.Context, pipelineName string, actions ...Action) ([]Entry, error) {
	rd, ok := a.Store.(Reader)
	if !ok {
		return nil, ErrUnreadable
	}
	return rd.Entries(ctx, pipelineName, actions...)
}

// Entries implements Reader: the file's lines of the pipeline, oldest
// first. A missing file holds no record; a line that is not a record is an
// error naming its line number.
func (s *FileStore) Entries(_ context.Context, pipelineName string, actions ...Action) ([]Entry, error) {
	all, err := s.Read(false)
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, e := range all {
		if e.Pipeline == pipelineName && wanted(e.Action, actions) {
			out = append(out, e)
		}
	}
	sortEntries(out)
	return out, nil
}

// Read returns every record of the file, in file order; a missing file
// holds none. A line that is not a record (not JSON, or no action) is an
// error naming its line number, unless lenient, which skips it (the
// console's audit page shows what it can).
func (s *FileStore) Read(lenient bool) ([]Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := os.Open(s.Path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // only read
	var out []Entry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for n := 1; sc.Scan(); n++ {
		if len(strings.TrimSpace(sc.Text())) == 0 {
			continue
		}
		var e Entry
		err := json.Unmarshal(sc.Bytes(), &e)
		if err == nil && e.Action == "" {
			err = errors.New("a record without an action")
		}
		if err != nil {
			if lenient {
				continue
			}
			return nil, fmt.Errorf("%s line %d: %w", s.Path, n, err)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("%s: %w", s.Path, err)
	}
	return out, nil
}

func wanted(a Action, actions []Action) bool { return len(actions) == 0 || slices.Contains(actions, a) }

func sortEntries(es []Entry) {
	sort.SliceStable(es, func(i, j int) bool { return es[i].Time.Before(es[j].Time) })
}

// Entries implements Reader: it lists <prefix>/<pipeline>/audit/ and
// reads only the objects whose key names one of actions (S3Store.Append
// puts the action in the key), so that the many plan and status records
// cost no read.
func (s *S3Store) Entries(ctx context.Context, pipelineName string, actions ...Action) ([]Entry, error) {
	if s.ReadAPI == nil {
		return nil, ErrUnreadable
	}
	prefix := pipelineName + "/audit/"
	if s.Prefix != "" {
		prefix = strings.TrimSuffix(s.Prefix, "/") + "/" + prefix
	}
	var out []Entry
	p := s3.NewListObjectsV2Paginator(s.ReadAPI, &s3.ListObjectsV2Input{Bucket: aws.String(s.Bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list s3://%s/%s: %w", s.Bucket, prefix, err)
		}
		for _, o := range page.Contents {
			key := aws.ToString(o.Key)
			if len(actions) > 0 && !slices.ContainsFunc(actions, func(a Action) bool { return strings.Contains(key, "-"+string(a)+"-") }) {
				continue
			}
			obj, err := s.ReadAPI.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String(key)})
			if err != nil {
				return nil, fmt.Errorf("get s3://%s/%s: %w", s.Bucket, key, err)
			}
			body, err := io.ReadAll(io.LimitReader(obj.Body, 4*1024*1024))
			obj.Body.Close()
			if err != nil {
				return nil, fmt.Errorf("read s3://%s/%s: %w", s.Bucket, key, err)
			}
			var e Entry
			if err := json.Unmarshal(body, &e); err != nil {
				return nil, fmt.Errorf("s3://%s/%s: %w", s.Bucket, key, err)
			}
			if e.Pipeline == pipelineName && wanted(e.Action, actions) {
				out = append(out, e)
			}
		}
	}
	sortEntries(out)
	return out, nil
}
