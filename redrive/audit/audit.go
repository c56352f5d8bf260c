package audit

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Action is what an audit entry records: one redrive action, refused or done.
type Action string

// The audit actions. A refusal is recorded under the action that was refused.
const (
	// ActionPlan: the plan of the DLQ's groups was shown (read only).
	ActionPlan Action = "plan"
	// ActionStart: a native message move task of the whole DLQ was asked for.
	ActionStart Action = "start"
	// ActionSelect: a selective redrive of chosen reasons and fingerprints
	// was asked for (a dry run included).
	ActionSelect Action = "select"
	// ActionCanary: the outcome of a selective redrive's canary messages.
	ActionCanary Action = "canary"
	// ActionStatus: the DLQ's move tasks were listed (read only).
	ActionStatus Action = "status"
	// ActionCancel: the running move task was asked to stop.
	ActionCancel Action = "cancel"
	// ActionReject: the owner recorded that a group is never redriven.
	ActionReject Action = "reject"
	// ActionPause: the worker's event source mapping was disabled (the
	// kill switch): messages wait on the hot queue.
	ActionPause Action = "pause"
	// ActionResume: the worker's event source mapping was enabled again.
	ActionResume Action = "resume"
	// ActionReveal: one dead letter's body was shown unredacted in the
	// console, after the viewer said who and why.
	ActionReveal Action = "reveal"
	// ActionReconcile: the owner recorded what an effect_unknown key's
	// mutating call did (Reconcile): its effect confirmed
	// with a receipt, or no effect. Detail holds idempotency_key, outcome
	// and receipt.
	ActionReconcile Action = "reconcile"
	// ActionRepair: the owner patched one dead letter's task args and sent
	// the repaired task to the hot queue (redrive's Repair), or previewed it
	// (a dry run). Detail holds the patch, the args' and bodies' digests
	// before and after, where the original is kept (evidence), both keys
	// and the hot message id.
	ActionRepair Action = "repair"
	// ActionBreakerOpen: the owner held a dependency's circuit breaker open
	// (package breaker): the tasks that need it are deferred until the
	// owner closes it. Detail holds the dependency and the state before
	// and after.
	ActionBreakerOpen Action = "breaker_open"
	// ActionBreakerClose: the owner closed a dependency's circuit breaker;
	// the tasks come back over its ramp. Detail as breaker_open.
	ActionBreakerClose Action = "breaker_close"
)

// allActions lists every action in the order above.
func allActions() []Action {
	return []Action{ActionPlan, ActionStart, ActionSelect, ActionCanary, ActionStatus, ActionCancel, ActionReject, ActionPause, ActionResume, ActionReveal, ActionReconcile, ActionRepair, ActionBreakerOpen, ActionBreakerClose}
}

// Outcome is what came of an audited action.
type Outcome string

// The audit outcomes. A refusal is recorded under the action that was
// refused, with OutcomeRefused and the one-line reason in Error.
const (
	// OutcomeShown: a read-only action (plan, status) showed its result.
	OutcomeShown Outcome = "shown"
	// OutcomeBegun: a selective redrive began moving; its result follows
	// in a second entry.
	OutcomeBegun Outcome = "begun"
	// OutcomeOK: the action did what it was asked.
	OutcomeOK Outcome = "ok"
	// OutcomeDryRun: a selective redrive's dry run said what would move;
	// nothing moved.
	OutcomeDryRun Outcome = "dry_run"
	// OutcomeFailed: the action failed part way (an SQS or ledger error, or
	// a canary that failed); the entry's counts say what moved.
	OutcomeFailed Outcome = "failed"
	// OutcomeRefused: the gate or the policy refused the action (or its
	// input was bad): nothing moved.
	OutcomeRefused Outcome = "refused"
	// OutcomeStopped: the action was interrupted (its context ended); what
	// moved is counted, and a rerun is safe.
	OutcomeStopped Outcome = "stopped"
	// OutcomePartial: the action saw only part of the DLQ (a selective
	// redrive saw fewer dead letters than the DLQ held, or the scan behind
	// a plan, start or reject was partial); a rerun goes on.
	OutcomePartial Outcome = "partial"
	// OutcomeCanceled: the running move task was cancelled.
	OutcomeCanceled Outcome = "canceled"
)

// allOutcomes lists every audit outcome in the order above.
func allOutcomes() []Outcome {
	return []Outcome{OutcomeShown, OutcomeBegun, OutcomeOK, OutcomeDryRun, OutcomeFailed, OutcomeRefused, OutcomeStopped, OutcomePartial, OutcomeCanceled}
}

