package redrive

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/agentdlq/agentdlq/events/agenttask"
	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
	"github.com/agentdlq/agentdlq/triage"
)

// VerifyRequest asks to run the tools' verifiers over the idempotency keys
// of dead letters whose mutating call's effect is unknown.
type VerifyRequest struct {
	Who
	// Reason is optional (default effect_unknown): the dead letters whose
	// keys are verified. receive_limit is the other reason that may hold
	// one: the worker crashed (a Lambda timeout, out of memory) after the
	// call started, and the broker moved the message.
	Reason deadletter.Reason
	// Apply reconciles each key with a definite verdict (Reconcile, with the
	// verifier's evidence): confirmed as ledger.OutcomeEffectConfirmed with
	// the verifier's receipt, no effect as ledger.OutcomeNoEffect; unknown
	// keys are left alone. Without it nothing is written but the audit
	// record of the proposal.
	Apply bool
	// Timeout is optional (default 30 seconds): how long one verifier may
	// take; one that takes longer is unknown.
	Timeout time.Duration
	// OnKey is optional: called as each key's turn comes, with its place
	// (from 1) and the number of keys the scan found (a progress bar).
	OnKey func(n, keys int)
}

// defaultVerifyTimeout is VerifyRequest.Timeout's default.
const defaultVerifyTimeout = 30 * time.Second

// maxEvidence is how many characters of a verifier's evidence are kept.
const maxEvidence = 512

// Verify runs, after the gate (as for Reconcile: the pipeline's owner, a
// why, the DLQ's tags and, in AWS, the caller's identity), the verifiers
// of Config.Catalog's tools (agenttask.Tool.Verify; it is required here)
// over the keys of the DLQ's dead letters of req.Reason whose
// effect the ledger holds as unknown, and proposes an outcome for each. A
// read-only scan finds the letters (each key's task is in its letter's
// body) and the ledger says which keys are still unknown; a verifier that
// fails, panics, overruns req.Timeout or answers a Verification that fails
// Check is unknown, with why as evidence.
//
// With req.Apply, each key with a definite verdict is reconciled through
// Reconcile (gated and audited as audit.ActionReconcile, with the verifier's
// evidence); a refusal of one key is recorded on its row and the others go
// on. Without it nothing changes. Either way one more audit.ActionReconcile
// record (Detail verify=propose or apply, Counts by verdict) says what was
// proposed.
//
// A scan that saw part of the DLQ returns the result with a *PartialError:
// what was verified (and, with Apply, reconciled) stands; a rerun after
// PartialError.RetryAfter verifies the rest.
func (r *Redriver) Verify(ctx context.Context, req VerifyRequest) (*redrivetype.VerifyResult, error) {
	if req.Reason == "" {
		req.Reason = deadletter.ReasonEffectUnknown
	}
	mode := "propose"
	if req.Apply {
		mode = "apply"
	}
	res := &redrivetype.VerifyResult{Pipeline: r.cfg.Pipeline.Name, Reason: req.Reason, Applied: req.Apply, Keys: []redrivetype.Verified{}, Counts: map[string]int{}}
	rec := audit.Entry{Actor: req.Owner, Action: audit.ActionReconcile, Why: req.Why, Reasons: []string{string(req.Reason)},
		Detail: map[string]string{"verify": mode}}
	partial, err := r.verify(ctx, req, res)
	rec.Counts = res.Counts
	switch {
	case err != nil:
	case partial != nil:
		err = partial
	case !req.Apply:
		rec.Outcome = audit.OutcomeDryRun
	}
	return res, r.record(ctx, rec, err)
}

