package redrive

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/report"
)

// Group is one group of dead letters: a reason, a fingerprint and a count
// (from triage's report).
type Group struct {
	Reason      deadletter.Reason
	Fingerprint string
	Count       int
}

// moveAPI is the SQS calls of the native move task actions (part of API).
type moveAPI interface {
	queueAPI
	StartMessageMoveTask(ctx context.Context, params *sqs.StartMessageMoveTaskInput, optFns ...func(*sqs.Options)) (*sqs.StartMessageMoveTaskOutput, error)
	ListMessageMoveTasks(ctx context.Context, params *sqs.ListMessageMoveTasksInput, optFns ...func(*sqs.Options)) (*sqs.ListMessageMoveTasksOutput, error)
	CancelMessageMoveTask(ctx context.Context, params *sqs.CancelMessageMoveTaskInput, optFns ...func(*sqs.Options)) (*sqs.CancelMessageMoveTaskOutput, error)
}

// StartRequest asks for a native move task of the whole DLQ.
type StartRequest struct {
	Who
	// Rate is MaxNumberOfMessagesPerSecond: 1..500.
	Rate int
	// Destination is optional: when set it must be the hot queue's ARN.
	Destination string
	// Groups is optional: what the DLQ holds (a triage scan). A move task
	// moves everything, so every group's reason must be allowed. When nil,
	// Start scans the DLQ itself.
	Groups []Group
	// ScanPartial is set when the scan that found Groups may have missed
	// dead letters (why): a move task moves everything, so start is refused.
	ScanPartial string
	Ack         Ack
}

// progress is "moved/total" ("moved/?" while the total is unknown), as a
// refusal says it.
func progress(t redrivetype.MoveTask) string {
	if t.ToMove == 0 && t.Status == "RUNNING" {
		return fmt.Sprintf("%d/?", t.Moved)
	}
	return fmt.Sprintf("%d/%d", t.Moved, t.ToMove)
}

// unsupported turns an "unknown operation" answer into ErrUnsupported.
func (r *Redriver) unsupported(op string, err error) error {
	var api smithy.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case "InvalidAction", "UnknownOperationException", "UnsupportedOperation",
			"AWS.SimpleQueueService.UnsupportedOperation", "NotImplemented", "InvalidOperation":
			return fmt.Errorf("%w: %s answered %s (%s). The local emulator (fauxqs) has no move tasks: redrive selectively, which works on any endpoint",
				ErrUnsupported, op, api.ErrorCode(), api.ErrorMessage())
		}
	}
	return fmt.Errorf("%s: %w", op, err)
}

// record writes an audit record; a failure to audit is returned (joined with err).
func (r *Redriver) record(ctx context.Context, rec audit.Entry, err error) error {
	rec.Pipeline = r.cfg.Pipeline.Name
	if rec.Caller == nil {
		c := r.knownCaller()
		rec.Caller = &c
	}
	if err != nil && rec.Error == "" {
		rec.Error = Told(err, r.cfg.FieldNames)
	}
	if rec.Outcome == "" {
		switch {
		case errors.Is(err, ErrRefused):
			rec.Outcome = audit.OutcomeRefused
		case errors.Is(err, triage.ErrScanPartial):
			rec.Outcome = audit.OutcomePartial
		case err != nil:
			rec.Outcome = audit.OutcomeFailed
		default:
			rec.Outcome = audit.OutcomeOK
		}
	}
	if aerr := r.cfg.Audit.Record(ctx, rec); aerr != nil {
		return errors.Join(err, aerr)
	}
	return err
}

func groupFacts(groups []Group) (reasons, fps []string, counts map[string]int) {
	counts = map[string]int{}
	seen := map[deadletter.Reason]bool{}
	for _, g := range groups {
		if !seen[g.Reason] {
			seen[g.Reason] = true
			reasons = append(reasons, string(g.Reason))
		}
		if g.Fingerprint != "" {
			fps = append(fps, g.Fingerprint)
		}
		counts[string(g.Reason)] += g.Count
	}
	sort.Strings(reasons)
	return reasons, fps, counts
}

