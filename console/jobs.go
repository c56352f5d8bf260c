package console

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/render"
	"github.com/agentdlq/agentdlq/triage/report"
)

// Job is a refresh (a triage run), a redrive or a verify that runs after its POST
// returned; its page shows the progress until it is done.
type Job struct {
	ID       string
	Kind     string // "refresh", "dry_run", "redrive", "verify", "verify_apply"
	Pipeline string
	Started  time.Time
	// Label says what the job does ("schema_invalid 3f2a…", "triage").
	Label string

	mu       sync.Mutex
	done     bool
	finished time.Time
	count    int // refresh: letters seen; redrive: letters moved; verify: the key being verified
	total    int // refresh: the DLQ's approximate depth; redrive: the group's count; verify: the keys the scan found
	err      error
	result   *redrive.SelectResult
	report   *report.Report
	// form is a dry run's or a redrive's form as submitted: the job's page
	// links back to it with the values kept.
	form *redriveForm
	// verify is a verify job's form and result ("verify", "verify_apply").
	verify *verifyJob
}

// JobView is a job's state at one moment, for a page.
type JobView struct {
	ID, Kind, Pipeline, Label string
	Started, Finished         time.Time
	Done                      bool
	Count, Total              int
	Error                     string
	Refused                   bool
	RefusalCode               string
	// RefusalReason is the refusal in words, without the code Error
	// repeats ("refused (owner_mismatch): …").
	RefusalReason string
	// Next are the refusal's next steps (redrive.Refusal.Next) as the
	// console offers them: links to the forms that take them.
	Next []stepLink
	// Back is the redrive form's address with the job's values kept ("" for
	// a refresh).
	Back   string
	Result *redrive.SelectResult
	Report *report.Report
}

func (j *Job) view() JobView {
	j.mu.Lock()
	defer j.mu.Unlock()
	v := JobView{ID: j.ID, Kind: j.Kind, Pipeline: j.Pipeline, Label: j.Label, Started: j.Started, Finished: j.finished,
		Done: j.done, Count: j.count, Total: max(j.total, j.count), Result: j.result, Report: j.report}
	if j.err != nil {
		v.Error = j.err.Error()
		v.Refused = errors.Is(j.err, redrive.ErrRefused)
		v.RefusalCode = string(redrive.RefusalCode(j.err))
		v.RefusalReason = v.Error
		var rf *redrive.Refusal
		if errors.As(j.err, &rf) {
			// The refusal without its "refused (code): ", which the page
			// shows once, beside "Refused".
			v.RefusalReason = strings.TrimPrefix(rf.Error(), "refused ("+string(rf.Code)+"): ")
			v.Next = stepLinks(j.Pipeline, rf.Next)
		}
	}
	if j.form != nil {
		q := url.Values{"p": {j.Pipeline}, "r": {j.form.Reason}, "job": {j.ID}}
		if j.form.Fingerprint != "" {
			q.Set("fp", j.form.Fingerprint)
		}
		for k, val := range j.form.Filter {
			q.Set(k, val)
		}
		v.Back = "/redrive?" + q.Encode()
	}
	return v
}

func (j *Job) progress(count, total int) {
	j.mu.Lock()
	j.count = count
	if total > 0 {
		j.total = total
	}
	j.mu.Unlock()
}

func (j *Job) finish(err error) {
	j.mu.Lock()
	j.done, j.err, j.finished = true, err, time.Now()
	j.mu.Unlock()
}

// maxJobs bounds the jobs remembered; the oldest finished ones go first.
const maxJobs = 200

func (s *Server) newJob(kind string, p *pipeline.Pipeline, label string, total int) *Job {
	j := &Job{ID: NewToken()[:16], Kind: kind, Pipeline: p.Name, Label: label, Started: s.cfg.Now(), total: total}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.jobs) >= maxJobs {
		var oldest *Job
		for _, o := range s.jobs {
			if v := o.view(); v.Done && (oldest == nil || v.Started.Before(oldest.Started)) {
				oldest = o
			}
		}
		if oldest != nil {
			delete(s.jobs, oldest.ID)
		}
	}
	s.jobs[j.ID] = j
	return j
}

