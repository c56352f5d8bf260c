package redrive

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	jsonpatch "github.com/evanphx/json-patch/v5"

	"github.com/agentdlq/agentdlq/events/agenttask"
	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/internal/textutil"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
)

// RepairRequest asks to repair one dead letter's task and send it back:
// an RFC 6902 JSON Patch applied to the task's args.
type RepairRequest struct {
	Who
	// MessageID is the dead letter's message id in the DLQ (the triage
	// report's and the console's), or the task's message id on the hot
	// queue before it was dead-lettered (dlq_meta's message_id).
	MessageID string
	// Patch is the RFC 6902 JSON Patch document, applied to the task's
	// args (paths are relative to args: "/query", not "/args/query").
	Patch []byte
	// Preview applies and checks the patch and returns the diff, and
	// changes nothing: nothing is sent, kept or deleted (audited as a dry run).
	Preview bool
	// Hold is optional (DefaultHold): how long the letters received while
	// looking for this one stay hidden (released when the repair ends).
	Hold time.Duration
	// WaitSeconds is the receive long-poll wait (default 1).
	WaitSeconds int32
}

// maxAuditedPatch bounds the patch an audit record holds (the evidence
// document in the eval bucket holds it whole).
const maxAuditedPatch = 4096

// truncate cuts s to at most n bytes, on a rune boundary, marking the cut
// ("…"): a reader of the audit record must see that the patch goes on.
func truncate(s string, n int) string {
	if t := textutil.Truncate(s, n); len(t) < len(s) {
		return t + "…"
	}
	return s
}

// repairRecordVersion is the version of the evidence document Repair keeps.
const repairRecordVersion = 1

// repairEvidence is the document Repair keeps in the eval bucket before it
// sends anything: the dead letter as it was, and what was done to it.
type repairEvidence struct {
	Version           int                             `json:"v"`
	Kind              string                          `json:"kind"`
	Pipeline          string                          `json:"pipeline"`
	DLQMessageID      string                          `json:"dlq_message_id"`
	OriginalMessageID string                          `json:"original_message_id,omitempty"`
	Reason            deadletter.Reason               `json:"reason"`
	RepairedAt        time.Time                       `json:"repaired_at"`
	Actor             string                          `json:"actor"`
	Why               string                          `json:"why"`
	Patch             json.RawMessage                 `json:"patch"`
	BodyBeforeSHA256  string                          `json:"body_before_sha256"`
	BodyAfterSHA256   string                          `json:"body_after_sha256"`
	RepairedKey       string                          `json:"repaired_idempotency_key,omitempty"`
	Body              string                          `json:"body"`
	Attributes        map[string]deadletter.Attribute `json:"attributes,omitempty"`
	Meta              *deadletter.Meta                `json:"dlq_meta,omitempty"`
}

