package console

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive"
	"github.com/agentdlq/agentdlq/triage"
)

// ---- past decisions ----

// plan is the plan of groups marked with the owner's past decisions the way
// `agentdlq redrive plan` marks it (redrive.Redriver.Plan over the
// snapshot's report: no scan, no audit record). It also returns the
// decisions as the audit holds them. Without a Redriver (no ledger, queues
// not resolved) the plan is empty and says why in DecisionsUnread.
func (s *Server) plan(ctx context.Context, p *pipeline.Pipeline, rep *triage.Report, groups []redrive.Group) (*redrive.Plan, redrive.Decisions) {
	none := redrive.Decisions{Reconciled: map[string]redrive.KeyDecision{}}
	rd, err := s.redriver(ctx, p, nil)
	if err != nil {
		// No Redriver (the queues could not be resolved): the policy's plan,
		// without the owner's decisions.
		pl := &redrive.Plan{Pipeline: p.Name, Owner: p.Owner, DecisionsUnread: err.Error()}
		return pl, none
	}
	if groups == nil {
		groups = []redrive.Group{}
	}
	pl, err := rd.Plan(ctx, redrive.PlanRequest{Report: rep, Groups: groups}) // a page view: no scan, no audit
	if err != nil {
		pl = &redrive.Plan{Pipeline: p.Name, Owner: p.Owner, DecisionsUnread: err.Error()}
		return pl, none
	}
	d, err := rd.Decisions(ctx)
	if err != nil {
		return pl, none
	}
	return pl, d
}

// ---- keys and their ledger state ----

// keyRow is one idempotency key of an effect_unknown group as the ledger
// holds it now, with the owner's latest reconciliation from the audit.
type keyRow struct {
	Key string
	// Tenant is the task's tenant (from the snapshot's letters): with the
	// pipeline it scopes Key in the ledger (ledger.Key).
	Tenant string
	// State is the key's ledger state in a word or two (keyState); Class
	// its badge class.
	State, Class string
	Entry        *ledger.Entry
	// Open is true when Reconcile accepts the key now (its effect is unknown).
	Open bool
	// Decision is the audit's latest reconciliation of the key (who, when, why).
	Decision *redrive.KeyDecision
	Err      string
}

// keyState says what the ledger holds for a key, in the words the runbook
// uses: reconciled (and how), effect_unknown, done, or what else it is.
func keyState(e *ledger.Entry, now time.Time) (state, class string) {
	switch {
	case e == nil:
		return "no ledger entry", ""
	case e.EffectConfirmed():
		return "reconciled: " + string(ledger.OutcomeEffectConfirmed), "yes"
	case e.NoEffect():
		return "reconciled: " + string(ledger.OutcomeNoEffect), "yes"
	case e.EffectUnknown(now) && e.Reconciled != "":
		return "effect_unknown (again, since its " + string(e.Reconciled) + " reconciliation)", "no"
	case e.EffectUnknown(now):
		return "effect_unknown", "no"
	case e.State == ledger.StateDone:
		return "done", "yes"
	case e.State == ledger.StateInProgress && now.Before(e.LeaseUntil):
		return "in progress (a delivery holds it)", "after_fix"
	}
	return string(e.State), ""
}

