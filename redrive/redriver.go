package redrive

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"

	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/pipeline"
)

// QueueAPI is the SQS calls every redrive action makes: the DLQ's tags for
// the gate and the queues' attributes for the destination and depth checks.
type QueueAPI interface {
	ListQueueTags(ctx context.Context, params *sqs.ListQueueTagsInput, optFns ...func(*sqs.Options)) (*sqs.ListQueueTagsOutput, error)
	GetQueueAttributes(ctx context.Context, params *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// IdentityAPI is the STS call of the identity check.
type IdentityAPI interface {
	GetCallerIdentity(ctx context.Context, params *sts.GetCallerIdentityInput, optFns ...func(*sts.Options)) (*sts.GetCallerIdentityOutput, error)
}

// Redriver runs the redrive actions of one pipeline. Every action passes the
// gate first and leaves an audit record, refusals included.
type Redriver struct {
	// Pipeline is required.
	Pipeline *pipeline.Pipeline
	// Queues is required: the pipeline's hot queue and DLQ.
	Queues Queues
	// SQS is required. Select needs a SelectAPI, Start/Status/Cancel a MoveAPI
	// (the SDK client is all of them).
	SQS QueueAPI
	// STS is required in AWS (when Local is false).
	STS IdentityAPI
	// Local is true when the SQS endpoint is on a loopback address (see
	// IsLocalEndpoint); it only skips the caller identity check.
	Local bool
	// Ledger is required by Select: redrive counts and canary outcomes.
	Ledger ledger.Ledger
	// Tag is required by Select.
	Tag Tagger
	// Audit is required.
	Audit *Auditor
	// Logger is optional (slog.Default()).
	Logger *slog.Logger
	// Now is optional (time.Now).
	Now func() time.Time
	// Sleep is optional: waits d or until ctx is done.
	Sleep func(ctx context.Context, d time.Duration) error
	// OnMove is optional: called after each message moved (a progress bar).
	OnMove func()
}

// Who is the person acting and why.
type Who struct {
	Owner string // --owner
	Why   string // --why
}

func (r *Redriver) log() *slog.Logger {
	if r.Logger != nil {
		return r.Logger
	}
	return slog.Default()
}

func (r *Redriver) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Redriver) sleep(ctx context.Context, d time.Duration) error {
	if r.Sleep != nil {
		return r.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// authorize runs the gate: the DLQ's tags (and its existence), then, in AWS,
// the caller's identity.
func (r *Redriver) authorize(ctx context.Context, who Who, rate int) error {
	if r.Pipeline == nil {
		return refuse(CodeUnknownPipeline, "no pipeline")
	}
	// The pure checks first, so that bad input costs no AWS call.
	if err := Gate(GateInput{Pipeline: r.Pipeline, Owner: who.Owner, Why: who.Why, Rate: rate,
		QueueTags: map[string]string{pipeline.TagOwner: r.Pipeline.Owner}, Identity: Identity{Local: true}}); err != nil {
		return err
	}
	tags, err := r.SQS.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: aws.String(r.Queues.DLQURL)})
	if err != nil {
		return r.queueErr(err, r.Queues.DLQURL)
	}
	id := Identity{Local: r.Local}
	if !r.Local {
		id.RedriveRole = tags.Tags[TagRedriveRole]
		if r.STS == nil {
			return refuse(CodeIdentity, "no STS client to check the caller's identity")
		}
		out, err := r.STS.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
		if err != nil {
			return refuse(CodeIdentity, "sts GetCallerIdentity: %v", err)
		}
		id.CallerARN = aws.ToString(out.Arn)
	} else {
		r.log().InfoContext(ctx, "redrive gate: local endpoint, caller identity check skipped",
			"pipeline", r.Pipeline.Name, "queue", r.Queues.DLQURL)
	}
	return Gate(GateInput{Pipeline: r.Pipeline, Owner: who.Owner, Why: who.Why, Rate: rate, QueueTags: tags.Tags, Identity: id})
}

// queueErr turns a missing queue into a refusal and keeps any other error.
func (r *Redriver) queueErr(err error, url string) error {
	var nf *sqstypes.QueueDoesNotExist
	var api smithy.APIError
	if errors.As(err, &nf) || (errors.As(err, &api) && (api.ErrorCode() == "AWS.SimpleQueueService.NonExistentQueue" || api.ErrorCode() == "QueueDoesNotExist")) {
		return refuse(CodeDLQMissing, "queue %s does not exist", url)
	}
	return fmt.Errorf("%s: %w", url, err)
}

// depth is the DLQ's approximate message count: visible, in flight and delayed.
func (r *Redriver) depth(ctx context.Context) (visible, inFlight int, err error) {
	out, err := r.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(r.Queues.DLQURL),
		AttributeNames: []sqstypes.QueueAttributeName{
			sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed,
		},
	})
	if err != nil {
		return 0, 0, r.queueErr(err, r.Queues.DLQURL)
	}
	n := func(k sqstypes.QueueAttributeName) int { v, _ := strconv.Atoi(out.Attributes[string(k)]); return v }
	return n(sqstypes.QueueAttributeNameApproximateNumberOfMessages) + n(sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed),
		n(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible), nil
}

// CheckDestination refuses any destination but the pipeline's own hot queue:
// dest must be the hot queue's ARN (or empty, meaning it), the hot queue's
// RedrivePolicy must name this DLQ, and the DLQ's RedriveAllowPolicy (when
// set) must allow the hot queue as a source.
func (r *Redriver) CheckDestination(ctx context.Context, dest string) error {
	q := r.Queues
	if dest != "" && dest != q.HotARN {
		return refuse(CodeDestination, "destination %s is not the pipeline's hot queue %s: a DLQ is redriven only to its own source", dest, q.HotARN)
	}
	hot, err := r.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(q.HotURL),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameRedrivePolicy, sqstypes.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return r.queueErr(err, q.HotURL)
	}
	if arn := hot.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]; arn != "" && arn != q.HotARN {
		return refuse(CodeDestination, "the hot queue's ARN %s is not %s", arn, q.HotARN)
	}
	dlq, err := r.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(q.DLQURL),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameRedriveAllowPolicy, sqstypes.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return r.queueErr(err, q.DLQURL)
	}
	return CheckRedrivePolicies(q.HotARN, q.DLQARN,
		hot.Attributes[string(sqstypes.QueueAttributeNameRedrivePolicy)],
		dlq.Attributes[string(sqstypes.QueueAttributeNameRedriveAllowPolicy)])
}