// Repair applies an RFC 6902 JSON Patch to one dead letter's task args,
// checks the repaired task against the agent task contract (and the
// catalog, Config.Catalog), and sends it to the pipeline's own hot queue;
// it keeps the original in the eval bucket first (Evidence), audits the
// patch and the before and after digests, and deletes the dead letter only
// after the send succeeded. With Preview it does all the checks, returns
// the diff and changes nothing.
//
// It is refused, and nothing changes, when: the gate refuses (owner, why,
// the DLQ's tags, the caller); the patch is not a JSON Patch, does not
// apply, or changes nothing; the repaired task breaks the contract; the
// reason's policy says a patch does not repair it (deadletter.Reason.Patchable:
// a signature, a guardrail or a reused key is never patched around, nor a
// redrive loop, and a letter whose args are not at fault is retried or
// fixed instead); a mutating tool's task is not settled as no
// effect in the ledger (see repairSettled); or the DLQ holds no such
// letter (a rerun after a repair finds none, and says when it was
// repaired). A DLQ seen only in part is a *PartialError, as in Select.
func (r *Redriver) Repair(ctx context.Context, req RepairRequest) (*redrivetype.RepairResult, error) {
	res := &redrivetype.RepairResult{Pipeline: r.cfg.Pipeline.Name, Preview: req.Preview}
	rec := audit.Entry{Actor: req.Owner, Action: audit.ActionRepair, Why: req.Why,
		Detail: map[string]string{"message_id": req.MessageID, "destination_arn": r.cfg.Queues.HotARN}}
	if json.Valid(req.Patch) {
		res.Patch = compactJSON(req.Patch)
		rec.Detail["patch"] = truncate(string(r.auditedPatch(res.Patch)), maxAuditedPatch)
	}
	patch, err := r.checkRepair(ctx, req)
	if err != nil {
		return res, r.record(ctx, rec, err)
	}
	l, search, err := r.findLetter(ctx, req)
	defer func() { r.releaseHeld(context.WithoutCancel(ctx), r.cfg.SQS, search.held) }()
	res.Seen = len(search.seen)
	if err != nil {
		return res, r.record(ctx, rec, r.notFoundWhy(ctx, req, err))
	}
	err = r.repairLetter(ctx, req, patch, l, res, &rec)
	if err == nil && !req.Preview {
		// The repaired task replaces the letter and every copy of it.
		deleted, cerr := search.deleteCopies(ctx, l)
		res.Seen = len(search.seen)
		if len(deleted) > 0 {
			res.CopiesDeleted = deleted
			rec.Detail["copies_deleted"] = copiesDetail([]copiesDeleted{{DLQMessageID: l.MessageID, OriginalMessageID: res.OriginalMessageID, Deleted: deleted}})
		}
		if cerr != nil {
			// The repair is done; only copies stay, which triage lists.
			res.CopiesLeft = cerr.Error()
			rec.Detail["copies_left"] = cerr.Error()
			r.log().WarnContext(ctx, "copies of the repaired dead letter may stay in the DLQ", "message_id", l.MessageID, "error", cerr.Error())
		}
	}
	return res, r.record(ctx, rec, err)
}

// checkRepair is what needs no dead letter: the request, the patch, the
// gate and the configuration.
func (r *Redriver) checkRepair(ctx context.Context, req RepairRequest) (jsonpatch.Patch, error) {
	if strings.TrimSpace(req.MessageID) == "" {
		return nil, refuseField(redrivetype.CodeBadInput, "MessageID", "is required: the dead letter's message id (the triage report and the console list them)")
	}
	if len(bytes.TrimSpace(req.Patch)) == 0 {
		return nil, refuseField(redrivetype.CodeBadInput, "Patch", "is required: an RFC 6902 JSON Patch of the task's args, such as [{\"op\":\"replace\",\"path\":\"/max_results\",\"value\":10}]")
	}
	patch, err := jsonpatch.DecodePatch(req.Patch)
	if err != nil {
		return nil, refuseField(redrivetype.CodeBadInput, "Patch", "is not an RFC 6902 JSON Patch (a JSON array of operations): %v", err)
	}
	if len(patch) == 0 {
		return nil, refuseField(redrivetype.CodeBadInput, "Patch", "holds no operation: it would change nothing")
	}
	if err := r.authorizeAs(ctx, audit.ActionRepair, req.Who, minRate); err != nil {
		return nil, err
	}
	if !req.Preview && (r.cfg.EvidenceWriter == nil || r.cfg.EvidenceBucket == "") {
		return nil, refuse(redrivetype.CodeBadInput, "no eval bucket to keep the original in (Config.EvidenceWriter and EvidenceBucket): a repair never sends a task without keeping the one it replaces")
	}
	if err := r.checkDestination(ctx, ""); err != nil {
		return nil, err
	}
	return patch, nil
}

// letterSearch is a repair's walk through the DLQ: receives that hide
// what they bring (held: released when the repair ends), each letter seen
// once, until the DLQ is exhausted. keys are the copy keys of the held
// letters that have one (copyKey), so that the copies of the repaired
// letter among them are known.
type letterSearch struct {
	r     *Redriver
	hold  time.Duration
	wait  int32
	depth int // visible and in flight at the start
	vis   time.Duration
	seen  map[string]bool
	held  map[string]string
	keys  map[string]string
	idle  int
}

// exhausted: the search saw the whole DLQ (a few receives in a row brought
// nothing new), or gave up (ten times as many while it saw fewer letters
// than the DLQ held).
func (s *letterSearch) exhausted() bool {
	return len(s.seen) >= s.depth && s.idle >= defaultIdleReceives || s.idle >= 10*defaultIdleReceives
}

