package console

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/redrive"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
	"github.com/agentdlq/agentdlq/triage/report"
)

// refreshPost starts a triage run of a pipeline and shows its progress.
func (s *Server) refreshPost(w http.ResponseWriter, r *http.Request) {
	p, _, ok := s.pipeline(r)
	if !ok {
		s.notFound(w, r, "No such pipeline.")
		return
	}
	j := s.newJob("refresh", p, "triage of the DLQ", 0)
	go s.refresh(p, j)
	http.Redirect(w, r, "/job?id="+j.ID, http.StatusSeeOther)
}

// redriveForm is the redrive page's form as submitted (or its defaults).
type redriveForm struct {
	Reason      string
	Fingerprint string
	Owner       string
	Why         string
	Rate        int
	Canary      int
	FixDeployed string
	Reviewed    string
	Override    string
	// Filter is the page's filter the form was sent with (its fields, as
	// the URL carries them): the way back to the form keeps it.
	Filter map[string]string
}

type redriveData struct {
	Form    redriveForm
	Groups  []report.Group // the selection
	Plan    *redrivetype.Plan
	Verdict redrivetype.Verdict
	Total   int
	Error   string
	// PlanMore counts the plan's groups beyond the first planLimit, not listed.
	PlanMore int
	// Filter is the page's filter: the select moves only the letters it
	// chooses (the form carries it), and the audit names it.
	Filter pageFilter
	// Live is the DLQ's depth now beside the report's count and age.
	Live *liveState
	// Whole is the whole pipeline's plan (no reason chosen: /redrive?p=…):
	// the plan of every group and its next steps, no form.
	Whole bool
	// Closed counts the chosen groups the owner rejected with nothing left
	// to do; when it is every one, the page offers no redrive.
	Closed int
}

// planLimit caps the plan's groups the redrive page lists.
const planLimit = 50

// redrivePage shows the plan of a reason or one group, the form, and reject.
func (s *Server) redrivePage(w http.ResponseWriter, r *http.Request) {
	f := redriveForm{Reason: r.FormValue("r"), Fingerprint: r.FormValue("fp"), Rate: redrive.DefaultRate, Canary: canaryFromPlan}
	// Back from a dry run's or a redrive's page: its values, to change or run.
	if j := s.job(r.FormValue("job")); j != nil && j.Pipeline == r.FormValue("p") && j.form != nil {
		f = *j.form
	}
	s.renderRedrive(w, r, http.StatusOK, f, "")
}

func (s *Server) renderRedrive(w http.ResponseWriter, r *http.Request, code int, f redriveForm, msg string) {
	p, sn, ok := s.pipeline(r)
	if !ok {
		s.notFound(w, r, "No such pipeline.")
		return
	}
	if sn.report == nil {
		s.notFound(w, r, "No triage report of "+p.Name+" yet: refresh the pipeline first.")
		return
	}
	rep, pf, ok := s.filteredReport(w, r, p, sn)
	if !ok {
		return
	}
	d := redriveData{Form: f, Error: msg, Filter: pf, Whole: f.Reason == "", Live: s.live(r.Context(), p, sn)}
	groups := []redrive.Group{}
	for _, g := range rep.Groups {
		if d.Whole || (string(g.Reason) == f.Reason && (f.Fingerprint == "" || g.Fingerprint == f.Fingerprint)) {
			d.Groups = append(d.Groups, g)
			groups = append(groups, redrive.Group{Reason: g.Reason, Fingerprint: g.Fingerprint, Count: g.Count})
			d.Total += g.Count
		}
	}
	if len(d.Groups) == 0 && !d.Whole {
		msg := "No such group in the latest report of " + p.Name + "."
		if d.Filter.On() {
			msg = "No dead letter of this selection matches the filter (" + d.Filter.F.String() + ")."
		}
		s.notFound(w, r, msg)
		return
	}
	d.Plan, _ = s.plan(r.Context(), p, rep, groups)
	for _, g := range d.Plan.Groups {
		if closed(g) {
			d.Closed++
		}
	}
	if n := len(d.Plan.Groups); n > planLimit {
		d.Plan.Groups, d.PlanMore = d.Plan.Groups[:planLimit], n-planLimit
	}
	if d.Form.Canary == canaryFromPlan {
		d.Form.Canary = planCanary(d.Plan, d.Total)
	}
	d.Verdict = redrive.Decide(deadletter.Reason(f.Reason), redrive.Ack{})
	title := "Redrive " + f.Reason
	if f.Fingerprint != "" {
		title += " " + short(f.Fingerprint)
	}
	if d.Whole {
		title = "The plan of " + p.Name
	}
	s.render(w, r, code, "redrive", page{Title: title, Nav: "pipeline", P: p, Data: d})
}

// canaryFromPlan marks a fresh form's canary: the plan's suggestion, as
// the plan's command line says it (redrive.SuggestedCanary).
const canaryFromPlan = -1

// planCanary is the canary of the plan's select step when the plan has one
// group with one; else the same rule on the selection's total.
func planCanary(pl *redrivetype.Plan, total int) int {
	if pl != nil && len(pl.Groups) == 1 {
		for _, st := range pl.Groups[0].Next {
			if st.Action == audit.ActionSelect && st.Canary > 0 {
				return st.Canary
			}
		}
	}
	return redrive.SuggestedCanary(total)
}