func ackDetail(ack Ack) map[string]string {
	d := map[string]string{}
	if ack.FixDeployed != "" {
		d["fix_deployed"] = ack.FixDeployed
	}
	if ack.Reviewed != "" {
		d["reviewed"] = ack.Reviewed
	}
	for reason, j := range ack.Overrides {
		d["override."+string(reason)] = j
	}
	return d
}

// Start starts a native message move task from the DLQ to the pipeline's hot
// queue, after the gate, the destination check, the policy over every group
// the DLQ holds, and a check that no other move task runs. When req.Groups
// is nil, Start scans the DLQ itself (Config.Scan), after the gate's checks
// that need no AWS call: a wrong owner or a bad rate is refused, and
// audited, before any scan.
func (r *Redriver) Start(ctx context.Context, req StartRequest) (redrivetype.MoveTask, error) {
	var scanErr error
	var partial *redrivetype.PartialError
	var infos map[string]groupInfo
	if req.Groups == nil {
		if scanErr = r.pureGate(req.Who, req.Rate); scanErr == nil {
			var rep *report.Report
			req.Groups, rep, scanErr = r.scan(ctx)
			infos = groupInfos(rep)
			if scanErr == nil && rep.Scan.Partial {
				req.ScanPartial = rep.Scan.PartialReason
				partial = scanPartial(rep)
			}
		}
	}
	reasons, fps, counts := groupFacts(req.Groups)
	rec := audit.Entry{Actor: req.Owner, Action: audit.ActionStart, Why: req.Why, Reasons: reasons, Fingerprints: fps, Counts: counts,
		Detail: ackDetail(req.Ack)}
	rec.Detail["destination_arn"] = r.cfg.Queues.HotARN
	rec.Detail["rate"] = strconv.Itoa(req.Rate)
	if scanErr != nil {
		return redrivetype.MoveTask{}, r.record(ctx, rec, scanErr)
	}
	task, err := r.start(ctx, req, partial, infos)
	if task.TaskHandle != "" {
		rec.Detail["task_handle"] = task.TaskHandle
	}
	return task, r.record(ctx, rec, err)
}

func (r *Redriver) start(ctx context.Context, req StartRequest, partial *redrivetype.PartialError, infos map[string]groupInfo) (redrivetype.MoveTask, error) {
	api := r.cfg.SQS
	if err := r.authorize(ctx, req.Who, req.Rate); err != nil {
		return redrivetype.MoveTask{}, err
	}
	if err := r.checkDestination(ctx, req.Destination); err != nil {
		return redrivetype.MoveTask{}, err
	}
	visible, inFlight, err := r.Depth(ctx)
	if err != nil {
		return redrivetype.MoveTask{}, err
	}
	total := 0
	for _, g := range req.Groups {
		total += g.Count
	}
	if visible+inFlight == 0 && total == 0 {
		return redrivetype.MoveTask{}, refuse(redrivetype.CodeDLQEmpty, "the DLQ of pipeline %q is empty: nothing to redrive", r.cfg.Pipeline.Name)
	}
	if req.ScanPartial != "" {
		// A move task moves everything, and not every group was seen.
		if partial == nil {
			partial = &redrivetype.PartialError{Why: req.ScanPartial}
		}
		return redrivetype.MoveTask{}, partial
	}
	// The owner's rejections: a rejected group is told as rejected (a move
	// task would move it anyway), never offered a rejection again.
	d, derr := r.Decisions(ctx)
	if derr != nil {
		r.log().WarnContext(ctx, "start: past rejections not read", "error", derr.Error())
	}
	forbidden := startForbidden(req.Groups, req.Ack, d, infos)
	tasks, err := r.listTasks(ctx, api)
	if errors.Is(err, ErrUnsupported) && forbidden != nil {
		// Both: the groups a move task may not move, and no move tasks
		// here at all (the local emulator).
		forbidden.Reason += "; besides, this endpoint has no message move tasks (the local emulator, fauxqs, has no StartMessageMoveTask): redrive selectively, reason by reason (agentdlq redrive select)"
		return redrivetype.MoveTask{}, forbidden
	}
	if forbidden != nil {
		return redrivetype.MoveTask{}, forbidden
	}
	if err != nil {
		return redrivetype.MoveTask{}, err
	}
	for _, t := range tasks {
		if t.Status == "RUNNING" {
			rf := refuse(redrivetype.CodeTaskActive, "a move task is already running on this DLQ (%s, %s moved): wait for it, or cancel it", t.TaskHandle, progress(t))
			rf.Next = []redrivetype.Step{{Action: audit.ActionStatus}, {Action: audit.ActionCancel}}
			return redrivetype.MoveTask{}, rf
		}
	}
	out, err := api.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{
		SourceArn:                    aws.String(r.cfg.Queues.DLQARN),
		DestinationArn:               aws.String(r.cfg.Queues.HotARN),
		MaxNumberOfMessagesPerSecond: aws.Int32(int32(req.Rate)),
	})
	if err != nil {
		return redrivetype.MoveTask{}, r.unsupported("StartMessageMoveTask", err)
	}
	return redrivetype.MoveTask{TaskHandle: aws.ToString(out.TaskHandle), Status: "RUNNING", SourceARN: r.cfg.Queues.DLQARN,
		DestinationARN: r.cfg.Queues.HotARN, Rate: req.Rate, StartedAt: r.now().UTC()}, nil
}