// next receives once and returns the letters not seen before.
func (s *letterSearch) next(ctx context.Context) ([]letter, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out, err := s.r.cfg.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(s.r.cfg.Queues.DLQURL), MaxNumberOfMessages: 10, VisibilityTimeout: int32(s.hold / time.Second),
		WaitTimeSeconds: s.wait, MessageAttributeNames: []string{"All"},
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
	})
	if err != nil {
		return nil, s.r.queueErr(err, s.r.cfg.Queues.DLQURL)
	}
	var fresh []letter
	for _, m := range out.Messages {
		l := fromSQS(m)
		if s.seen[l.MessageID] {
			if _, ok := s.held[l.MessageID]; ok {
				s.held[l.MessageID] = l.ReceiptHandle // back after its hold: keep the new handle
			}
			continue
		}
		s.seen[l.MessageID] = true
		fresh = append(fresh, l)
	}
	if len(fresh) == 0 {
		s.idle++
	} else {
		s.idle = 0
	}
	return fresh, nil
}

// keep hides a letter the repair does not change until the repair ends.
func (s *letterSearch) keep(ctx context.Context, l *letter) {
	if s.r.cfg.Queues.FIFO || len(s.held) >= maxHeld {
		// Released at once, as a pass leaves them (pass.leave): held,
		// a FIFO letter would block its message group.
		s.r.release(ctx, s.r.cfg.SQS, l)
		return
	}
	s.held[l.MessageID] = l.ReceiptHandle
	if orig := originalID(l); orig != "" {
		s.keys[l.MessageID] = copyKey(orig, l)
	}
}

// findLetter receives from the DLQ until it finds the letter of id, hiding
// the others (held: released when the repair ends). Without it, a DLQ seen
// whole is a refusal (CodeLetterNotFound); one seen in part a *PartialError.
func (r *Redriver) findLetter(ctx context.Context, req RepairRequest) (*letter, *letterSearch, error) {
	s := &letterSearch{r: r, hold: req.Hold, wait: req.WaitSeconds, seen: map[string]bool{}, held: map[string]string{}, keys: map[string]string{}}
	d, err := r.depth(ctx)
	if err != nil {
		return nil, s, err
	}
	if d.visible+d.inFlight == 0 {
		return nil, s, refuse(redrivetype.CodeLetterNotFound, "the DLQ of pipeline %q is empty: no dead letter %s", r.cfg.Pipeline.Name, req.MessageID)
	}
	s.depth, s.vis = d.visible+d.inFlight, d.visibility
	if s.hold <= 0 {
		s.hold = DefaultHold
	}
	switch {
	case s.wait == 0:
		s.wait = 1
	case s.wait < 0:
		s.wait = 0
	}
	for !s.exhausted() {
		fresh, err := s.next(ctx)
		if err != nil {
			return nil, s, err
		}
		var found *letter
		for i := range fresh {
			l := &fresh[i]
			if found == nil && (l.MessageID == req.MessageID || originalID(l) == req.MessageID) {
				found = l
				continue
			}
			s.keep(ctx, l)
		}
		if found != nil {
			return found, s, nil
		}
	}
	if len(s.seen) < s.depth {
		return nil, s, &redrivetype.PartialError{Seen: len(s.seen), Depth: s.depth, FIFO: r.cfg.Queues.FIFO, RetryAfter: max(s.hold, s.vis)}
	}
	return nil, s, refuseField(redrivetype.CodeLetterNotFound, "MessageID", "%s: the DLQ of pipeline %q, seen whole (%d dead letters), holds no such dead letter", req.MessageID, r.cfg.Pipeline.Name, len(s.seen))
}