func (s *Server) job(id string) *Job {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.jobs[id]
}

// refresh runs triage on a pipeline, keeps its report in Reports, and
// replaces the pipeline's snapshot with it and its letters.
func (s *Server) refresh(p *pipeline.Pipeline, j *Job) {
	ctx := context.Background()
	err := func() error {
		q, err := s.cfg.Resolve(ctx, p)
		if err != nil {
			return fmt.Errorf("pipeline %s queues: %w", p.Name, err)
		}
		cfg := triage.Config{Pipeline: p, DLQURL: q.DLQURL, SQS: s.cfg.SQS, Senders: q.Senders,
			Now: s.cfg.Now, Logger: s.log, Scan: triage.ScanOptions{Progress: j.progress}}
		if s.cfg.Reports != nil {
			cfg.Keep = render.KeepIn(s.cfg.Reports)
		}
		if s.cfg.Ledger != nil {
			cfg.Ledger = s.cfg.Ledger
		}
		r, runErr := triage.Run(ctx, cfg)
		if r == nil {
			return runErr
		}
		key := ""
		if len(r.Written) > 0 {
			key = r.Written[0]
		}
		old := s.snapshotOf(p.Name)
		hist := append([]triage.HistoryPoint(nil), old.history...)
		if len(hist) == 0 || key == "" || hist[len(hist)-1].Key != key {
			hist = append(hist, triage.PointOf(r, key))
		}
		if len(hist) > triage.HistoryLimit {
			hist = hist[len(hist)-triage.HistoryLimit:]
		}
		s.mu.Lock()
		s.snaps[p.Name] = newSnapshot(r, key, hist)
		s.mu.Unlock()
		j.mu.Lock()
		j.report, j.count = r, r.Totals.Messages
		j.mu.Unlock()
		return runErr
	}()
	if err != nil {
		s.log.Error("console: refresh", "pipeline", p.Name, "error", err.Error())
	}
	j.finish(err)
}

func (s *Server) snapshotOf(name string) *snapshot {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if sn := s.snaps[name]; sn != nil {
		return sn
	}
	return &snapshot{}
}

// redriver is the pipeline's redrive.Redriver: the gate, the policy, the
// canary and the audit of `agentdlq redrive`.
func (s *Server) redriver(ctx context.Context, p *pipeline.Pipeline, onMove func()) (*redrive.Redriver, error) {
	q, err := s.cfg.Resolve(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("pipeline %s queues: %w", p.Name, err)
	}
	return redrive.New(redrive.Config{
		Pipeline: p, Queues: q, SQS: s.cfg.SQS, STS: s.cfg.STS, Ledger: s.cfg.Ledger, Evidence: s.cfg.Evidence, EvidenceBucket: s.cfg.EvidenceBucket,
		EvidenceWriter: s.cfg.EvidenceWriter, Catalog: s.cfg.Catalog,
		Audit:  &audit.Auditor{Store: s.cfg.Audit(p.Name), Logger: s.log, Now: s.cfg.Now},
		Logger: s.log, Now: s.cfg.Now, OnMove: onMove,
		// Refusals recorded in the form's words, as refusalText shows them.
		FieldNames: func(f string) string { return fieldLabel[f] },
	})
}

// runRedrive runs a selective redrive (or its dry run) as a job.
func (s *Server) runRedrive(p *pipeline.Pipeline, j *Job, req redrive.SelectRequest) {
	ctx := context.Background()
	var res *redrive.SelectResult
	err := func() error {
		var mu sync.Mutex
		moved := 0
		rd, err := s.redriver(ctx, p, func() {
			mu.Lock()
			moved++
			n := moved
			mu.Unlock()
			j.progress(n, 0)
		})
		if err != nil {
			return err
		}
		_, _ = rd.Identify(ctx) // the caller on every record, as reveal's
		res, err = rd.Select(ctx, req)
		return err
	}()
	j.mu.Lock()
	j.result = res
	if res != nil {
		j.count = res.Moved
		if req.DryRun {
			j.count = res.Matched
		}
	}
	j.mu.Unlock()
	j.finish(err)
}
