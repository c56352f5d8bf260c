package redrive

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"golang.org/x/time/rate"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/internal/sqsio"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
	"github.com/agentdlq/agentdlq/triage/dlq"
)

// selectAPI is the SQS calls of a selective redrive (part of API).
type selectAPI interface {
	queueAPI
	ReceiveMessage(ctx context.Context, params *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	SendMessage(ctx context.Context, params *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	DeleteMessage(ctx context.Context, params *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	ChangeMessageVisibility(ctx context.Context, params *sqs.ChangeMessageVisibilityInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
	ChangeMessageVisibilityBatch(ctx context.Context, params *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
}

// Defaults of a selective redrive.
const (
	// DefaultHold is the visibility timeout of the received dead letters: how
	// long a message is hidden while it is sent and deleted. A crash leaves
	// the message hidden this long, then a rerun sees it again.
	DefaultHold = 60 * time.Second
	// defaultIdleReceives: a pass ends after this many receives that brought
	// no message it had not seen.
	defaultIdleReceives = 3
	// DefaultCanaryTimeout bounds the wait for the canary's outcome.
	DefaultCanaryTimeout = 5 * time.Minute
	// defaultCanaryPoll is how often the canary's outcome is checked.
	defaultCanaryPoll = 2 * time.Second
	// MaxLetters bounds the moved letters a result lists (the counts stay exact).
	MaxLetters = 1000
	// defaultWorkers is how many dead letters of one receive move at once
	// (the rate limiter paces them all).
	defaultWorkers = 8
	// maxHeld bounds the dead letters a pass keeps hidden until it ends (the
	// ones it did not choose, and a dry run's). Past it they are released at
	// once, and may crowd the receives that follow.
	maxHeld = 100_000
)

// SelectRequest asks for a selective redrive.
type SelectRequest struct {
	Who
	// Reasons is required: the reasons whose dead letters move, one class
	// of cause at a time. Fingerprints is optional: only these groups of
	// them (every group when empty).
	Reasons      []deadletter.Reason
	Fingerprints []string
	// Filter is optional: of the dead letters of Reasons (and
	// Fingerprints), only those it chooses move (dlq.Filter: tool,
	// tenant, time window, error text). The audit record names it.
	Filter dlq.Filter
	// Groups is optional: the DLQ's groups from a read-only scan
	// (a triage report's). With them, each of Fingerprints may be a
	// unique prefix of at least 8 characters. Without them, Select scans
	// the DLQ itself when a fingerprint is shorter than
	// triage.FingerprintLen, after the gate's checks that need no AWS call.
	Groups []Group
	// Rate is messages sent a second: 1..500.
	Rate int
	// Canary is optional: move this many first, wait for their outcome, and
	// stop if any failed.
	Canary int
	// DryRun moves nothing and reports what would move.
	DryRun bool
	// Limit is optional: move at most this many (0: all that match).
	Limit int
	// PerTenant is optional (0: none): move at most this many letters of
	// any one tenant this pass, the rest staying for the next; with
	// Canary, the canary is per tenant (tenant.go).
	PerTenant int
	Ack       Ack

	// Workers is optional (default 8): concurrent moves.
	Workers int
	// Hold is optional (DefaultHold).
	Hold time.Duration
	// WaitSeconds is the receive long-poll wait (default 1).
	WaitSeconds int32
	// IdleReceives is optional (default 3): a pass ends after this many
	// receives that brought no letter it had not seen.
	IdleReceives int
	// CanaryTimeout is optional (DefaultCanaryTimeout): how long the canary's
	// outcome is awaited, polled every 2 s.
	CanaryTimeout time.Duration
	CanaryPoll    time.Duration

	// reconciledOnly are the chosen reasons that may never be redriven
	// blindly (effect_unknown) and have no override: of them, only the
	// dead letters whose key the owner reconciled as no effect move.
	reconciledOnly map[deadletter.Reason]bool
}

// movedLetter is one dead letter a selective redrive moved (or would move).
type movedLetter struct {
	DLQMessageID      string            `json:"dlq_message_id"`
	HotMessageID      string            `json:"hot_message_id,omitempty"`
	OriginalMessageID string            `json:"original_message_id,omitempty"`
	Reason            deadletter.Reason `json:"reason"`
	Fingerprint       string            `json:"fingerprint,omitempty"`
	IdempotencyKey    string            `json:"idempotency_key,omitempty"`
	Tenant            string            `json:"tenant,omitempty"`
	BodySHA256        string            `json:"body_sha256"`
}

// SelectResult counts what a selective redrive saw and did. Every message
// seen is either moved, released (not chosen, or a dry run), deleted as a
// copy of one moved (CopiesDeleted), left in the DLQ because its claim
// check restored nothing, or left in the DLQ after a failure (it becomes
// visible again after the hold).
type SelectResult struct {
	// Seen counts distinct dead letters looked at; Matched those chosen;
	// Moved those sent and deleted; Released those not chosen (or, in a dry
	// run, chosen) and made visible again at once.
	Seen     int `json:"seen"`
	Matched  int `json:"matched"`
	Moved    int `json:"moved"`
	Released int `json:"released"`
	// SendFailed: the send failed; the dead letter was released, untouched.
	// The pass stops at the first.
	SendFailed int `json:"send_failed"`
	// ClaimCheckFailed: chosen dead letters that gave up attributes to a
	// claim check that restored nothing (missing, unreadable, in another
	// bucket, …: ClaimCheckFailedBy counts them by cause, Unrestored lists
	// them). Never sent without those attributes, each stays in the DLQ,
	// released with the letters the pass did not choose, and a rerun tries
	// it again; the pass goes on with the others, and Select then returns
	// an error that says so. A dry run reads the claim checks as a move
	// would and counts here the letters that would stay (no error).
	ClaimCheckFailed   int                                 `json:"claim_check_failed"`
	ClaimCheckFailedBy map[redrivetype.ClaimCheckCause]int `json:"claim_check_failed_by,omitempty"`
	// Unrestored lists the first MaxLetters of them.
	Unrestored []redrivetype.Unrestored `json:"unrestored,omitempty"`
	// DeleteFailed: sent, but the delete failed: the dead letter stays in the
	// DLQ and a rerun sends it again (absorbed by the idempotency key).
	DeleteFailed int `json:"delete_failed"`
	// LedgerFailed: sent and deleted, but the redrive count was not incremented.
	LedgerFailed int `json:"ledger_failed"`
	// NoKey: moved without an idempotency key (a body that is not a task).
	NoKey int `json:"no_key"`
	// Returned: letters this pass moved that were dead-lettered again
	// while it ran (a fast worker failed them again). A pass moves a
	// letter once: they stay in the DLQ, left like the ones not chosen.
	Returned int `json:"returned"`
	// EffectConfirmed: chosen effect_unknown dead letters left in the DLQ
	// because the owner confirmed their effect (ledger reconcile
	// effect confirmed): they never run again; reject them.
	EffectConfirmed int `json:"skipped_effect_confirmed"`
	// NotReconciled: chosen effect_unknown dead letters left in the DLQ
	// because, without an override, only keys reconciled as no effect
	// move (Reconcile, no effect).
	NotReconciled int                       `json:"skipped_not_reconciled"`
	ByReason      map[deadletter.Reason]int `json:"by_reason"`
	// Letters lists the first MaxLetters letters moved (or, in a dry run,
	// that would move): each one's DLQ and hot message ids, original
	// message id, reason, fingerprint, idempotency key and body SHA-256.
	Letters []movedLetter `json:"letters,omitempty"`
	// Canary is the canary's outcome (nil without one): how many moved,
	// were processed, came back to the DLQ or are still pending, each hot
	// message's outcome, and how long the wait took.
	Canary *canaryResult `json:"canary,omitempty"`
	DryRun bool          `json:"dry_run"`
	// WouldMove is, for a dry run, how many chosen dead letters would move:
	// Matched less those whose claim check would restore nothing.
	WouldMove int `json:"would_move,omitempty"`
	// DepthAtStart is the DLQ's approximate depth (visible and in flight) before the pass.
	DepthAtStart int `json:"depth_at_start"`
	// Partial is set when the pass ended before the DLQ was exhausted, or
	// saw fewer dead letters than the DLQ held: a rerun is safe and goes on.
	Partial string `json:"partial,omitempty"`
	// LettersOmitted counts moved letters beyond MaxLetters, not listed in Letters.
	LettersOmitted int `json:"letters_omitted,omitempty"`
	// CopiesDeleted counts chosen dead letters that were copies of one the
	// pass moved (the same original message id, body and attributes: a
	// dead-letter send retried after SQS took it), deleted from the DLQ
	// after that move succeeded; in a dry run, that would be. They are not
	// in Seen's other counts (Matched, Moved, Released). Copies lists the
	// first MaxLetters moved letters that had copies, and the copies' DLQ
	// message ids. CopyDeleteFailed: copies whose delete failed; they stay
	// in the DLQ.
	CopiesDeleted    int             `json:"copies_deleted,omitempty"`
	Copies           []copiesDeleted `json:"copies,omitempty"`
	CopyDeleteFailed int             `json:"copy_delete_failed,omitempty"`
	// OverTenantBudget: chosen letters left in the DLQ because their
	// tenant had its PerTenant share of the pass (a rerun moves the next);
	// TenantStopped: those of tenants whose canary failed, named (hashed
	// as reports hash tenants) in TenantsCanaryFailed.
	OverTenantBudget    int      `json:"over_tenant_budget,omitempty"`
	TenantStopped       int      `json:"tenant_canary_stopped,omitempty"`
	TenantsCanaryFailed []string `json:"tenants_canary_failed,omitempty"`

	// claimCheckErr is the first claim check error, for Select's error.
	claimCheckErr *claimCheckFailure
	// dlqVisibility is the DLQ's default visibility timeout, for the
	// retry-after of a partial pass.
	dlqVisibility time.Duration
	// ofReason counts the letters of the chosen reasons (and fingerprints)
	// seen, filter or not: what a filter that chose none is told against.
	ofReason int
}

func (r *Redriver) selectRecord(req SelectRequest) audit.Entry {
	rs := make([]string, len(req.Reasons))
	for i, x := range req.Reasons {
		rs[i] = string(x)
	}
	d := ackDetail(req.Ack)
	d["rate"] = strconv.Itoa(req.Rate)
	d["destination_arn"] = r.cfg.Queues.HotARN
	if req.Canary > 0 {
		d["canary"] = strconv.Itoa(req.Canary)
	}
	if req.PerTenant > 0 {
		d["per_tenant"] = strconv.Itoa(req.PerTenant)
	}
	var only []string
	for _, x := range req.Reasons {
		if req.reconciledOnly[x] {
			only = append(only, string(x))
		}
	}
	if len(only) > 0 {
		d["reconciled_only"] = strings.Join(only, ",")
	}
	if !req.Filter.IsZero() {
		d["filter"] = r.filterText(req.Filter)
	}
	return audit.Entry{Actor: req.Owner, Action: audit.ActionSelect, Why: req.Why, Reasons: rs, Fingerprints: req.Fingerprints, Detail: d}
}

func (res *SelectResult) counts() map[string]int {
	c := map[string]int{"seen": res.Seen, "matched": res.Matched, "moved": res.Moved, "released": res.Released,
		"send_failed": res.SendFailed, "delete_failed": res.DeleteFailed, "ledger_failed": res.LedgerFailed, "no_key": res.NoKey,
		"skipped_effect_confirmed": res.EffectConfirmed, "skipped_not_reconciled": res.NotReconciled}
	for k, v := range res.ByReason {
		c["moved."+string(k)] = v
	}
	if res.ClaimCheckFailed > 0 {
		c["claim_check_failed"] = res.ClaimCheckFailed
	}
	if res.Returned > 0 {
		c["returned"] = res.Returned
	}
	if res.CopiesDeleted > 0 {
		c["copies_deleted"] = res.CopiesDeleted
	}
	if res.CopyDeleteFailed > 0 {
		c["copy_delete_failed"] = res.CopyDeleteFailed
	}
	if res.OverTenantBudget > 0 {
		c["over_tenant_budget"] = res.OverTenantBudget
	}
	if res.TenantStopped > 0 {
		c["tenant_canary_stopped"] = res.TenantStopped
	}
	for k, v := range res.ClaimCheckFailedBy {
		c["claim_check_failed."+string(k)] = v
	}
	return c
}

// Select runs a selective redrive: receive from the DLQ, tag, keep only the
// chosen dead letters (release the others at once), send each one's original
// body and attributes to the hot queue, increment its key's redrive count,
// and delete it from the DLQ only after the send succeeded.
//
// A chosen dead letter identical to one the pass moved (a copy: the same
// original message id, body and attributes, from a dead-letter send
// retried after SQS took it) is never sent: it is deleted from the DLQ
// once that move succeeded, and left there when it did not
// (CopiesDeleted, Copies; the audit record's detail copies_deleted names
// the moved letter and its deleted copies).
//
// A chosen effect_unknown dead letter moves only when its key's effect is
// settled: never when the owner confirmed the effect (ledger reconcile
// effect confirmed; counted in EffectConfirmed), and, without an
// override of effect_unknown, only when the owner reconciled it as no
// effect (the others are counted in NotReconciled).
//
// A chosen dead letter whose claim check restores nothing (claimCheckFailure:
// missing, unreadable, outside the pipeline's prefix or the eval bucket, of
// another message)
// is never sent without the attributes it gave up: it stays in the DLQ,
// released when the pass ends, counted in ClaimCheckFailed, and the pass
// goes on; Select then returns an error that says how many stay and why. A
// failed send, delete or receive stops the pass.
func (r *Redriver) Select(ctx context.Context, req SelectRequest) (*SelectResult, error) {
	req.reconciledOnly = reconciledFor(req.Reasons, req.Ack)
	rec := r.selectRecord(req)
	res := &SelectResult{ByReason: map[deadletter.Reason]int{}, DryRun: req.DryRun}
	api := r.cfg.SQS
	if req.Groups == nil && needsGroups(req.Fingerprints) {
		// A fingerprint prefix resolves against the DLQ's groups.
		if err := r.pureGate(req.Who, req.Rate); err != nil {
			return res, r.record(ctx, rec, err)
		}
		groups, _, err := r.scan(ctx)
		if err != nil {
			return res, r.record(ctx, rec, err)
		}
		req.Groups = groups
	}
	if req.Groups != nil && len(req.Fingerprints) > 0 {
		full, err := resolveFingerprints(req.Fingerprints, req.Reasons, req.Groups)
		if err != nil {
			return res, r.record(ctx, rec, err)
		}
		req.Fingerprints, rec.Fingerprints = full, full
	}
	if err := r.checkSelect(ctx, req, res); err != nil {
		return res, r.record(ctx, rec, err)
	}
	if !req.DryRun {
		begun := rec
		begun.Outcome = audit.OutcomeBegun
		if err := r.record(ctx, begun, nil); err != nil {
			return res, err // no audit, no move
		}
	}
	err := r.newPass(api, req, res).run(ctx)
	if req.DryRun {
		res.WouldMove = res.Matched - res.ClaimCheckFailed
	}
	if err == nil && res.ClaimCheckFailed > 0 && !req.DryRun {
		err = unrestoredErr(res)
	}
	var partial *redrivetype.PartialError
	if err == nil && res.Partial == "" && res.Seen < res.DepthAtStart {
		// Letters held by another receive (or by one of ours whose response
		// was lost) stay hidden until their visibility timeout; in a FIFO
		// DLQ only the head of each message group is visible. The pass
		// cannot vouch for what it did not see: that is its own outcome,
		// never "nothing selected", and a rerun after the hold goes on.
		res.Partial = fmt.Sprintf("saw %d of about %d dead letters", res.Seen, res.DepthAtStart)
		partial = &redrivetype.PartialError{Seen: res.Seen, Depth: res.DepthAtStart, FIFO: r.cfg.Queues.FIFO,
			RetryAfter: max(selectHold(req), res.dlqVisibility)}
	}
	rec.Counts = res.counts()
	if len(res.Copies) > 0 {
		rec.Detail["copies_deleted"] = copiesDetail(res.Copies)
	}
	switch {
	case err == nil && res.Matched == 0 && (partial == nil || res.EffectConfirmed+res.NotReconciled > 0):
		err = r.nothingMatched(req, res)
	case err == nil && partial != nil:
		err = partial
		rec.Outcome = audit.OutcomePartial
		if req.DryRun {
			rec.Outcome = audit.OutcomeDryRun
		}
	case err == nil && req.DryRun:
		rec.Outcome = audit.OutcomeDryRun
	case err == nil && res.Partial != "":
		rec.Outcome = audit.OutcomePartial
	case errors.Is(err, ErrCanaryFailed):
		rec.Outcome = audit.OutcomeStopped
	}
	return res, r.record(ctx, rec, err)
}

// selectHold is the visibility timeout of a pass's receives.
func selectHold(req SelectRequest) time.Duration {
	if req.Hold > 0 {
		return req.Hold
	}
	return DefaultHold
}

// unrestoredErr is the error of a pass that left chosen dead letters in the
// DLQ because their claim check restored nothing.
func unrestoredErr(res *SelectResult) error {
	causes := make([]string, 0, len(res.ClaimCheckFailedBy))
	for c, n := range res.ClaimCheckFailedBy {
		causes = append(causes, fmt.Sprintf("%s %d", c, n))
	}
	sort.Strings(causes)
	return fmt.Errorf("%d chosen dead letters stay in the DLQ because their claim check restored nothing (%s), %d moved: fix the claim check or the eval bucket setting and rerun, or reject them; the first: %w",
		res.ClaimCheckFailed, strings.Join(causes, ", "), res.Moved, res.claimCheckErr.Err)
}

func (r *Redriver) nothingMatched(req SelectRequest, res *SelectResult) error {
	if res.EffectConfirmed+res.NotReconciled > 0 {
		var why []string
		var next []redrivetype.Step
		eu := deadletter.ReasonEffectUnknown
		if res.NotReconciled > 0 {
			why = append(why, fmt.Sprintf("%d not reconciled as no effect: reconcile each key first (the triage report lists them)", res.NotReconciled))
			next = append(next, redrivetype.Step{Action: audit.ActionReconcile, Reason: eu, Needs: []string{"Key", "Outcome"}})
		}
		if res.EffectConfirmed > 0 {
			why = append(why, fmt.Sprintf("%d with their effect confirmed: they never run again; reject them or let retention drop them", res.EffectConfirmed))
			next = append(next, redrivetype.Step{Action: audit.ActionReject, Reason: eu})
		}
		rf := refuse(redrivetype.CodeForbidden, "no effect_unknown dead letter may move: %s", strings.Join(why, "; "))
		rf.Next = next
		return rf
	}
	if len(req.Fingerprints) > 0 {
		// Letters a canary moved are on the hot queue until the worker
		// dead-letters them again: a rerun then finds them.
		rf := refuseField(redrivetype.CodeUnknownGroup, "Fingerprints", "%s: the DLQ, seen whole, holds no dead letter of reason %s with it now (letters a canary moved come back only when the worker dead-letters them again)",
			strings.Join(req.Fingerprints, ", "), joinReasons(req.Reasons))
		rf.Next = []redrivetype.Step{{Action: audit.ActionPlan}}
		return rf
	}
	if !req.Filter.IsZero() {
		rf := refuseField(redrivetype.CodeNothingSelected, "Filter", "%s: the DLQ, seen whole, holds no dead letter of reason %s that the filter chooses (%d of the reason seen)",
			r.filterText(req.Filter), joinReasons(req.Reasons), res.ofReason)
		rf.Next = []redrivetype.Step{{Action: audit.ActionPlan}}
		return rf
	}
	rf := refuseField(redrivetype.CodeNothingSelected, "Reasons", "%s: the DLQ, seen whole, holds no dead letter of it", joinReasons(req.Reasons))
	rf.Next = []redrivetype.Step{{Action: audit.ActionPlan}}
	return rf
}

func joinReasons(rs []deadletter.Reason) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = string(r)
	}
	return strings.Join(s, ", ")
}

// checkSelect is everything that must hold before a message moves.
func (r *Redriver) checkSelect(ctx context.Context, req SelectRequest, res *SelectResult) error {
	if len(req.Reasons) == 0 {
		return refuseField(redrivetype.CodeUnknownReason, "Reasons", "is required: redrive one class of cause at a time")
	}
	for _, x := range req.Reasons {
		if !x.Valid() {
			return refuseField(redrivetype.CodeUnknownReason, "Reasons", "%q is not a reason of the taxonomy", x)
		}
	}
	if req.Canary < 0 {
		return refuseField(redrivetype.CodeBadInput, "Canary", "%d is negative: give 0 (no canary) or more", req.Canary)
	}
	if req.Limit < 0 {
		return refuseField(redrivetype.CodeBadInput, "Limit", "%d is negative: give 0 (every chosen letter) or more", req.Limit)
	}
	switch {
	case req.PerTenant < 0:
		return refuseField(redrivetype.CodeBadInput, "PerTenant", "%d is negative: give 0 (no per-tenant budget) or more", req.PerTenant)
	case req.PerTenant > 0 && req.Canary > req.PerTenant:
		return refuseField(redrivetype.CodeBadInput, "Canary", "%d is more than the per-tenant budget %d: with a per-tenant budget the canary is per tenant, and must fit in it", req.Canary, req.PerTenant)
	}
	if err := checkFilter(req.Filter); err != nil {
		return err
	}
	if err := r.authorize(ctx, req.Who, req.Rate); err != nil {
		return err
	}
	var checked []deadletter.Reason
	for _, x := range req.Reasons {
		if !req.reconciledOnly[x] {
			checked = append(checked, x)
		}
	}
	if err := checkReasons(checked, req.Ack); err != nil {
		return err
	}
	if err := r.checkDestination(ctx, ""); err != nil {
		return err
	}
	d, err := r.depth(ctx)
	if err != nil {
		return err
	}
	if d.visible+d.inFlight == 0 {
		return refuse(redrivetype.CodeDLQEmpty, "the DLQ of pipeline %q is empty: nothing to redrive", r.cfg.Pipeline.Name)
	}
	res.DepthAtStart, res.dlqVisibility = d.visible+d.inFlight, d.visibility
	return nil
}

// reconciledFor returns the reasons of reasons that may never be redriven
// blindly (effect_unknown) and that ack does not override: Select moves
// their dead letters only when the key was reconciled as no effect.
func reconciledFor(reasons []deadletter.Reason, ack Ack) map[deadletter.Reason]bool {
	out := map[deadletter.Reason]bool{}
	for _, x := range reasons {
		if x.Redrivable() == deadletter.RedriveNeverBlind && !Decide(x, ack).Allowed {
			out[x] = true
		}
	}
	return out
}

// settled reports whether a chosen dead letter may move as far as its
// key's reconciliation goes: always for a reason that is not
// effect_unknown; never for a key whose effect the owner confirmed; and,
// for a reason in req.reconciledOnly, only for a key reconciled as no
// effect. A letter that may not move is counted and left in the DLQ.
func (r *Redriver) settled(ctx context.Context, req SelectRequest, l *letter, res *SelectResult) bool {
	if l.Reason.Redrivable() != deadletter.RedriveNeverBlind {
		return true
	}
	o := restore(l)
	key := o.IdempotencyKey
	var e ledger.Entry
	ok := false
	if key != "" {
		var err error
		if e, ok, err = r.cfg.Ledger.Get(ctx, r.ledgerKey(o.Tenant, key)); err != nil {
			// Unknown is not "no effect": leave it.
			r.log().WarnContext(ctx, "ledger read failed: the effect_unknown dead letter stays in the DLQ", "message_id", l.MessageID, "error", err.Error())
			res.NotReconciled++
			return false
		}
	}
	switch {
	case ok && e.EffectConfirmed():
		res.EffectConfirmed++
		return false
	case req.reconciledOnly[l.Reason] && !(ok && e.NoEffect()):
		res.NotReconciled++
		return false
	}
	return true
}

// moveBatch moves the chosen dead letters of one receive, at most workers at
// a time, all paced by the limiter. After the first failure it starts no
// more moves and releases the letters it did not start; it returns the
// canary items of the letters it moved, the letters it left because their
// claim check restored nothing (not a failure: the others go on), and the
// first error.
func (r *Redriver) moveBatch(ctx context.Context, api selectAPI, limiter *rate.Limiter, workers int, todo []letter, res *SelectResult) ([]canaryItem, []*letter, error) {
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		items    []canaryItem
		left     []*letter
		firstErr error
	)
	sem := make(chan struct{}, workers)
	for i := range todo {
		l := &todo[i]
		sem <- struct{}{}
		mu.Lock()
		failed := firstErr != nil
		mu.Unlock()
		if failed {
			<-sem
			r.release(context.WithoutCancel(ctx), api, l)
			mu.Lock()
			res.Released++
			mu.Unlock()
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			at := r.now()
			mv, before, st, err := r.moveOne(ctx, api, limiter, l)
			mu.Lock()
			defer mu.Unlock()
			st.apply(res, l.Reason, mv)
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			if st.claimCheck != nil {
				// Not sent: left, never a canary letter (no outcome could come).
				left = append(left, l)
				return
			}
			items = append(items, canaryItem{moved: mv, before: before, at: at})
			if r.cfg.OnMove != nil {
				r.cfg.OnMove() // as each one moves: a progress bar advances at the pace of the rate limit
			}
		}()
	}
	wg.Wait()
	return items, left, firstErr
}

// moveStatus is what happened to one dead letter in moveOne.
type moveStatus struct {
	moved, sendFailed, deleteFailed, ledgerFailed, noKey, released bool
	// claimCheck: its claim check restored nothing; not sent, not released.
	claimCheck *claimCheckFailure
}

func (st moveStatus) apply(res *SelectResult, reason deadletter.Reason, mv movedLetter) {
	b := func(v bool) int {
		if v {
			return 1
		}
		return 0
	}
	res.SendFailed += b(st.sendFailed)
	res.DeleteFailed += b(st.deleteFailed)
	res.LedgerFailed += b(st.ledgerFailed)
	res.NoKey += b(st.noKey)
	res.Released += b(st.released)
	if cc := st.claimCheck; cc != nil {
		res.ClaimCheckFailed++
		if res.ClaimCheckFailedBy == nil {
			res.ClaimCheckFailedBy = map[redrivetype.ClaimCheckCause]int{}
		}
		res.ClaimCheckFailedBy[cc.Cause]++
		if res.claimCheckErr == nil {
			res.claimCheckErr = cc
		}
		if len(res.Unrestored) < MaxLetters {
			res.Unrestored = append(res.Unrestored, redrivetype.Unrestored{DLQMessageID: mv.DLQMessageID, OriginalMessageID: mv.OriginalMessageID,
				Reason: reason, ClaimCheck: cc.Ref, Cause: cc.Cause, Error: cc.message()})
		}
	}
	if st.moved {
		res.Moved++
		res.ByReason[reason]++
		if len(res.Letters) < MaxLetters {
			res.Letters = append(res.Letters, mv)
		} else {
			res.LettersOmitted++
		}
	}
}

// moveOne sends one dead letter back, then counts its redrive, then deletes
// it. It never deletes before the send succeeded.
func (r *Redriver) moveOne(ctx context.Context, api selectAPI, limiter *rate.Limiter, l *letter) (movedLetter, ledger.Entry, moveStatus, error) {
	var st moveStatus
	o := restore(l)
	mv := movedLetter{DLQMessageID: l.MessageID, OriginalMessageID: o.OriginalMessageID, Reason: l.Reason,
		Fingerprint: l.Fingerprint, IdempotencyKey: o.IdempotencyKey, Tenant: o.Tenant, BodySHA256: bodySHA256(l.Body)}
	log := r.log().With("message_id", l.MessageID, "queue", r.cfg.Queues.HotURL, "reason", string(l.Reason), "pipeline", r.cfg.Pipeline.Name)
	var before ledger.Entry
	if o.IdempotencyKey != "" {
		if e, ok, err := r.cfg.Ledger.Get(ctx, r.ledgerKey(o.Tenant, o.IdempotencyKey)); err == nil && ok {
			before = e
		}
	}
	if cc := r.restoreEvidence(ctx, &o); cc != nil {
		if ctx.Err() != nil {
			// Interrupted during the read: not the claim check's fault.
			r.release(context.WithoutCancel(ctx), api, l)
			st.released = true
			return mv, before, st, ctx.Err()
		}
		// Never sent without the attributes it gave up: it stays, and the
		// caller leaves it in the DLQ with the letters it did not choose.
		st.claimCheck = cc
		log.WarnContext(ctx, "claim check restored nothing; the dead letter stays in the DLQ", "cause", string(cc.Cause), "error", cc.Err.Error())
		return mv, before, st, nil
	}
	if err := limiter.Wait(ctx); err != nil {
		r.release(context.WithoutCancel(ctx), api, l)
		st.released = true
		return mv, before, st, err
	}
	in := &sqs.SendMessageInput{
		QueueUrl:          aws.String(r.cfg.Queues.HotURL),
		MessageBody:       aws.String(o.Body),
		MessageAttributes: attributesToSQS(o.Attributes),
	}
	if r.cfg.Queues.FIFO {
		if o.GroupID == "" {
			r.release(ctx, api, l)
			st.sendFailed = true
			return mv, before, st, fmt.Errorf("dead letter %s has no message group id (neither in dlq_meta nor on the message): cannot send it to FIFO queue %s", l.MessageID, r.cfg.Queues.HotURL)
		}
		in.MessageGroupId = aws.String(o.GroupID)
		in.MessageDeduplicationId = aws.String(o.DedupID)
	} else if g := pipeline.TenantGroupID(l.Hints.Tenant); g != "" && r.cfg.Pipeline.FairQueueTenants() {
		in.MessageGroupId = aws.String(g) // the tenant, as its producer sent it: a fair queue
	}
	out, err := api.SendMessage(ctx, in)
	if err != nil {
		st.sendFailed = true
		r.release(context.WithoutCancel(ctx), api, l)
		log.WarnContext(ctx, "redrive send failed; the dead letter stays in the DLQ", "error", err.Error())
		return mv, before, st, fmt.Errorf("send %s to %s: %w", l.MessageID, r.cfg.Queues.HotURL, err)
	}
	mv.HotMessageID = aws.ToString(out.MessageId)
	if o.IdempotencyKey == "" {
		st.noKey = true
	} else if _, err := r.cfg.Ledger.Redriven(ctx, r.ledgerKey(o.Tenant, o.IdempotencyKey), r.now()); err != nil {
		st.ledgerFailed = true
		log.WarnContext(ctx, "redrive count not incremented", "error", err.Error())
	}
	if _, err := api.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(r.cfg.Queues.DLQURL), ReceiptHandle: aws.String(l.ReceiptHandle)}); err != nil {
		st.deleteFailed = true
		log.WarnContext(ctx, "sent but not deleted: the dead letter stays in the DLQ; a rerun sends it again and the idempotency key absorbs it", "error", err.Error())
		return mv, before, st, fmt.Errorf("delete %s from the DLQ after sending it as %s: %w", l.MessageID, mv.HotMessageID, err)
	}
	st.moved = true
	log.InfoContext(ctx, "redriven", "hot_message_id", mv.HotMessageID, "idempotency_key_set", o.IdempotencyKey != "")
	return mv, before, st, nil
}

