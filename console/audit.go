package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/agentdlq/agentdlq/redrive/audit"
)

// FileAudit is the local audit log: audit.FileStore's JSONL file, read
// back for the audit page.
type FileAudit struct {
	audit.FileStore
}

// Records reads every entry (none when the file does not exist yet). A line
// that is not an entry is skipped: the page shows what it can.
func (a *FileAudit) Records(_ context.Context) ([]audit.Entry, error) {
	out, err := a.Read(true)
	if err != nil {
		return out, fmt.Errorf("console: audit: %w", err)
	}
	return out, nil
}

// S3ReadAPI is what S3Audit needs to read the audit back.
type S3ReadAPI interface {
	ListObjectsV2(ctx context.Context, params *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	GetObject(ctx context.Context, params *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

// S3Audit is the audit in S3 that `agentdlq redrive --audit s3://bucket/prefix`
// writes (audit.S3Store: one object per entry under
// <prefix>/<pipeline>/audit/, keys in time order). Records reads the newest
// S3AuditLimit entries.
type S3Audit struct {
	audit.S3Store
	Read     S3ReadAPI
	Pipeline string
}

// Entries implements audit.Reader (the past decisions the redrive
// and group pages show: redrive.Redriver.Decisions) with the S3Store's
// ReadAPI, or else Read.
func (a *S3Audit) Entries(ctx context.Context, pipelineName string, actions ...audit.Action) ([]audit.Entry, error) {
	st := audit.S3Store{API: a.API, Bucket: a.Bucket, Prefix: a.Prefix, ReadAPI: a.ReadAPI}
	if st.ReadAPI == nil && a.Read != nil {
		st.ReadAPI = a.Read
	}
	return st.Entries(ctx, pipelineName, actions...)
}

// S3AuditLimit is how many of the newest entries S3Audit.Records reads (one
// GetObject each).
const S3AuditLimit = 500

// Records lists the pipeline's audit objects and reads the newest
// S3AuditLimit of them, a few at a time.
func (a *S3Audit) Records(ctx context.Context) ([]audit.Entry, error) {
	prefix := audit.Name(a.Pipeline) + "/audit/"
	if a.Prefix != "" {
		prefix = strings.TrimSuffix(a.Prefix, "/") + "/" + prefix
	}
	var keys []string
	in := &s3.ListObjectsV2Input{Bucket: aws.String(a.Bucket), Prefix: aws.String(prefix)}
	for {
		out, err := a.Read.ListObjectsV2(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("console: list the audit in s3://%s/%s: %w", a.Bucket, prefix, err)
		}
		for _, o := range out.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
		if !aws.ToBool(out.IsTruncated) || out.NextContinuationToken == nil {
			break
		}
		in.ContinuationToken = out.NextContinuationToken
	}
	slices.Sort(keys)
	if len(keys) > S3AuditLimit {
		keys = keys[len(keys)-S3AuditLimit:]
	}
	out := make([]audit.Entry, len(keys))
	ok := make([]bool, len(keys))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	var mu sync.Mutex
	var errs []error
	for i, k := range keys {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			o, err := a.Read.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(a.Bucket), Key: aws.String(k)})
			if err == nil {
				var data []byte
				data, err = io.ReadAll(o.Body)
				o.Body.Close()
				if err == nil {
					err = json.Unmarshal(data, &out[i])
				}
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s: %w", k, err))
				mu.Unlock()
				return
			}
			ok[i] = true
		}()
	}
	wg.Wait()
	kept := out[:0]
	for i := range out {
		if ok[i] {
			kept = append(kept, out[i])
		}
	}
	if len(errs) > 0 {
		return kept, fmt.Errorf("console: %d audit objects unreadable: %w", len(errs), errors.Join(errs...))
	}
	return kept, nil
}

// newestFirst orders audit entries by time, newest first; entries of the
// same time keep the reverse of their order in the log (later appended first).
func newestFirst(recs []audit.Entry) {
	slices.Reverse(recs)
	slices.SortStableFunc(recs, func(a, b audit.Entry) int { return b.Time.Compare(a.Time) })
}