func (r *Redriver) listTasks(ctx context.Context, api moveAPI) ([]redrivetype.MoveTask, error) {
	out, err := api.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(r.cfg.Queues.DLQARN), MaxResults: aws.Int32(10)})
	if err != nil {
		return nil, r.unsupported("ListMessageMoveTasks", err)
	}
	tasks := make([]redrivetype.MoveTask, 0, len(out.Results))
	for _, e := range out.Results {
		t := redrivetype.MoveTask{
			TaskHandle: aws.ToString(e.TaskHandle), Status: aws.ToString(e.Status),
			SourceARN: aws.ToString(e.SourceArn), DestinationARN: aws.ToString(e.DestinationArn),
			Moved: e.ApproximateNumberOfMessagesMoved, ToMove: aws.ToInt64(e.ApproximateNumberOfMessagesToMove),
			FailureReason: aws.ToString(e.FailureReason), StartedAt: time.UnixMilli(e.StartedTimestamp).UTC(),
		}
		if e.MaxNumberOfMessagesPerSecond != nil {
			t.Rate = int(*e.MaxNumberOfMessagesPerSecond)
		}
		tasks = append(tasks, t)
	}
	return tasks, nil
}

// StatusRequest asks for the DLQ's move tasks.
type StatusRequest struct {
	// Actor is who looks: recorded in the audit (a status is not gated).
	Actor string
}

// Status lists the DLQ's recent move tasks (newest first, as SQS returns
// them), with their progress and failure reason. It is read-only and audited.
func (r *Redriver) Status(ctx context.Context, req StatusRequest) ([]redrivetype.MoveTask, error) {
	api := r.cfg.SQS
	// Not gated, but its record says who looked: in AWS the STS caller (a
	// failure to ask is recorded, and does not hide the status).
	_, _ = r.identify(ctx)
	tasks, err := r.listTasks(ctx, api)
	rec := audit.Entry{Actor: req.Actor, Action: audit.ActionStatus, Counts: map[string]int{"tasks": len(tasks)}}
	if err == nil {
		rec.Outcome = audit.OutcomeShown
	}
	return tasks, r.record(ctx, rec, err)
}

// CancelRequest asks to cancel a running move task.
type CancelRequest struct {
	Who
	// TaskHandle is optional: the running task of the DLQ by default.
	TaskHandle string
}

// Cancel cancels a running move task (gated: the owner, a reason). It
// returns how many messages the task had moved.
func (r *Redriver) Cancel(ctx context.Context, req CancelRequest) (int64, error) {
	rec := audit.Entry{Actor: req.Owner, Action: audit.ActionCancel, Why: req.Why, Detail: map[string]string{}}
	moved, handle, err := r.cancel(ctx, req)
	if handle != "" {
		rec.Detail["task_handle"] = handle
	}
	if err == nil {
		rec.Outcome = audit.OutcomeCanceled
		rec.Counts = map[string]int{"moved": int(moved)}
	}
	return moved, r.record(ctx, rec, err)
}