// release makes a received dead letter visible again at once.
func (r *Redriver) release(ctx context.Context, api selectAPI, l *letter) {
	_, err := api.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(r.cfg.Queues.DLQURL), ReceiptHandle: aws.String(l.ReceiptHandle), VisibilityTimeout: 0,
	})
	if err != nil {
		r.log().WarnContext(ctx, "release failed: the dead letter becomes visible after its hold", "message_id", l.MessageID, "queue", r.cfg.Queues.DLQURL, "error", err.Error())
	}
}

// rehide hides a held letter that came back for d (at most SQS's 12 hours).
func (r *Redriver) rehide(ctx context.Context, api selectAPI, l *letter, d time.Duration) {
	_, err := api.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(r.cfg.Queues.DLQURL), ReceiptHandle: aws.String(l.ReceiptHandle), VisibilityTimeout: int32(min(d, 12*time.Hour) / time.Second),
	})
	if err != nil {
		r.log().WarnContext(ctx, "hold extension failed: the dead letter may be received again", "message_id", l.MessageID, "queue", r.cfg.Queues.DLQURL, "error", err.Error())
	}
}

// releaseHeld makes the letters a pass held visible again, ten a call. A
// failure is not fatal: they come back when their hold lapses.
func (r *Redriver) releaseHeld(ctx context.Context, api selectAPI, held map[string]string) {
	if _, failed, err := sqsio.Release(ctx, api, r.cfg.Queues.DLQURL, held); failed > 0 {
		attrs := []any{"count", failed, "queue", r.cfg.Queues.DLQURL}
		if err != nil {
			attrs = append(attrs, "error", err.Error())
		}
		r.log().WarnContext(ctx, "release failed: these dead letters become visible after their hold", attrs...)
	}
}

// sortedReasons returns the keys of a count by reason, in taxonomy order.
func sortedReasons(m map[deadletter.Reason]int) []deadletter.Reason {
	out := make([]deadletter.Reason, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return order(out[i]) < order(out[j]) })
	return out
}
