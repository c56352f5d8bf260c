package console

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/redrive"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
)

// repairForm is the letter page's repair form as submitted.
type repairForm struct {
	ID, Owner, Why, Patch string
}

// repairData is the repair page: the form, the preview's diff (before and
// after, shown to the owner who asked; the audit holds digests), and, once
// applied, where the original is kept and the repaired task was sent.
type repairData struct {
	Form   repairForm
	Result *redrivetype.RepairResult
	// Applied: the repair was sent (Result holds the evidence and the hot
	// message id); otherwise Result is a preview, to confirm.
	Applied bool
	Error   string
}

// repairTimeout bounds a repair: a look through the DLQ for one letter,
// one S3 put, one send and one delete.
const repairTimeout = 2 * time.Minute

// repairPost previews (mode=preview) or applies (mode=repair) a repair of
// one dead letter's task args with redrive.Repair: the same gate, checks
// and audit as `agentdlq redrive repair`. A preview changes nothing and
// shows the diff with a button that applies exactly that patch.
func (s *Server) repairPost(w http.ResponseWriter, r *http.Request) {
	p, _, ok := s.pipeline(r)
	if !ok {
		s.notFound(w, r, "No such pipeline.")
		return
	}
	f := repairForm{ID: r.PostFormValue("id"), Owner: strings.TrimSpace(r.PostFormValue("owner")), Why: strings.TrimSpace(r.PostFormValue("why")),
		Patch: r.PostFormValue("patch")}
	apply := r.PostFormValue("mode") == "repair"
	d := repairData{Form: f}
	ctx, cancel := context.WithTimeout(r.Context(), repairTimeout)
	defer cancel()
	rd, err := s.redriver(ctx, p, nil)
	if err == nil {
		_, _ = rd.Identify(ctx) // the caller on every record, as reveal's
		d.Result, err = rd.Repair(ctx, redrive.RepairRequest{Who: redrive.Who{Owner: f.Owner, Why: f.Why}, MessageID: f.ID,
			Patch: []byte(f.Patch), Preview: !apply})
	}
	code := http.StatusOK
	switch {
	case err != nil:
		d.Error, code = refusalText(err), http.StatusUnprocessableEntity
		if d.Result != nil && d.Result.Before == nil {
			d.Result = nil // nothing to show: refused before the diff
		}
	case apply:
		d.Applied = true
	}
	s.render(w, r, code, "repair", page{Title: "Repair " + short(f.ID), Nav: "pipeline", P: p, Data: d})
}

// repairFormView is what the "repair-form" template renders.
type repairFormView struct {
	CSRF, Pipeline, ID, Owner, Why, Patch string
}

func newRepairFormView(csrf, pipeline, id, owner, why, patch string) repairFormView {
	return repairFormView{CSRF: csrf, Pipeline: pipeline, ID: id, Owner: owner, Why: why, Patch: patch}
}

// repairCardView is what the "repair-card" template renders: the
// repair form where the reason's policy allows a patch
// (deadletter.Reason.Patchable), else its next action in words.
type repairCardView struct {
	Reason    deadletter.Reason
	Patchable bool
	Next      deadletter.NextAction
	NextWords string
	Form      repairFormView
}

func newRepairCardView(csrf, pipeline, id string, reason deadletter.Reason) repairCardView {
	return repairCardView{Reason: reason, Patchable: reason.Patchable(), Next: reason.NextAction(),
		NextWords: reason.NextAction().Describe(), Form: newRepairFormView(csrf, pipeline, id, "", "", "")}
}
