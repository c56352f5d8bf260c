package redrive

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
)

// LambdaAPI is the Lambda calls Pause makes: find the event source mapping
// of the pipeline's hot queue and switch it.
type LambdaAPI interface {
	ListEventSourceMappings(ctx context.Context, params *lambda.ListEventSourceMappingsInput, optFns ...func(*lambda.Options)) (*lambda.ListEventSourceMappingsOutput, error)
	UpdateEventSourceMapping(ctx context.Context, params *lambda.UpdateEventSourceMappingInput, optFns ...func(*lambda.Options)) (*lambda.UpdateEventSourceMappingOutput, error)
}

// PauseRequest asks to pause (Paused) or resume the worker.
type PauseRequest struct {
	Who
	// Paused is true to pause the worker, false to resume it.
	Paused bool
}

// Pause disables (Paused true) or enables (false) the worker's event source
// mapping on the pipeline's hot queue: the kill switch. While paused, nothing
// is received: messages wait on the hot queue, their receive counts
// untouched. Resuming only enables the mapping again: nothing comes back
// from the DLQ (that is a redrive's job). It is gated like a redrive (the
// owner, a why, the DLQ's owner tag, in AWS the redrive role) and audited
// (pause or resume). The hot queue must have exactly one mapping.
func (r *Redriver) Pause(ctx context.Context, req PauseRequest) (*redrivetype.PauseResult, error) {
	who, paused := req.Who, req.Paused
	action := audit.ActionResume
	if paused {
		action = audit.ActionPause
	}
	rec := audit.Entry{Actor: who.Owner, Action: action, Why: who.Why, Detail: map[string]string{"hot_queue_arn": r.cfg.Queues.HotARN}}
	res, err := r.pause(ctx, action, who, paused)
	if res != nil {
		rec.Detail["uuid"], rec.Detail["state"] = res.UUID, res.State
	}
	return res, r.record(ctx, rec, err)
}

func (r *Redriver) pause(ctx context.Context, action audit.Action, who Who, paused bool) (*redrivetype.PauseResult, error) {
	if err := r.authorizeAs(ctx, action, who, minRate); err != nil {
		return nil, err
	}
	if r.cfg.Lambda == nil {
		return nil, fmt.Errorf("redrive: pause needs a Lambda client (Config.Lambda)")
	}
	if r.cfg.Queues.HotARN == "" {
		return nil, refuse(redrivetype.CodeBadInput, "the pipeline's hot queue ARN is unknown")
	}
	out, err := r.cfg.Lambda.ListEventSourceMappings(ctx, &lambda.ListEventSourceMappingsInput{EventSourceArn: aws.String(r.cfg.Queues.HotARN)})
	if err != nil {
		return nil, fmt.Errorf("lambda ListEventSourceMappings: %w", err)
	}
	switch n := len(out.EventSourceMappings); n {
	case 0:
		return nil, refuse(redrivetype.CodeNoMapping, "no event source mapping reads %s: is the worker deployed?", r.cfg.Queues.HotARN)
	case 1:
	default:
		return nil, refuse(redrivetype.CodeNoMapping, "%d event source mappings read %s: pause expects exactly one, the pipeline's worker", n, r.cfg.Queues.HotARN)
	}
	m := out.EventSourceMappings[0]
	up, err := r.cfg.Lambda.UpdateEventSourceMapping(ctx, &lambda.UpdateEventSourceMappingInput{UUID: m.UUID, Enabled: aws.Bool(!paused)})
	if err != nil {
		return nil, fmt.Errorf("lambda UpdateEventSourceMapping %s enabled=%s: %w", aws.ToString(m.UUID), strconv.FormatBool(!paused), err)
	}
	return &redrivetype.PauseResult{UUID: aws.ToString(up.UUID), Function: aws.ToString(up.FunctionArn), State: aws.ToString(up.State), Paused: paused}, nil
}