func (r *Redriver) verify(ctx context.Context, req VerifyRequest, res *redrivetype.VerifyResult) (*redrivetype.PartialError, error) {
	if !req.Reason.Valid() {
		return nil, refuseField(redrivetype.CodeUnknownReason, "Reason", "%q is not a reason (the taxonomy: docs/reasons.md)", req.Reason)
	}
	if len(r.cfg.Catalog) == 0 {
		return nil, refuse(redrivetype.CodeBadInput, "no tools to verify with (Config.Catalog): the verifiers are registered on the catalog's tools (agenttask.Tool.Verify)")
	}
	if req.Timeout < 0 {
		return nil, refuseField(redrivetype.CodeBadInput, "Timeout", "%s is negative", req.Timeout)
	}
	if req.Timeout == 0 {
		req.Timeout = defaultVerifyTimeout
	}
	if err := r.authorizeAs(ctx, audit.ActionReconcile, req.Who, minRate); err != nil {
		return nil, err
	}
	msgs, st, err := triage.Scan(ctx, r.cfg.SQS, r.cfg.Queues.DLQURL, triage.ScanOptions{})
	if err != nil {
		if errors.Is(err, triage.ErrQueueNotFound) {
			return nil, refuse(redrivetype.CodeDLQMissing, "%v", err)
		}
		return nil, err
	}
	res.Seen = st.Unique
	var partial *redrivetype.PartialError
	if st.Partial {
		partial = &redrivetype.PartialError{Seen: st.Unique, Depth: st.ApproxDepth + st.ApproxInFlight, Why: st.PartialReason, FIFO: st.FIFO,
			RetryAfter: time.Duration(st.VisibilityTimeoutSeconds) * time.Second}
	}

	// The reason's letters, by key: one verification a key.
	type keyed struct {
		row  redrivetype.Verified
		body string
	}
	byKey := map[string]*keyed{}
	for _, m := range msgs {
		l := letter{Tagged: r.tag(m)}
		if l.Reason != req.Reason {
			continue
		}
		key, tenant := "", ""
		if l.Meta != nil {
			key, tenant = l.Meta.IdempotencyKey, l.Meta.Tenant
		}
		if key == "" || tenant == "" {
			if t, err := agenttask.DecodeTask([]byte(l.Body), nil); err == nil {
				if key == "" {
					key = t.IdempotencyKey
				}
				if tenant == "" {
					tenant = t.Tenant
				}
			}
		}
		id := r.ledgerKey(tenant, key)
		if key == "" {
			id = "\x00" + l.MessageID // no key: a row of its own
		}
		k := byKey[id]
		if k == nil {
			k = &keyed{row: redrivetype.Verified{Key: key, Tenant: tenant, MessageID: l.MessageID}, body: l.Body}
			byKey[id] = k
		}
		k.row.Letters++
	}
	ids := slices.Sorted(maps.Keys(byKey))
	for i, id := range ids {
		if req.OnKey != nil {
			req.OnKey(i+1, len(ids))
		}
		k := byKey[id]
		err = r.verifyKey(ctx, req, &k.row, k.body)
		res.Keys = append(res.Keys, k.row)
		if err != nil {
			break
		}
	}
	countVerified(res)
	return partial, err
}

// verifyKey fills row: why the key is skipped, or its verdict and, with
// req.Apply, its reconciliation. An error is a ledger or audit failure:
// the pass stops.
func (r *Redriver) verifyKey(ctx context.Context, req VerifyRequest, row *redrivetype.Verified, body string) error {
	task, terr := agenttask.DecodeTask([]byte(body), nil)
	if terr == nil {
		row.Tool = task.Tool
	}
	switch {
	case row.Key == "":
		row.Skipped = "the dead letter holds no idempotency key"
		return nil
	case terr != nil:
		row.Skipped = fmt.Sprintf("the dead letter's body is not an agent task (%v): nothing to verify", terr)
		return nil
	}
	e, ok, err := r.cfg.Ledger.Get(ctx, r.ledgerKey(row.Tenant, row.Key))
	if err != nil {
		return fmt.Errorf("ledger %q: %w", row.Key, err)
	}
	now := r.now()
	if !ok {
		row.Skipped = "the ledger holds no entry for the key (no worker began it, or its entry expired)"
		return nil
	}
	if !e.EffectUnknown(now) {
		row.Skipped = notUnknown(e, now)
		return nil
	}
	if e.ArgsDigest != "" {
		if d, err := agenttask.ArgsDigest(task.Args); err != nil || d != e.ArgsDigest {
			// Not the task whose call started: what a verifier finds for
			// the key would not be this letter's.
			row.Verdict, row.Evidence = agenttask.VerdictUnknown, "the dead letter's args are not those the key's call was started with (the ledger's args digest differs): check by hand"
			return nil
		}
	}
	v := r.runVerifier(ctx, req, task, e)
	row.Verdict, row.Receipt, row.Evidence = v.Verdict, v.Receipt, v.Evidence
	if !req.Apply || v.Verdict == agenttask.VerdictUnknown {
		return nil
	}
	rr := ReconcileRequest{Who: req.Who, Key: row.Key, Tenant: row.Tenant, Outcome: ledger.OutcomeNoEffect,
		Evidence: fmt.Sprintf("%s verifier: %s", task.Tool, v.Evidence)}
	if v.Verdict == agenttask.VerdictConfirmed {
		rr.Outcome, rr.Receipt = ledger.OutcomeEffectConfirmed, v.Receipt
	}
	got, err := r.Reconcile(ctx, rr)
	var rf *Refusal
	switch {
	case errors.As(err, &rf):
		row.Refused = Told(rf, r.cfg.FieldNames) // as the audit records it
	case err != nil:
		return err
	default:
		row.Reconciled = got.Reconciled
	}
	return nil
}