// deleteCopies deletes, after l was repaired and deleted, its copies (the
// letters identical to it: copyKeyOf): the ones the search held, then the
// ones the rest of the DLQ holds (the search goes on to its end). It
// returns the DLQ message ids it deleted; a receive that fails stops it
// (the copies not reached stay in the DLQ, and triage lists them), and a
// delete that fails leaves that copy.
func (s *letterSearch) deleteCopies(ctx context.Context, l *letter) ([]string, error) {
	key, ok := copyKeyOf(l)
	if !ok {
		return nil, nil
	}
	var deleted []string
	var firstErr error
	del := func(id, receipt string) {
		if _, err := s.r.cfg.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(s.r.cfg.Queues.DLQURL), ReceiptHandle: aws.String(receipt)}); err != nil {
			s.r.log().WarnContext(ctx, "copy of a repaired dead letter not deleted: it stays in the DLQ", "message_id", id, "copy_of", l.MessageID, "error", err.Error())
			if firstErr == nil {
				firstErr = fmt.Errorf("delete copy %s: %w", id, err)
			}
			return
		}
		delete(s.held, id)
		deleted = append(deleted, id)
	}
	ids := make([]string, 0)
	for id, k := range s.keys {
		if k == key {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		del(id, s.held[id])
	}
	for !s.exhausted() {
		fresh, err := s.next(ctx)
		if err != nil {
			return deleted, err
		}
		for i := range fresh {
			c := &fresh[i]
			if orig := originalID(c); orig != "" && copyKey(orig, c) == key {
				del(c.MessageID, c.ReceiptHandle)
				continue
			}
			s.keep(ctx, c)
		}
	}
	return deleted, firstErr
}

// originalID is the hot queue's message id of the letter's task, as
// dlq_meta says it ("" without readable metadata).
func originalID(l *letter) string {
	meta, _, err := deadletter.DecodeDeadLetter(l.Attributes)
	if err != nil || meta == nil {
		return ""
	}
	return meta.MessageID
}

// notFoundWhy completes a letter-not-found refusal with the audit's
// record of an earlier repair of the same letter, so that a rerun after
// success says what happened.
func (r *Redriver) notFoundWhy(ctx context.Context, req RepairRequest, err error) error {
	var rf *Refusal
	if !errors.As(err, &rf) || rf.Code != redrivetype.CodeLetterNotFound {
		return err
	}
	es, aerr := r.cfg.Audit.Entries(ctx, r.cfg.Pipeline.Name, audit.ActionRepair)
	if aerr != nil {
		return err
	}
	for i := len(es) - 1; i >= 0; i-- {
		e := es[i]
		if e.Outcome == audit.OutcomeOK && (e.Detail["dlq_message_id"] == req.MessageID || e.Detail["original_message_id"] == req.MessageID) {
			told := *rf
			told.Reason += fmt.Sprintf(": it was repaired by %s at %s and sent as %s (the original is kept at %s)",
				e.Actor, e.Time.UTC().Format(time.RFC3339), e.Detail["hot_message_id"], e.Detail["evidence"])
			return &told
		}
	}
	return err
}

