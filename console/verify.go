package console

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentdlq/agentdlq/events/agenttask"
	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
)

// ---- verify with the tools ----

// verifyForm is the verify form as shown (on an effect_unknown group's
// page, beside its keys) or submitted.
type verifyForm struct {
	CSRF, Pipeline, Owner string // Owner: the pipeline's, for the hint
	// Reason is the dead letters whose keys are verified (effect_unknown
	// unless the form says otherwise); Fingerprint the group the form was
	// opened from, for the way back.
	Reason, Fingerprint string
	// The submitted values.
	Actor, Why string
}

// verifyData is the verify page: the proposal, or what apply recorded,
// one row a key (redrive.VerifyResult, as `agentdlq ledger verify` prints
// it), or the refusal.
type verifyData struct {
	Form   verifyForm
	Result *redrivetype.VerifyResult
	// Definite counts the proposal's confirmed and no_effect keys: what
	// "Apply the definite ones" records.
	Definite int
	// Partial is the scan's PartialError in words when it saw part of the
	// DLQ: the rows are not every key.
	Partial string
	// Error is a refusal or a failure, in a sentence; Code the refusal's code.
	Error, Code string
	// Note says why no verifier can run here (Config.VerifyNote).
	Note string
	// Job is the verify job the page shows (nil: the form only).
	Job *verifyProgress
}

// verifyJob is a verify run as a job: the form as submitted and, when
// done, Verify's result (the job's err is its error).
type verifyJob struct {
	form  verifyForm
	apply bool
	res   *redrivetype.VerifyResult
}

// verifyProgress is a verify job's state on its page.
type verifyProgress struct {
	Apply, Done       bool
	Started, Finished time.Time
	// Key is the key being verified (from 1) of the Keys the scan found
	// (0 while it scans).
	Key, Keys int
}

// verifyFormOf reads the form; an empty reason is effect_unknown.
func (s *Server) verifyFormOf(r *http.Request, p *pipeline.Pipeline) verifyForm {
	f := verifyForm{CSRF: s.csrf, Pipeline: p.Name, Owner: p.Owner, Reason: r.FormValue("r"), Fingerprint: r.FormValue("fp"),
		Actor: strings.TrimSpace(r.PostFormValue("owner")), Why: strings.TrimSpace(r.PostFormValue("why"))}
	if f.Reason == "" {
		f.Reason = string(deadletter.ReasonEffectUnknown)
	}
	return f
}

// verifyPage shows the verify form.
func (s *Server) verifyPage(w http.ResponseWriter, r *http.Request) {
	p, _, ok := s.pipeline(r)
	if !ok {
		s.notFound(w, r, "No such pipeline.")
		return
	}
	d := verifyData{Form: s.verifyFormOf(r, p), Note: s.cfg.VerifyNote}
	s.render(w, r, http.StatusOK, "verify", page{Title: "Verify " + d.Form.Reason + " with the tools", Nav: "pipeline", P: p, Data: d})
}

// verifyPost starts the tools' verifiers over the keys of the DLQ's
// effect_unknown letters as a job (redrive.Redriver.Verify, the gate and
// the audit of `agentdlq ledger verify`) and redirects to its page, as a
// redrive does: the scan and up to a timeout a verifier run there, not in
// the request. mode=propose changes nothing and its page shows the
// proposal with a button that applies it; mode=apply records the definite
// verdicts as reconciliations (audited as reconcile with the evidence).
// A refusal is audited and shown on the job's page, and changes nothing.
func (s *Server) verifyPost(w http.ResponseWriter, r *http.Request) {
	p, _, ok := s.pipeline(r)
	if !ok {
		s.notFound(w, r, "No such pipeline.")
		return
	}
	f := s.verifyFormOf(r, p)
	mode := r.PostFormValue("mode")
	if mode != "propose" && mode != "apply" {
		d := verifyData{Form: f, Note: s.cfg.VerifyNote, Error: "Verify: mode is " + strconv.Quote(mode) + ", not propose or apply. Nothing was verified or changed."}
		s.render(w, r, http.StatusBadRequest, "verify", page{Title: "Verify " + f.Reason + " with the tools", Nav: "pipeline", P: p, Data: d})
		return
	}
	label := f.Reason
	if f.Fingerprint != "" {
		label += " " + short(f.Fingerprint)
	}
	kind := "verify"
	if mode == "apply" {
		kind = "verify_apply"
	}
	j := s.newJob(kind, p, label, 0)
	j.verify = &verifyJob{form: f, apply: mode == "apply"}
	go s.runVerify(p, j)
	http.Redirect(w, r, "/job?id="+j.ID, http.StatusSeeOther)
}

// runVerify runs Verify as the job j, whose count is the key being
// verified.
func (s *Server) runVerify(p *pipeline.Pipeline, j *Job) {
	ctx := context.Background()
	vj := j.verify
	var res *redrivetype.VerifyResult
	rd, err := s.redriver(ctx, p, nil)
	if err == nil {
		_, _ = rd.Identify(ctx) // the caller on every record, as reconcile's
		res, err = rd.Verify(ctx, redrive.VerifyRequest{Who: redrive.Who{Owner: vj.form.Actor, Why: vj.form.Why},
			Reason: deadletter.Reason(vj.form.Reason), Apply: vj.apply, OnKey: j.progress})
	}
	j.mu.Lock()
	vj.res = res
	j.mu.Unlock()
	j.finish(err)
}

// verifyJobPage shows a verify job: its progress while it runs (the page
// reloads itself), then the proposal, the applied result or the refusal.
// It only reads the job: a reload runs nothing again.
func (s *Server) verifyJobPage(w http.ResponseWriter, r *http.Request, p *pipeline.Pipeline, j *Job) {
	j.mu.Lock()
	vj := *j.verify
	prog := &verifyProgress{Apply: vj.apply, Done: j.done, Started: j.Started, Finished: j.finished, Key: j.count, Keys: j.total}
	err := j.err
	j.mu.Unlock()
	d := verifyData{Form: vj.form, Note: s.cfg.VerifyNote, Job: prog}
	pg := page{Title: "Verify " + vj.form.Reason + " with the tools", Nav: "pipeline", P: p, Data: &d}
	if !prog.Done {
		pg.Refresh = 1
		s.render(w, r, http.StatusOK, "verify", pg)
		return
	}
	res := vj.res
	var pe *redrivetype.PartialError
	switch {
	case errors.Is(err, redrive.ErrRefused):
		d.Code = string(redrive.RefusalCode(err))
		d.Error = "Verify refused " + refusalText(err) + ". Nothing was verified or changed."
		res = nil
	case errors.As(err, &pe):
		// What was seen was verified (and, with apply, reconciled): shown,
		// and said to be part of the DLQ only.
		d.Partial = pe.Error()
		if err != error(pe) {
			// Something else failed beside it: the audit record was not
			// written (redrive.Redriver.record joins its failure).
			d.Error = "Verify failed: " + err.Error()
		}
	case err != nil:
		// The ledger or the audit could not be reached: with apply, the keys
		// before the failure may have been reconciled (their rows say so).
		d.Error = "Verify failed: " + err.Error()
	}
	d.Result = res
	if res != nil && !res.Applied {
		d.Definite = res.Counts[string(agenttask.VerdictConfirmed)] + res.Counts[string(agenttask.VerdictNoEffect)]
	}
	s.render(w, r, http.StatusOK, "verify", pg)
}