// runVerifier runs the tool's verifier under req.Timeout: a missing one, an
// error, a panic, an overrun or an answer that fails Check is unknown, with
// why. A verifier that ignores its context is abandoned at the deadline
// (its goroutine ends when it returns), so one stuck check cannot hold the
// pass.
func (r *Redriver) runVerifier(ctx context.Context, req VerifyRequest, task agenttask.Task, e ledger.Entry) agenttask.Verification {
	tool, ok := r.cfg.Catalog[task.Tool]
	if !ok || tool.Verify == nil {
		return agenttask.Verification{Verdict: agenttask.VerdictUnknown, Evidence: fmt.Sprintf("no verifier is registered for %s: check by hand", task.Tool)}
	}
	unknown := func(format string, args ...any) agenttask.Verification {
		return agenttask.Verification{Verdict: agenttask.VerdictUnknown, Evidence: deadletter.Redact(fmt.Sprintf(format, args...), maxEvidence)}
	}
	vctx, cancel := context.WithTimeout(ctx, req.Timeout)
	defer cancel()
	type answer struct {
		v   agenttask.Verification
		err error
	}
	done := make(chan answer, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- answer{err: fmt.Errorf("panicked: %v", p)}
			}
		}()
		v, err := tool.Verify(vctx, agenttask.Call{Key: task.IdempotencyKey, Task: task, StartedBy: e.Owner, Before: e.UpdatedAt, ArgsDigest: e.ArgsDigest})
		done <- answer{v, err}
	}()
	var a answer
	select {
	case a = <-done:
	case <-vctx.Done():
		return unknown("the verifier of %s did not answer within %s: %v", task.Tool, req.Timeout, vctx.Err())
	}
	switch {
	case a.err != nil:
		return unknown("the verifier of %s failed: %v", task.Tool, a.err)
	case a.v.Check() != nil:
		return unknown("the verifier of %s answered %v: not applied", task.Tool, a.v.Check())
	}
	a.v.Evidence = deadletter.Redact(a.v.Evidence, maxEvidence)
	return a.v
}

// notUnknown says why an entry's effect is not unknown at now.
func notUnknown(e ledger.Entry, now time.Time) string {
	switch {
	case e.Reconciled != "" && (!e.EffectStarted || e.EffectConfirmed()):
		return fmt.Sprintf("reconciled as %s by %s at %s", e.Reconciled, e.ReconciledBy, e.ReconciledAt.UTC().Format(time.RFC3339))
	case e.State == ledger.StateDone:
		return "done with a receipt: its effect is known"
	case !e.EffectStarted:
		return "no mutating call was started for the key: nothing to verify"
	case e.State == ledger.StateInProgress && now.Before(e.LeaseUntil):
		return fmt.Sprintf("a delivery holds the key until %s: verify after it ends", e.LeaseUntil.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("its effect is not unknown (state %s)", e.State)
}

func countVerified(res *redrivetype.VerifyResult) {
	c := map[string]int{}
	for _, k := range res.Keys {
		switch {
		case k.Skipped != "":
			c["skipped"]++
		default:
			c[string(k.Verdict)]++
		}
		if k.Reconciled != "" {
			c["reconciled"]++
		}
		if k.Refused != "" {
			c["refused"]++
		}
	}
	res.Counts = c
}