// repairLetter repairs the found letter l (held by this receive): patch,
// check, keep, send, delete. Whatever stops it releases l untouched.
func (r *Redriver) repairLetter(ctx context.Context, req RepairRequest, patch jsonpatch.Patch, l *letter, res *redrivetype.RepairResult, rec *audit.Entry) (err error) {
	deleted := false
	defer func() {
		if !deleted {
			r.release(context.WithoutCancel(ctx), r.cfg.SQS, l)
		}
	}()
	l.Tagged = r.tag(l.Message)
	o := restore(l)
	res.DLQMessageID, res.OriginalMessageID, res.Reason, res.IdempotencyKey = l.MessageID, o.OriginalMessageID, l.Reason, o.IdempotencyKey
	rec.Reasons = []string{string(l.Reason)}
	if l.Fingerprint != "" {
		rec.Fingerprints = []string{l.Fingerprint}
	}
	rec.Detail["dlq_message_id"], rec.Detail["original_message_id"] = l.MessageID, o.OriginalMessageID
	if !l.Reason.Patchable() {
		return refuse(redrivetype.CodeForbidden, "a %s dead letter is never repaired: %s", l.Reason, notPatchableWhy(l.Reason))
	}
	if cc := r.restoreEvidence(ctx, &o); cc != nil {
		return fmt.Errorf("the dead letter's claim check restored nothing, so its attributes cannot be sent back: %w (the dead letter stays in the DLQ)", cc.Err)
	}
	body, task, err := repairedBody(o.Body, patch, r.cfg.Catalog, res)
	if err != nil {
		return err
	}
	res.Tool, res.IdempotencyKey, res.RepairedKey = task.Tool, o.IdempotencyKey, task.IdempotencyKey
	rec.Detail["tool"], rec.Detail["idempotency_key"], rec.Detail["repaired_idempotency_key"] = task.Tool, o.IdempotencyKey, task.IdempotencyKey
	rec.Detail["args_before_sha256"], rec.Detail["args_after_sha256"] = res.ArgsBeforeSHA256, res.ArgsAfterSHA256
	rec.Detail["body_before_sha256"], rec.Detail["body_after_sha256"] = res.BodyBeforeSHA256, res.BodyAfterSHA256
	rec.Detail["tenant"] = o.Tenant
	if err := r.repairSettled(ctx, l, task.Tool, r.ledgerKey(o.Tenant, o.IdempotencyKey)); err != nil {
		return err
	}
	if req.Preview {
		rec.Outcome = audit.OutcomeDryRun
		return nil
	}
	now := r.now()
	ref, err := r.keepOriginal(ctx, req, l, o, res, now)
	if err != nil {
		return fmt.Errorf("the original could not be kept in the eval bucket, so nothing was sent: %w", err)
	}
	res.Evidence, rec.Detail["evidence"] = ref, ref
	begun := *rec
	begun.Outcome = audit.OutcomeBegun
	begun.Detail = maps.Clone(rec.Detail)
	if err := r.record(ctx, begun, nil); err != nil {
		return err // no audit, no send
	}
	in := &sqs.SendMessageInput{QueueUrl: aws.String(r.cfg.Queues.HotURL), MessageBody: aws.String(body), MessageAttributes: attributesToSQS(o.Attributes)}
	if r.cfg.Queues.FIFO {
		if o.GroupID == "" {
			return fmt.Errorf("dead letter %s has no message group id: cannot send it to FIFO queue %s", l.MessageID, r.cfg.Queues.HotURL)
		}
		// Deduplicated against a resend of the same repair, not of the original.
		in.MessageGroupId = aws.String(o.GroupID)
		in.MessageDeduplicationId = aws.String(bodySHA256("agentdlq-repair:" + o.OriginalMessageID + ":" + res.BodyAfterSHA256))
	}
	out, err := r.cfg.SQS.SendMessage(ctx, in)
	if err != nil {
		return fmt.Errorf("send the repaired task to %s: %w (the dead letter stays in the DLQ; rerun)", r.cfg.Queues.HotURL, err)
	}
	res.HotMessageID = aws.ToString(out.MessageId)
	rec.Detail["hot_message_id"] = res.HotMessageID
	if task.IdempotencyKey != "" {
		if _, err := r.cfg.Ledger.Redriven(ctx, r.ledgerKey(task.Tenant, task.IdempotencyKey), r.now()); err != nil {
			r.log().WarnContext(ctx, "redrive count not incremented after a repair", "message_id", l.MessageID, "error", err.Error())
			rec.Detail["ledger_failed"] = "true"
		}
	}
	if _, err := r.cfg.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(r.cfg.Queues.DLQURL), ReceiptHandle: aws.String(l.ReceiptHandle)}); err != nil {
		return fmt.Errorf("the repaired task was sent as %s, but the dead letter could not be deleted: %w (it stays in the DLQ; a rerun sends the repair again, and the idempotency key absorbs it once the first ran)", res.HotMessageID, err)
	}
	deleted = true
	r.log().InfoContext(ctx, "repaired and sent", "message_id", l.MessageID, "hot_message_id", res.HotMessageID, "reason", string(l.Reason), "pipeline", r.cfg.Pipeline.Name)
	return nil
}

// notPatchableWhy says why a reason's dead letters are not repaired with
// a patch of their args (deadletter.Reason.Patchable), and what to do instead.
func notPatchableWhy(r deadletter.Reason) string {
	switch {
	case r.Class() == deadletter.ClassSecurity:
		return "a patch must not go around a signature, a guardrail or a reused idempotency key; reject it"
	case r == deadletter.ReasonRedriveLoop:
		return "its key keeps coming back; reject it, and send a new task with a new key if the work is still wanted"
	}
	return "its args are not what is at fault; next action " + string(r.NextAction()) + ": " + r.NextAction().Describe()
}

