package redrive

import (
	"context"
	"errors"
	"strings"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/redrive/audit"
)

// ReconcileRequest asks to record what an effect_unknown key's mutating
// call did.
type ReconcileRequest struct {
	Who
	// Key is the idempotency key (the triage report lists them).
	Key string
	// Tenant is the task's tenant: the ledger key is ledger.Key(the
	// pipeline, Tenant, Key), as the worker claimed it. Without it, only an
	// entry written before keys were scoped (under Key alone) is found.
	Tenant string
	// Outcome is ledger.OutcomeEffectConfirmed or ledger.OutcomeNoEffect.
	Outcome ledger.Outcome
	// Receipt is the external system's proof of the effect: required with
	// ledger.OutcomeEffectConfirmed, empty otherwise.
	Receipt string
	// Evidence is optional: what the check found (Verify passes its
	// verifier's), kept in the audit record's detail, redacted.
	Evidence string
}

// Reconcile records, after the gate (the pipeline's owner, a why, the DLQ's
// tags and, in AWS, the caller's identity), what the owner found out about
// an effect_unknown key, in one conditional ledger write
// (ledger.Ledger.Reconcile), and audits it as ActionReconcile, refusals
// included.
//
// A confirmed effect marks the key done with the receipt: the dead letter
// is never run again (select skips it, start refuses effect_unknown, and a
// redelivery would be acknowledged as a no-op); reject it or let retention
// drop it. No effect clears the key's effect_started mark: a select of
// effect_unknown moves that key's dead letter without an override, and
// the worker runs it afresh.
//
// Only a key whose effect is unknown may be reconciled (CodeNotEffectUnknown
// otherwise); the same reconciliation again is a no-op, another one is
// refused (CodeReconciled).
func (r *Redriver) Reconcile(ctx context.Context, req ReconcileRequest) (ledger.Entry, error) {
	rec := audit.Entry{Actor: req.Owner, Action: audit.ActionReconcile, Why: req.Why,
		Reasons: []string{string(deadletter.ReasonEffectUnknown)},
		Detail: map[string]string{"idempotency_key": req.Key, "tenant": req.Tenant, "pipeline": r.cfg.Pipeline.Name,
			"ledger_key": r.ledgerKey(req.Tenant, req.Key), "outcome": string(req.Outcome)}}
	if req.Receipt != "" {
		rec.Detail["receipt"] = req.Receipt
	}
	if req.Evidence != "" {
		rec.Detail["evidence"] = deadletter.Redact(req.Evidence, maxEvidence)
	}
	var e ledger.Entry
	err := func() error {
		if strings.TrimSpace(req.Key) == "" {
			return refuseField(CodeBadInput, "Key", "is required: an idempotency key of an effect_unknown dead letter (the triage report lists them)")
		}
		rc := ledger.Reconciliation{Outcome: req.Outcome, Receipt: strings.TrimSpace(req.Receipt), By: req.Owner}
		if rc.By == "" {
			rc.By = "-" // the gate refuses it below; Validate must not speak first
		}
		if err := rc.Validate(); err != nil {
			return refuseField(CodeBadInput, "Outcome", "%s", strings.TrimPrefix(err.Error(), ledger.ErrInvalid.Error()+": "))
		}
		if err := r.authorizeAs(ctx, audit.ActionReconcile, req.Who, minRate); err != nil {
			return err
		}
		now := r.now()
		var err error
		e, err = r.cfg.Ledger.Reconcile(ctx, r.ledgerKey(req.Tenant, req.Key), rc, now)
		switch {
		case err == nil:
			if !e.ReconciledAt.Equal(now) {
				rec.Detail["repeat"] = "true" // recorded before, left as it was
			}
			return nil
		case errors.Is(err, ledger.ErrReconciled):
			return refuse(CodeReconciled, "%v: a reconciliation is not changed", err)
		case errors.Is(err, ledger.ErrNotEffectUnknown), errors.Is(err, ledger.ErrLeased):
			return refuseField(CodeNotEffectUnknown, "Key", "%q of tenant %q: %v: only a key whose mutating call started without a receipt may be reconciled (its ledger entry shows why not)", req.Key, req.Tenant, err)
		}
		return err
	}()
	return e, r.record(ctx, rec, err)
}