func readForm(r *http.Request) (redriveForm, error) {
	f := redriveForm{
		Reason: r.PostFormValue("r"), Fingerprint: r.PostFormValue("fp"),
		Owner: strings.TrimSpace(r.PostFormValue("owner")), Why: strings.TrimSpace(r.PostFormValue("why")),
		FixDeployed: strings.TrimSpace(r.PostFormValue("fix_deployed")), Reviewed: strings.TrimSpace(r.PostFormValue("reviewed")),
		Override: strings.TrimSpace(r.PostFormValue("override")),
	}
	var err error
	if f.Rate, err = strconv.Atoi(r.PostFormValue("rate")); err != nil {
		return f, &formError{"rate must be a whole number (1..500)"}
	}
	if c := r.PostFormValue("canary"); c != "" {
		if f.Canary, err = strconv.Atoi(c); err != nil || f.Canary < 0 {
			return f, &formError{"canary must be a whole number, 0 or more"}
		}
	}
	return f, nil
}

type formError struct{ msg string }

func (e *formError) Error() string { return e.msg }

// redrivePost runs a dry run or a redrive of the selection as a job. The
// gate, the policy and the audit are redrive's: a refusal is audited and
// shown on the job's page.
func (s *Server) redrivePost(w http.ResponseWriter, r *http.Request) {
	p, _, ok := s.pipeline(r)
	if !ok {
		s.notFound(w, r, "No such pipeline.")
		return
	}
	f, err := readForm(r)
	if err != nil {
		s.renderRedrive(w, r, http.StatusBadRequest, f, err.Error())
		return
	}
	pf := s.filterOf(r)
	if pf.Err != "" {
		s.renderRedrive(w, r, http.StatusBadRequest, f, pf.Err)
		return
	}
	req := redrive.SelectRequest{
		Who: redrive.Who{Owner: f.Owner, Why: f.Why}, Reasons: []deadletter.Reason{deadletter.Reason(f.Reason)}, Filter: pf.F,
		Rate: f.Rate, Canary: f.Canary, DryRun: r.PostFormValue("mode") != "redrive",
		Ack: redrive.Ack{FixDeployed: f.FixDeployed, Reviewed: f.Reviewed},
	}
	if f.Fingerprint != "" {
		req.Fingerprints = []string{f.Fingerprint}
	}
	if f.Override != "" {
		req.Ack.Overrides = map[deadletter.Reason]string{deadletter.Reason(f.Reason): f.Override}
	}
	kind, label := "redrive", f.Reason
	if req.DryRun {
		kind = "dry_run"
	}
	if f.Fingerprint != "" {
		label += " " + short(f.Fingerprint)
	}
	if pf.On() {
		label += " (" + pf.F.String() + ")"
	}
	total := 0
	if rep, _ := s.narrowed(p, s.snapshotOf(p.Name), pf); rep != nil {
		for _, g := range rep.Groups {
			if string(g.Reason) == f.Reason && (f.Fingerprint == "" || g.Fingerprint == f.Fingerprint) {
				total += g.Count
			}
		}
	}
	f.Filter = pf.Hidden
	j := s.newJob(kind, p, label, total)
	j.form = &f
	go s.runRedrive(p, j, req)
	http.Redirect(w, r, "/job?id="+j.ID, http.StatusSeeOther)
}

// rejectPost records the owner's rejection of the selection (redrive.Reject:
// gated and audited; the letters stay until retention deletes them).
func (s *Server) rejectPost(w http.ResponseWriter, r *http.Request) {
	p, sn, ok := s.pipeline(r)
	if !ok {
		s.notFound(w, r, "No such pipeline.")
		return
	}
	f := redriveForm{Reason: r.PostFormValue("r"), Fingerprint: r.PostFormValue("fp"), Owner: strings.TrimSpace(r.PostFormValue("owner")),
		Why: strings.TrimSpace(r.PostFormValue("why")), Rate: redrive.DefaultRate, Canary: 1}
	rd, err := s.redriver(r.Context(), p, nil)
	if err == nil {
		_, _ = rd.Identify(r.Context()) // the caller on every record, as reveal's
		var fps []string
		if f.Fingerprint != "" {
			fps = []string{f.Fingerprint}
		}
		var groups []redrive.Group
		if sn.report != nil {
			groups = []redrive.Group{}
			for _, g := range sn.report.Groups {
				groups = append(groups, redrive.Group{Reason: g.Reason, Fingerprint: g.Fingerprint, Count: g.Count})
			}
		}
		_, err = rd.Reject(r.Context(), redrive.RejectRequest{Who: redrive.Who{Owner: f.Owner, Why: f.Why},
			Reasons: []deadletter.Reason{deadletter.Reason(f.Reason)}, Fingerprints: fps, Groups: groups})
	}
	if err != nil {
		s.renderRedrive(w, r, http.StatusUnprocessableEntity, f, "Reject refused: "+refusalText(err))
		return
	}
	http.Redirect(w, r, "/audit?"+url.Values{"p": {p.Name}, "action": {string(audit.ActionReject)}}.Encode(), http.StatusSeeOther)
}

// jobPage shows a job's progress, reloading itself every second until done.
func (s *Server) jobPage(w http.ResponseWriter, r *http.Request) {
	j := s.job(r.FormValue("id"))
	if j == nil {
		s.notFound(w, r, "No such job (the console forgets jobs when it stops).")
		return
	}
	v := j.view()
	pg := page{Title: v.Kind + " " + v.Label, Nav: "pipeline", Data: v}
	s.mu.RLock()
	pg.P = s.byP[v.Pipeline]
	s.mu.RUnlock()
	if j.verify != nil {
		s.verifyJobPage(w, r, pg.P, j)
		return
	}
	if !v.Done {
		pg.Refresh = 1
	}
	s.render(w, r, http.StatusOK, "job", pg)
}