// repairedBody applies patch to the args of body and checks the repaired
// task against the contract (agenttask.DecodeTask, with catalog when one
// is given). It fills res's diff and digests.
func repairedBody(body string, patch jsonpatch.Patch, catalog agenttask.Catalog, res *redrivetype.RepairResult) (string, agenttask.Task, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &raw); err != nil || raw == nil {
		return "", agenttask.Task{}, refuse(redrivetype.CodeRepairInvalid, "the dead letter's body is not a JSON object: there are no args to patch (reject it, and send a new task)")
	}
	args, ok := raw["args"]
	if !ok || len(bytes.TrimSpace(args)) == 0 || bytes.TrimSpace(args)[0] != '{' {
		return "", agenttask.Task{}, refuse(redrivetype.CodeRepairInvalid, "the task has no args object to patch")
	}
	after, err := patch.Apply(args)
	if err != nil {
		return "", agenttask.Task{}, refuseField(redrivetype.CodeBadInput, "Patch", "does not apply to the task's args: %v", err)
	}
	res.Before, res.After = compactJSON(args), compactJSON(after)
	res.ArgsBeforeSHA256, res.ArgsAfterSHA256 = bodySHA256(string(res.Before)), bodySHA256(string(res.After))
	if bytes.Equal(res.Before, res.After) {
		return "", agenttask.Task{}, refuseField(redrivetype.CodeBadInput, "Patch", "changes nothing in the task's args")
	}
	raw["args"] = after
	var key string
	if json.Unmarshal(raw["idempotency_key"], &key) == nil && key != "" {
		raw["idempotency_key"], _ = json.Marshal(repairedKey(key, res.ArgsAfterSHA256))
	}
	nb, err := json.Marshal(raw)
	if err != nil {
		return "", agenttask.Task{}, refuseField(redrivetype.CodeBadInput, "Patch", "makes args that are not JSON: %v", err)
	}
	res.BodyBeforeSHA256, res.BodyAfterSHA256 = bodySHA256(body), bodySHA256(string(nb))
	task, err := agenttask.DecodeTask(nb, catalog)
	if err != nil {
		return "", agenttask.Task{}, refuse(redrivetype.CodeRepairInvalid, "the repaired task breaks the agent task contract: %v", err)
	}
	return string(nb), task, nil
}

// repairedKeySuffix starts what repairedKey appends to a key.
const repairedKeySuffix = "~repair-"

// repairedKey is the idempotency key of a repaired task: the original key,
// "~repair-" and the first 12 hex digits of the SHA-256 of the repaired
// args (the original cut so that the whole stays within the contract's 256
// characters). The repaired task is another task — the project's own rule
// says a key known with other args is a reused key — so it runs under a key
// of its own; the same repair gives the same key, so a resend is absorbed.
func repairedKey(key, argsAfterSHA256 string) string {
	suffix := repairedKeySuffix + argsAfterSHA256[:min(12, len(argsAfterSHA256))]
	if r := []rune(key); len(r)+len([]rune(suffix)) > 256 {
		key = string(r[:256-len([]rune(suffix))])
	}
	return key + suffix
}

// repairSettled says whether a repaired task may run, as far as its key's
// effect goes. A read-only tool's task (the catalog says it does not
// mutate; without a catalog, only the dead letter's effect read_only
// says so) always may. A mutating tool's task may only when the ledger
// settles its effect as none: its key reconciled as no effect
// (ledger.Entry.NoEffect), or the key dead-lettered without a mutating
// call ever started (no effect_started, not done) — and, without a ledger
// entry, only when the dead letter says no mutating call started and its
// reason is not effect_unknown. A ledger that cannot be read settles
// nothing.
func (r *Redriver) repairSettled(ctx context.Context, l *letter, toolName, key string) error {
	mutates := true
	if tool, ok := r.cfg.Catalog[toolName]; ok {
		mutates = tool.Mutates
	} else if r.cfg.Catalog == nil && l.Meta != nil && l.Meta.Effect == deadletter.EffectReadOnly {
		mutates = false
	}
	if !mutates {
		return nil
	}
	next := []redrivetype.Step{{Action: audit.ActionReconcile, Reason: deadletter.ReasonEffectUnknown, Needs: []string{"Key", "Outcome"}}}
	e, found, err := r.cfg.Ledger.Get(ctx, key)
	switch {
	case err != nil:
		return fmt.Errorf("%s mutates, and the ledger could not be read for key %q, so its effect is not known to be none: %w (nothing changed; rerun)", toolName, key, err)
	case found && e.EffectConfirmed():
		return refuse(redrivetype.CodeNotSettled, "%s mutates and key %q was reconciled as effect confirmed: the task must never run again; reject it", toolName, key)
	case found && e.State == ledger.StateDone:
		return refuse(redrivetype.CodeNotSettled, "%s mutates and key %q is done in the ledger: a repaired task would be acknowledged as a no-op; send a new task with a new key if the work is still wanted", toolName, key)
	case found && e.NoEffect():
		return nil
	case found && e.EffectStarted:
		rf := refuse(redrivetype.CodeNotSettled, "%s mutates and key %q has a mutating call started without a receipt: reconcile it as no effect first", toolName, key)
		rf.Next = next
		return rf
	case l.Reason == deadletter.ReasonEffectUnknown:
		rf := refuse(redrivetype.CodeNotSettled, "%s mutates and the dead letter is effect_unknown: reconcile key %q as no effect first", toolName, key)
		rf.Next = next
		return rf
	case found:
		return nil // dead-lettered, no mutating call ever started
	case l.Meta != nil && l.Meta.Effect == deadletter.EffectNone:
		return nil // never begun: the worker said no mutating call started
	}
	rf := refuse(redrivetype.CodeNotSettled, "%s mutates, and neither the ledger (no entry for key %q) nor the dead letter says no mutating call started: its effect is not known to be none", toolName, key)
	rf.Next = next
	return rf
}