// keyRows reads the ledger entry of each key, a few at a time.
func (s *Server) keyRows(ctx context.Context, p *pipeline.Pipeline, sn *snapshot, keys []string, d redrive.Decisions) []keyRow {
	rows := make([]keyRow, len(keys))
	now := s.cfg.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, k := range keys {
		rows[i].Key, rows[i].Tenant = k, sn.tenantOf(k)
		if kd, ok := d.Reconciled[k]; ok {
			rows[i].Decision = &kd
		}
		if s.cfg.Ledger == nil {
			rows[i].State, rows[i].Err = "-", "no ledger configured"
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func(row *keyRow) {
			defer wg.Done()
			defer func() { <-sem }()
			e, found, err := s.cfg.Ledger.Get(ctx, ledger.Key(p.Name, row.Tenant, row.Key))
			switch {
			case err != nil:
				row.State, row.Err = "?", "ledger read failed: "+err.Error()
				return
			case found:
				row.Entry = &e
			}
			row.State, row.Class = keyState(row.Entry, now)
			row.Open = row.Entry != nil && row.Entry.EffectUnknown(now)
		}(&rows[i])
	}
	wg.Wait()
	return rows
}

// ---- reconcile ----

// reconcileForm is the reconcile form as shown or submitted.
type reconcileForm struct {
	CSRF, Pipeline, Owner string // Owner: the pipeline's, for the hint
	Key                   string
	// Tenant scopes Key in the ledger (the task's tenant).
	Tenant string
	// Reason, Fingerprint and LetterID say where the form was opened from
	// (a group, a letter), for the way back.
	Reason, Fingerprint, LetterID string
	// The submitted values.
	Outcome, Receipt, Actor, Why string
}

type reconcileData struct {
	Form reconcileForm
	Row  keyRow
	// Letters are the dead letters in memory that carry the key.
	Letters []string
	// Done: the reconciliation was recorded; Before and After are the
	// ledger entry around it; Repeat: it had been recorded so before, and
	// nothing changed.
	Done          bool
	Repeat        bool
	Before, After *ledger.Entry
	// Error is a refusal or a failure, in a sentence; Code the refusal's code.
	Error, Code  string
	DecisionsErr string
}

func (s *Server) reconcileFormOf(r *http.Request, p *pipeline.Pipeline, sn *snapshot, key string) reconcileForm {
	tenant := r.FormValue("tenant")
	if tenant == "" {
		tenant = sn.tenantOf(key)
	}
	return reconcileForm{CSRF: s.csrf, Pipeline: p.Name, Owner: p.Owner, Key: key, Tenant: tenant,
		Reason: r.FormValue("r"), Fingerprint: r.FormValue("fp"), LetterID: r.FormValue("id"),
		Outcome: r.PostFormValue("outcome"), Receipt: strings.TrimSpace(r.PostFormValue("receipt")),
		Actor: strings.TrimSpace(r.PostFormValue("owner")), Why: strings.TrimSpace(r.PostFormValue("why"))}
}

// reconcilePage shows one key: its ledger state, the owner's past
// reconciliation, the letters that carry it and, while its effect is
// unknown, the form.
func (s *Server) reconcilePage(w http.ResponseWriter, r *http.Request) {
	p, sn, ok := s.pipeline(r)
	if !ok {
		s.notFound(w, r, "No such pipeline.")
		return
	}
	key := r.FormValue("key")
	if strings.TrimSpace(key) == "" {
		s.notFound(w, r, "No idempotency key: open a key from an effect_unknown group's page.")
		return
	}
	d := reconcileData{Form: s.reconcileFormOf(r, p, sn, key)}
	if rd, ok := s.takeDone(r.FormValue("done")); ok {
		d.Done, d.Repeat, d.Before, d.After = true, rd.repeat, rd.before, &rd.after
	}
	s.renderReconcile(w, r, http.StatusOK, d)
}

// reconcileDone is what one recorded reconciliation changed.
type reconcileDone struct {
	before *ledger.Entry
	after  ledger.Entry
	repeat bool
	at     time.Time
}

// reconcileKeep is how long the result of a reconcile can be shown again
// (a reload of the page its POST redirected to); later the page shows the
// key as it is, its last reconciliation read from the audit.
const reconcileKeep = 15 * time.Minute

// keepDone keeps d for reconcileKeep and returns its id; older results are
// forgotten.
func (s *Server) keepDone(d reconcileDone) string {
	d.at = s.cfg.Now()
	id := NewToken()[:16]
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done == nil {
		s.done = map[string]reconcileDone{}
	}
	for k, v := range s.done {
		if d.at.Sub(v.at) > reconcileKeep {
			delete(s.done, k)
		}
	}
	s.done[id] = d
	return id
}

// takeDone returns the kept result of id, if it is still kept.
func (s *Server) takeDone(id string) (reconcileDone, bool) {
	if id == "" {
		return reconcileDone{}, false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	d, ok := s.done[id]
	if !ok || s.cfg.Now().Sub(d.at) > reconcileKeep {
		return reconcileDone{}, false
	}
	return d, true
}

func (s *Server) renderReconcile(w http.ResponseWriter, r *http.Request, code int, d reconcileData) {
	p, sn, _ := s.pipeline(r)
	key := d.Form.Key
	var dec redrive.Decisions
	if rd, err := s.redriver(r.Context(), p, nil); err != nil {
		d.DecisionsErr = err.Error()
	} else if dec, err = rd.Decisions(r.Context()); err != nil {
		d.DecisionsErr = err.Error()
	}
	d.Row = s.keyRows(r.Context(), p, sn, []string{key}, dec)[0]
	d.Row.Tenant = d.Form.Tenant
	for _, t := range sn.letters {
		if t.Hints.IdempotencyKey == key && t.Hints.Tenant == d.Form.Tenant {
			d.Letters = append(d.Letters, t.MessageID)
		}
	}
	slices.Sort(d.Letters)
	s.render(w, r, code, "reconcile", page{Title: "Reconcile " + key, Nav: "pipeline", P: p, Data: d})
}

// reconcilePost records what the owner found out about an effect_unknown
// key: redrive.Redriver.Reconcile, the gate and the audit of `agentdlq
// ledger reconcile`. A refusal is audited there and shown here (422).
func (s *Server) reconcilePost(w http.ResponseWriter, r *http.Request) {
	p, sn, ok := s.pipeline(r)
	if !ok {
		s.notFound(w, r, "No such pipeline.")
		return
	}
	f := s.reconcileFormOf(r, p, sn, r.PostFormValue("key"))
	d := reconcileData{Form: f}
	ctx := r.Context()
	if s.cfg.Ledger != nil && strings.TrimSpace(f.Key) != "" {
		if e, found, err := s.cfg.Ledger.Get(ctx, ledger.Key(p.Name, f.Tenant, f.Key)); err == nil && found {
			d.Before = &e
		}
	}
	rd, err := s.redriver(ctx, p, nil)
	var after ledger.Entry
	if err == nil {
		// Who runs the console, as reveal records it: in AWS the STS caller,
		// on refusals of the gate's pure checks too.
		_, _ = rd.Identify(ctx)
		after, err = rd.Reconcile(ctx, redrive.ReconcileRequest{Who: redrive.Who{Owner: f.Actor, Why: f.Why}, Key: f.Key, Tenant: f.Tenant,
			Outcome: ledger.Outcome(f.Outcome), Receipt: f.Receipt})
	}
	code := http.StatusOK
	switch {
	case errors.Is(err, redrive.ErrRefused):
		code, d.Code = http.StatusUnprocessableEntity, string(redrive.RefusalCode(err))
		d.Error = "Reconcile refused " + refusalText(err)
	case err != nil:
		// The ledger or the audit could not be reached: the ledger may or may
		// not have been written; the state below is read again.
		code, d.Error = http.StatusBadGateway, "Reconcile failed: "+err.Error()
	default:
		// Recorded: redirect to the key's page, which shows what changed
		// (post/redirect/get, as reject and redrive do), so that a reload
		// reads the page instead of reconciling again.
		repeat := d.Before != nil && d.Before.Reconciled == after.Reconciled && d.Before.ReconciledAt.Equal(after.ReconciledAt)
		id := s.keepDone(reconcileDone{before: d.Before, after: after, repeat: repeat})
		q := url.Values{"p": {p.Name}, "key": {f.Key}, "done": {id}}
		for k, v := range map[string]string{"r": f.Reason, "fp": f.Fingerprint, "id": f.LetterID, "tenant": f.Tenant} {
			if v != "" {
				q.Set(k, v)
			}
		}
		http.Redirect(w, r, "/reconcile?"+q.Encode(), http.StatusSeeOther)
		return
	}
	if strings.TrimSpace(f.Key) == "" && d.Error != "" {
		s.render(w, r, code, "message", page{Title: "Reconcile refused", P: p, Data: d.Error})
		return
	}
	s.renderReconcile(w, r, code, d)
}

// refusalText is a refusal in a sentence for the console: the gate's and
// the ledger's reason, led, for the two an operator meets at the ledger
// (another outcome recorded before; a key with nothing to reconcile now:
// no entry, a delivery holding it, done, or no mutating call started), by
// what it means.
func refusalText(err error) string {
	var rf *redrive.Refusal
	if !errors.As(err, &rf) {
		return err.Error()
	}
	lead := ""
	switch rf.Code {
	case redrive.CodeReconciled:
		lead = "another outcome was recorded for this key before: "
	case redrive.CodeNotEffectUnknown:
		lead = "there is nothing to reconcile for this key now: "
	case redrive.CodeNotSettled:
		lead = "reconcile the key as no effect first: "
	}
	if l, ok := fieldLabel[rf.Field]; ok {
		return "(" + string(rf.Code) + ") " + lead + l + " " + rf.Reason
	}
	return "(" + string(rf.Code) + ") " + lead + rf.Reason
}