// Entry is one audit record: who decided what, when, on which pipeline, why,
// and what came of it.
//
// Actor is who the command said acts (the declared owner; for plan
// and status the OS user when none was given): the gate compares it with
// the pipeline's owner, but anyone can type it. Caller is who ran it as the
// machine knows it: in AWS the STS caller ARN and account, locally (every
// endpoint on this machine) the OS user, and the OS user with check
// "not_checked" for a refusal written before STS was asked. Every record
// the Auditor writes has one; records written before the field existed
// have none (Caller nil), and readers that do not know it ignore it.
type Entry struct {
	Time  time.Time `json:"time"`
	Actor string    `json:"actor"`
	// Caller is set on every record Record writes (see Caller).
	Caller       *Caller        `json:"caller,omitempty"`
	Pipeline     string         `json:"pipeline"`
	Action       Action         `json:"action"`
	Reasons      []string       `json:"reasons,omitempty"`
	Fingerprints []string       `json:"fingerprints,omitempty"`
	Counts       map[string]int `json:"counts,omitempty"`
	Why          string         `json:"why,omitempty"`
	Outcome      Outcome        `json:"outcome"`
	Error        string         `json:"error,omitempty"`
	// Detail holds action-specific facts: the task handle, the destination,
	// the rate, the acknowledgements and overrides.
	Detail map[string]string `json:"detail,omitempty"`
}

// Store appends audit records. Implementations: FileStore, S3Store.
type Store interface {
	Append(ctx context.Context, r Entry) error
}

// Auditor writes every record to its Store and to the log.
type Auditor struct {
	Store  Store
	Logger *slog.Logger // optional: slog.Default()
	Now    func() time.Time
}

// Record stamps r's time and, when unset, its caller (UncheckedCaller: the
// OS user, not checked with STS), logs it and appends it to the store.
func (a *Auditor) Record(ctx context.Context, r Entry) error {
	if r.Caller == nil {
		c := UncheckedCaller()
		r.Caller = &c
	}
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
	// Info, refusals and failures too: the record is in the store, and the
	// caller has the error to show; the line is for a log collector.
	log.InfoContext(ctx, "redrive audit",
		"pipeline", r.Pipeline, "action", r.Action, "actor", r.Actor,
		"caller_check", r.Caller.Check, "caller_arn", r.Caller.ARN, "os_user", r.Caller.OSUser, "outcome", r.Outcome,
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

// Path is the local audit file of a pipeline under root:
// root/audit/<Name>.jsonl (the one layout of the CLI, the console and
// the demo; a name that is not a pipeline name never makes a path).
func Path(root, pipelineName string) string {
	return filepath.Join(root, "audit", Name(pipelineName)+".jsonl")
}

// DefaultPath is the local audit file of a pipeline under ./out.
func DefaultPath(pipelineName string) string { return Path("out", pipelineName) }

// Append implements Store.
func (s *FileStore) Append(_ context.Context, r Entry) error {
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
		_ = f.Close() // the write failed: that error is the one to report
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
	// ReadAPI is optional: it reads the records back (Entries), for the
	// decisions `redrive plan` and `reject` show. Open sets it when
	// its client has the calls (an *s3.Client does).
	ReadAPI S3ReadAPI
}

// Append implements Store.
func (s *S3Store) Append(ctx context.Context, r Entry) error {
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

// pipelineNameRE is what a pipeline name may be (pipeline.Load enforces it
// too); anything else is never made into a path.
var pipelineNameRE = regexp.MustCompile(`^[a-z][a-z0-9-]{1,62}$`)

// Name is the name a pipeline's audit entries are filed under: the
// name itself when it is a valid pipeline name, "_unknown" otherwise (a
// refusal of unchecked input never names a file).
func Name(pipelineName string) string {
	if pipelineNameRE.MatchString(pipelineName) {
		return pipelineName
	}
	return "_unknown"
}

// Open opens the audit store that dest names (see ParseDest):
// a local JSONL file, by default DefaultPath of the pipeline's
// Name, or s3://bucket/prefix, written with s3api (required then).
// logger is optional (slog.Default()).
func Open(dest, pipelineName string, s3api S3PutAPI, logger *slog.Logger) (*Auditor, error) {
	if dest == "" {
		dest = DefaultPath(pipelineName)
	}
	bucket, prefix, path, err := ParseDest(dest)
	if err != nil {
		return nil, err
	}
	if bucket == "" {
		return &Auditor{Store: &FileStore{Path: path}, Logger: logger}, nil
	}
	if s3api == nil {
		return nil, errors.New("an S3 audit store needs an S3 client (AWS configuration)")
	}
	rd, _ := s3api.(S3ReadAPI)
	return &Auditor{Store: &S3Store{API: s3api, Bucket: bucket, Prefix: prefix, ReadAPI: rd}, Logger: logger}, nil
}

// ParseDest splits an audit destination: "s3://bucket/prefix" gives
// bucket and prefix; anything else is a local file path.
func ParseDest(dest string) (bucket, prefix, path string, err error) {
	if rest, ok := strings.CutPrefix(dest, "s3://"); ok {
		bucket, prefix, _ = strings.Cut(rest, "/")
		if bucket == "" {
			return "", "", "", fmt.Errorf("audit destination %q: no bucket", dest)
		}
		return bucket, strings.Trim(prefix, "/"), "", nil
	}
	if strings.TrimSpace(dest) == "" {
		return "", "", "", fmt.Errorf("audit destination: empty")
	}
	return "", "", dest, nil
}
