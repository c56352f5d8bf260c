package console

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agentdlq/agentdlq/events/agenttask"
	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive"
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
	Result *redrive.VerifyResult
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
}

// verifyKept is an applied verification, kept for the page its POST
// redirects to (post/redirect/get, as reconcile's), for reconcileKeep.
type verifyKept struct {
	res     *redrive.VerifyResult
	partial string
	at      time.Time
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

// verifyPage shows the verify form or, with done, what an apply recorded.
func (s *Server) verifyPage(w http.ResponseWriter, r *http.Request) {
	p, _, ok := s.pipeline(r)
	if !ok {
		s.notFound(w, r, "No such pipeline.")
		return
	}
	d := verifyData{Form: s.verifyFormOf(r, p), Note: s.cfg.VerifyNote}
	if k, ok := s.takeVerified(r.FormValue("done")); ok {
		d.Result, d.Partial = k.res, k.partial
	}
	s.render(w, r, http.StatusOK, "verify", page{Title: "Verify " + d.Form.Reason + " with the tools", Nav: "pipeline", P: p, Data: d})
}

// verifyPost runs the tools' verifiers over the keys of the DLQ's
// effect_unknown letters: redrive.Redriver.Verify, the gate and the audit
// of `agentdlq ledger verify`. mode=propose changes nothing and shows the
// proposal with a button that applies it; mode=apply records the definite
// verdicts as reconciliations (audited as reconcile with the evidence)
// and redirects to the page that shows them. A refusal is audited there
// and shown here (422), and changes nothing.
func (s *Server) verifyPost(w http.ResponseWriter, r *http.Request) {
	p, _, ok := s.pipeline(r)
	if !ok {
		s.notFound(w, r, "No such pipeline.")
		return
	}
	f := s.verifyFormOf(r, p)
	apply := r.PostFormValue("mode") == "apply"
	d := verifyData{Form: f, Note: s.cfg.VerifyNote}
	ctx := r.Context()
	rd, err := s.redriver(ctx, p, nil)
	var res *redrive.VerifyResult
	if err == nil {
		_, _ = rd.Identify(ctx) // the caller on every record, as reconcile's
		res, err = rd.Verify(ctx, redrive.VerifyRequest{Who: redrive.Who{Owner: f.Actor, Why: f.Why},
			Reason: deadletter.Reason(f.Reason), Apply: apply})
	}
	var pe *redrive.PartialError
	code := http.StatusOK
	switch {
	case errors.Is(err, redrive.ErrRefused):
		code, d.Code = http.StatusUnprocessableEntity, string(redrive.RefusalCode(err))
		d.Error = "Verify refused " + refusalText(err) + ". Nothing was verified or changed."
		res = nil
	case errors.As(err, &pe):
		// What was seen was verified (and, with apply, reconciled): shown,
		// and said to be part of the DLQ only.
		d.Partial = pe.Error()
		if err != error(pe) {
			// Something else failed beside it: the audit record was not
			// written (redrive.Redriver.record joins its failure).
			code, d.Error = http.StatusBadGateway, "Verify failed: "+err.Error()
		}
	case err != nil:
		// The ledger or the audit could not be reached: with apply, the keys
		// before the failure may have been reconciled (their rows say so).
		code, d.Error = http.StatusBadGateway, "Verify failed: "+err.Error()
	}
	if apply && code == http.StatusOK {
		q := url.Values{"p": {p.Name}, "r": {f.Reason}, "done": {s.keepVerified(verifyKept{res: res, partial: d.Partial})}}
		if f.Fingerprint != "" {
			q.Set("fp", f.Fingerprint)
		}
		http.Redirect(w, r, "/verify?"+q.Encode(), http.StatusSeeOther)
		return
	}
	d.Result = res
	if res != nil && !res.Applied {
		d.Definite = res.Counts[string(agenttask.VerdictConfirmed)] + res.Counts[string(agenttask.VerdictNoEffect)]
	}
	s.render(w, r, code, "verify", page{Title: "Verify " + f.Reason + " with the tools", Nav: "pipeline", P: p, Data: d})
}

// keepVerified keeps k for reconcileKeep and returns its id; older ones
// are forgotten.
func (s *Server) keepVerified(k verifyKept) string {
	k.at = s.cfg.Now()
	id := NewToken()[:16]
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.verified == nil {
		s.verified = map[string]verifyKept{}
	}
	for i, v := range s.verified {
		if k.at.Sub(v.at) > reconcileKeep {
			delete(s.verified, i)
		}
	}
	s.verified[id] = k
	return id
}

// takeVerified returns the kept verification of id, if it is still kept.
func (s *Server) takeVerified(id string) (verifyKept, bool) {
	if id == "" {
		return verifyKept{}, false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	k, ok := s.verified[id]
	if !ok || s.cfg.Now().Sub(k.at) > reconcileKeep {
		return verifyKept{}, false
	}
	return k, true
}