// keepOriginal writes the evidence document of a repair to the eval
// bucket, under <pipeline>/repairs/<yyyy-mm-dd>/<dlq message id>.json, and
// returns its s3:// reference. A rerun of the same repair overwrites it.
func (r *Redriver) keepOriginal(ctx context.Context, req RepairRequest, l *letter, o original, res *redrivetype.RepairResult, now time.Time) (string, error) {
	doc := repairEvidence{Version: repairRecordVersion, Kind: "repair", Pipeline: r.cfg.Pipeline.Name, DLQMessageID: l.MessageID,
		OriginalMessageID: o.OriginalMessageID, Reason: l.Reason, RepairedAt: now.UTC(), Actor: req.Owner, Why: req.Why,
		Patch: res.Patch, BodyBeforeSHA256: res.BodyBeforeSHA256, BodyAfterSHA256: res.BodyAfterSHA256, RepairedKey: res.RepairedKey,
		Body: l.Body, Attributes: o.Attributes, Meta: l.Meta}
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return "", err
	}
	key := fmt.Sprintf("%s/repairs/%s/%s.json", r.cfg.Pipeline.Name, now.UTC().Format("2006-01-02"), l.MessageID)
	if _, err := r.cfg.EvidenceWriter.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(r.cfg.EvidenceBucket), Key: aws.String(key),
		Body: bytes.NewReader(data), ContentType: aws.String("application/json")}); err != nil {
		return "", fmt.Errorf("put s3://%s/%s: %w", r.cfg.EvidenceBucket, key, err)
	}
	return "s3://" + r.cfg.EvidenceBucket + "/" + key, nil
}

// auditedPatch is the patch as the audit holds it: the value of an
// operation on a field the pipeline drops from eval records
// (eval.drop_fields, such as args.password) is replaced by its digest.
func (r *Redriver) auditedPatch(patch json.RawMessage) json.RawMessage {
	var ops []map[string]json.RawMessage
	if json.Unmarshal(patch, &ops) != nil {
		return patch
	}
	changed := false
	for _, op := range ops {
		var path string
		if json.Unmarshal(op["path"], &path) != nil {
			continue
		}
		for _, f := range r.cfg.Pipeline.Eval.DropFields {
			field, ok := strings.CutPrefix(f, "args.")
			if !ok {
				continue
			}
			p := "/" + strings.ReplaceAll(field, ".", "/")
			if v, has := op["value"]; has && (path == p || strings.HasPrefix(path, p+"/")) {
				op["value"], _ = json.Marshal("[dropped: sha256:" + bodySHA256(string(v))[:16] + "]")
				changed = true
			}
		}
	}
	if !changed {
		return patch
	}
	out, err := json.Marshal(ops)
	if err != nil {
		return patch
	}
	return out
}

// compactJSON is b without insignificant space (b itself when it is not JSON).
func compactJSON(b []byte) json.RawMessage {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return json.RawMessage(bytes.TrimSpace(b))
	}
	return buf.Bytes()
}