func (r *Redriver) cancel(ctx context.Context, req CancelRequest) (int64, string, error) {
	api := r.cfg.SQS
	if err := r.authorizeAs(ctx, audit.ActionCancel, req.Who, minRate); err != nil {
		return 0, "", err
	}
	handle := req.TaskHandle
	if handle == "" {
		tasks, err := r.listTasks(ctx, api)
		if err != nil {
			return 0, "", err
		}
		for _, t := range tasks {
			if t.Status == "RUNNING" {
				handle = t.TaskHandle
				break
			}
		}
		if handle == "" {
			return 0, "", refuse(redrivetype.CodeNoTask, "no move task is running on the DLQ of pipeline %q", r.cfg.Pipeline.Name)
		}
	}
	out, err := api.CancelMessageMoveTask(ctx, &sqs.CancelMessageMoveTaskInput{TaskHandle: aws.String(handle)})
	if err != nil {
		return 0, handle, r.unsupported("CancelMessageMoveTask", err)
	}
	return out.ApproximateNumberOfMessagesMoved, handle, nil
}

// startForbidden refuses a move task while the DLQ holds a group that the
// policy does not let go with ack, naming each such reason once, with its
// count and what it would take: one short line, however many groups.
func startForbidden(groups []Group, ack Ack, d redrivetype.Decisions, infos map[string]groupInfo) *Refusal {
	counts := map[deadletter.Reason]int{}
	rejected := map[deadletter.Reason]int{}
	allowed := map[deadletter.Reason]int{}
	for _, g := range groups {
		// Rejected, as the plan says it: unless dead letters arrived
		// after the rejection (then the policy's steps stand).
		if prev, ok := rejection(d, g.Reason, g.Fingerprint); ok && !infos[groupID(g.Reason, g.Fingerprint)].LastSeen.After(prev.Time) {
			rejected[g.Reason] += g.Count
			continue
		}
		switch {
		case g.Reason.Redrivable() == deadletter.RedriveNeverBlind:
			// Even overridden: a move task cannot leave behind the keys
			// whose effect the owner confirmed. select can.
		case Decide(g.Reason, ack).Allowed:
			allowed[g.Reason] += g.Count
			continue
		}
		counts[g.Reason] += g.Count
	}
	if len(counts) == 0 && len(rejected) == 0 {
		return nil
	}
	var parts []string
	for _, reason := range sortedReasons(counts) {
		parts = append(parts, fmt.Sprintf("%s %d (%s)", reason, counts[reason], startNeeds(reason)))
	}
	for _, reason := range sortedReasons(rejected) {
		parts = append(parts, fmt.Sprintf("%s %d (rejected: never redriven, and a move task would move them anyway)", reason, rejected[reason]))
	}
	rf := refuse(redrivetype.CodeForbidden, "a move task moves everything, and the DLQ holds dead letters it may not move: %s; redrive the others selectively, reason by reason",
		strings.Join(parts, ", "))
	for _, reason := range sortedReasons(counts) {
		rf.Next = append(rf.Next, policySteps(reason, "", counts[reason])...)
	}
	if len(rf.Next) == 0 {
		// Only rejected groups stand in the way: the others, selectively.
		for _, reason := range sortedReasons(allowed) {
			rf.Next = append(rf.Next, selectStep(reason, "", allowed[reason]))
		}
	}
	return rf
}

// startNeeds is what a move task of reason's dead letters would take.
func startNeeds(reason deadletter.Reason) string {
	switch reason.Redrivable() {
	case deadletter.RedriveAfterFix:
		return "after the fix is deployed"
	case deadletter.RedriveAfterReview:
		return "after a review"
	case deadletter.RedriveNeverBlind:
		return "never by a move task: reconcile each key, then redrive selectively"
	}
	return "never, without an override"
}

// orDash is the fingerprint in full (what a request accepts), or "-".
func orDash(fp string) string {
	if fp == "" {
		return "-"
	}
	return fp
}
