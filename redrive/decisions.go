package redrive

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
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/ledger"
)

// AuditReadAPI is the S3 calls that read an S3 audit store back (`redrive
// plan` and `reject` show the decisions already taken).
type AuditReadAPI interface {
	ListObjectsV2(ctx context.Context, params *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	GetObject(ctx context.Context, params *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

// AuditReader is a Store that can be read back. FileStore and S3Store (with
// ReadAPI) are.
type AuditReader interface {
	// Entries returns the pipeline's records of the given actions (all
	// actions when none is given), oldest first.
	Entries(ctx context.Context, pipelineName string, actions ...Action) ([]AuditEntry, error)
}

// ErrAuditUnreadable: the audit store cannot be read back (a store that
// only appends, or an S3 store without a reading client).
var ErrAuditUnreadable = errors.New("the audit store cannot be read back")

// Entries reads the pipeline's records of the given actions back from the
// store (see AuditReader).
func (a *Auditor) Entries(ctx context.Context, pipelineName string, actions ...Action) ([]AuditEntry, error) {
	rd, ok := a.Store.(AuditReader)
	if !ok {
		return nil, ErrAuditUnreadable
	}
	return rd.Entries(ctx, pipelineName, actions...)
}

// Entries implements AuditReader: the file's lines of the pipeline, oldest
// first. A missing file holds no record; a line that is not a record is an
// error naming its line number.
func (s *FileStore) Entries(_ context.Context, pipelineName string, actions ...Action) ([]AuditEntry, error) {
	all, err := s.Read(false)
	if err != nil {
		return nil, err
	}
	var out []AuditEntry
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
func (s *FileStore) Read(lenient bool) ([]AuditEntry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := os.Open(s.Path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []AuditEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for n := 1; sc.Scan(); n++ {
		if len(strings.TrimSpace(sc.Text())) == 0 {
			continue
		}
		var e AuditEntry
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

func sortEntries(es []AuditEntry) {
	sort.SliceStable(es, func(i, j int) bool { return es[i].Time.Before(es[j].Time) })
}

// Entries implements AuditReader: it lists <prefix>/<pipeline>/audit/ and
// reads only the objects whose key names one of actions (S3Store.Append
// puts the action in the key), so that the many plan and status records
// cost no read.
func (s *S3Store) Entries(ctx context.Context, pipelineName string, actions ...Action) ([]AuditEntry, error) {
	if s.ReadAPI == nil {
		return nil, ErrAuditUnreadable
	}
	prefix := pipelineName + "/audit/"
	if s.Prefix != "" {
		prefix = strings.TrimSuffix(s.Prefix, "/") + "/" + prefix
	}
	var out []AuditEntry
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
			var e AuditEntry
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

// Decision is one decision the owner recorded, as the audit holds it.
type Decision struct {
	Time  time.Time `json:"time"`
	Actor string    `json:"actor"`
	Why   string    `json:"why,omitempty"`
}

// KeyDecision is the owner's reconciliation of one idempotency key.
type KeyDecision struct {
	Decision
	Key     string         `json:"idempotency_key"`
	Outcome ledger.Outcome `json:"outcome"`
	Receipt string         `json:"receipt,omitempty"`
}

// Decisions are the owner's decisions on a pipeline's dead letters that
// the audit holds: the rejections and the reconciliations that succeeded.
type Decisions struct {
	// Rejections are the successful rejections, oldest first.
	Rejections []AuditEntry
	// Reconciled is the latest successful reconciliation of each key.
	Reconciled map[string]KeyDecision
}

// DecisionActions are the audit actions Decisions are read from.
func decisionActions() []Action { return []Action{ActionReject, ActionReconcile} }

// DecisionsFrom picks the decisions out of audit records.
func decisionsFrom(entries []AuditEntry) Decisions {
	d := Decisions{Reconciled: map[string]KeyDecision{}}
	es := slices.Clone(entries)
	sortEntries(es)
	for _, e := range es {
		if e.Outcome != OutcomeOK {
			continue
		}
		switch e.Action {
		case ActionReject:
			d.Rejections = append(d.Rejections, e)
		case ActionReconcile:
			k := e.Detail["idempotency_key"]
			if k == "" {
				continue
			}
			d.Reconciled[k] = KeyDecision{Decision: Decision{Time: e.Time, Actor: e.Actor, Why: e.Why}, Key: k,
				Outcome: ledger.Outcome(e.Detail["outcome"]), Receipt: e.Detail["receipt"]}
		}
	}
	return d
}

// Rejection returns the latest rejection that covers the group of reason
// and fingerprint: one that named the reason and either no fingerprint
// (every group of it) or this one.
func (d Decisions) Rejection(reason deadletter.Reason, fingerprint string) (Decision, bool) {
	for i := len(d.Rejections) - 1; i >= 0; i-- {
		e := d.Rejections[i]
		if !slices.Contains(e.Reasons, string(reason)) {
			continue
		}
		if len(e.Fingerprints) == 0 || slices.Contains(e.Fingerprints, fingerprint) {
			return Decision{Time: e.Time, Actor: e.Actor, Why: e.Why}, true
		}
	}
	return Decision{}, false
}

// Decisions reads the pipeline's decisions from the audit store.
func (r *Redriver) Decisions(ctx context.Context) (Decisions, error) {
	es, err := r.cfg.Audit.Entries(ctx, r.cfg.Pipeline.Name, decisionActions()...)
	if err != nil {
		return Decisions{Reconciled: map[string]KeyDecision{}}, err
	}
	return decisionsFrom(es), nil
}

// rejectWarnings says what a rejection of reasons (and fingerprints,
// full ones; none means every group of the reasons) should make the owner
// think twice about: a group already rejected, and a reason the policy
// would let be redriven (now, or after a fix or a review). It is pure.
func rejectWarnings(d Decisions, reasons []deadletter.Reason, fingerprints []string, groups []Group) []string {
	var out []string
	sel := selector{Reasons: reasons, Fingerprints: fingerprints}
	for _, g := range groups {
		if !sel.match(&letter{Reason: g.Reason, Fingerprint: g.Fingerprint}) {
			continue
		}
		if prev, ok := d.Rejection(g.Reason, g.Fingerprint); ok {
			out = append(out, fmt.Sprintf("%s %s was already rejected by %s at %s (%s): this records the decision again",
				g.Reason, orDash(g.Fingerprint), prev.Actor, prev.Time.UTC().Format(time.RFC3339), prev.Why))
		}
	}
	rs := slices.Clone(reasons)
	sort.Slice(rs, func(i, j int) bool { return order(rs[i]) < order(rs[j]) })
	for _, reason := range rs {
		switch reason.Redrivable() {
		case deadletter.RedriveYes:
			out = append(out, fmt.Sprintf("%s may be redriven by policy (%s): a rejection gives up work a redrive could finish", reason, reason.NextAction()))
		case deadletter.RedriveAfterFix:
			out = append(out, fmt.Sprintf("%s may be redriven once the fix is deployed: a rejection gives up work a redrive could finish", reason))
		case deadletter.RedriveAfterReview:
			out = append(out, fmt.Sprintf("%s may be redriven after a review of the logs: a rejection gives up work a redrive could finish", reason))
		}
	}
	return out
}
