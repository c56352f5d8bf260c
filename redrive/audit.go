package redrive

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Audit actions.
const (
	ActionPlan   = "plan"
	ActionStart  = "start"
	ActionSelect = "select"
	ActionCanary = "canary"
	ActionStatus = "status"
	ActionCancel = "cancel"
	ActionReject = "reject"
)

// Audit outcomes. A refusal is recorded under the action that was refused,
// with OutcomeRefused and the one-line reason in Error.
const (
	OutcomeShown    = "shown"
	OutcomeBegun    = "begun"
	OutcomeOK       = "ok"
	OutcomeDryRun   = "dry_run"
	OutcomeFailed   = "failed"
	OutcomeRefused  = "refused"
	OutcomeStopped  = "stopped"
	OutcomePartial  = "partial"
	OutcomeCanceled = "canceled"
)

// Record is one audit record: who decided what, when, on which pipeline, why,
// and what came of it.
type Record struct {
	Time         time.Time      `json:"time"`
	Actor        string         `json:"actor"`
	Pipeline     string         `json:"pipeline"`
	Action       string         `json:"action"`
	Reasons      []string       `json:"reasons,omitempty"`
	Fingerprints []string       `json:"fingerprints,omitempty"`
	Counts       map[string]int `json:"counts,omitempty"`
	Why          string         `json:"why,omitempty"`
	Outcome      string         `json:"outcome"`
	Error        string         `json:"error,omitempty"`
	// Detail holds action-specific facts: the task handle, the destination,
	// the rate, the acknowledgements and overrides.
	Detail map[string]string `json:"detail,omitempty"`
}

// Store appends audit records. Implementations: FileStore, S3Store.
type Store interface {
	Append(ctx context.Context, r Record) error
}

// Auditor writes every record to its Store and to the log.
type Auditor struct {
	Store  Store
	Logger *slog.Logger // optional: slog.Default()
	Now    func() time.Time
}

// Record stamps r's time when unset, logs it and appends it to the store.
func (a *Auditor) Record(ctx context.Context, r Record) error {
	if r.Time.IsZero() {
		now := time.Now
		if a.Now != nil {
			now = a.Now
		}
		r.Time = now().UTC()
	}
	log := a.Logger
	if log == nil {
		log = slog.Default()
	}
	level := slog.LevelInfo
	if r.Outcome == OutcomeRefused || r.Outcome == OutcomeFailed {
		level = slog.LevelWarn
	}
	log.Log(ctx, level, "redrive audit",
		"pipeline", r.Pipeline, "action", r.Action, "actor", r.Actor, "outcome", r.Outcome,
		"reasons", r.Reasons, "fingerprints", r.Fingerprints, "counts", r.Counts,
		"why", r.Why, "error", r.Error)
	if a.Store == nil {
		return fmt.Errorf("audit: no store")
	}
	if err := a.Store.Append(ctx, r); err != nil {
		return fmt.Errorf("audit %s %s: %w", r.Pipeline, r.Action, err)
	}
	return nil
}

// FileStore appends records as JSON lines to one file (created with its
// directory). Safe for concurrent use within a process; each record is one
// write(2) on an O_APPEND file, so concurrent processes do not interleave lines.
type FileStore struct {
	Path string
	mu   sync.Mutex
}

// DefaultAuditPath is the local audit file of a pipeline.
func DefaultAuditPath(pipelineName string) string {
	return filepath.Join("out", "audit", pipelineName+".jsonl")
}

// Append implements Store.
func (s *FileStore) Append(_ context.Context, r Record) error {
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(s.Path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(s.Path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(line); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// S3PutAPI is the S3 call the S3 store makes.
type S3PutAPI interface {
	PutObject(ctx context.Context, params *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
}

// S3Store writes one object per record, under
// <prefix>/<pipeline>/audit/<yyyy>/<mm>/<dd>/<time>-<action>-<random>.json, so
// that records are never overwritten and list in time order.
type S3Store struct {
	API    S3PutAPI
	Bucket string
	Prefix string // optional, without a trailing slash
}

// Append implements Store.
func (s *S3Store) Append(ctx context.Context, r Record) error {
	body, err := json.Marshal(r)
	if err != nil {
		return err
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	t := r.Time.UTC()
	key := fmt.Sprintf("%s/audit/%s/%s-%s-%s.json", r.Pipeline, t.Format("2006/01/02"),
		t.Format("20060102T150405.000000000Z"), r.Action, hex.EncodeToString(rnd[:]))
	if s.Prefix != "" {
		key = strings.TrimSuffix(s.Prefix, "/") + "/" + key
	}
	_, err = s.API.PutObject(ctx, &s3.PutObjectInput{
		Bucket:      aws.String(s.Bucket),
		Key:         aws.String(key),
		Body:        bytes.NewReader(body),
		ContentType: aws.String("application/json"),
	})
	return err
}

// ParseAuditDest splits an --audit destination: "s3://bucket/prefix" gives
// bucket and prefix; anything else is a local file path.
func ParseAuditDest(dest string) (bucket, prefix, path string, err error) {
	if rest, ok := strings.CutPrefix(dest, "s3://"); ok {
		bucket, prefix, _ = strings.Cut(rest, "/")
		if bucket == "" {
			return "", "", "", fmt.Errorf("--audit %q: no bucket", dest)
		}
		return bucket, strings.Trim(prefix, "/"), "", nil
	}
	if strings.TrimSpace(dest) == "" {
		return "", "", "", fmt.Errorf("--audit: empty destination")
	}
	return "", "", dest, nil
}
