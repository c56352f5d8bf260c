package topology

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/agentdlq/agentdlq/pipeline"
)

// CreateAPI is the part of the SQS client that Create uses.
type CreateAPI interface {
	CreateQueue(ctx context.Context, params *sqs.CreateQueueInput, optFns ...func(*sqs.Options)) (*sqs.CreateQueueOutput, error)
	GetQueueUrl(ctx context.Context, params *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	GetQueueAttributes(ctx context.Context, params *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	SetQueueAttributes(ctx context.Context, params *sqs.SetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.SetQueueAttributesOutput, error)
	TagQueue(ctx context.Context, params *sqs.TagQueueInput, optFns ...func(*sqs.Options)) (*sqs.TagQueueOutput, error)
}

// Names are the queue names Create uses.
type Names struct{ Hot, DLQ string }

// LocalNames are the pipeline's local queue names (agent-tasks, agent-tasks-dlq).
func LocalNames(p *pipeline.Pipeline) Names {
	return Names{Hot: p.HotQueueName(), DLQ: p.DLQName()}
}

// Create creates the pipeline's local topology under its local names. It is
// idempotent: queues that exist are brought to the definition's attributes
// and tags.
func Create(ctx context.Context, api CreateAPI, p *pipeline.Pipeline) (pipeline.Queues, error) {
	return CreateNamed(ctx, api, p, LocalNames(p))
}

// CreateNamed is Create with chosen queue names (tests use unique ones).
// The DLQ is created first, then the hot queue with the redrive policy to it,
// then the DLQ's redrive allow policy naming the hot queue.
func CreateNamed(ctx context.Context, api CreateAPI, p *pipeline.Pipeline, n Names) (pipeline.Queues, error) {
	q := pipeline.Queues{FIFO: p.FIFO}
	var err error
	if q.DLQURL, q.DLQARN, err = ensureQueue(ctx, api, n.DLQ, DLQAttributes(p), Tags(p, RoleDLQ)); err != nil {
		return pipeline.Queues{}, fmt.Errorf("pipeline %q: DLQ: %w", p.Name, err)
	}
	if q.HotURL, q.HotARN, err = ensureQueue(ctx, api, n.Hot, HotAttributes(p, q.DLQARN), Tags(p, RoleHot)); err != nil {
		return pipeline.Queues{}, fmt.Errorf("pipeline %q: hot queue: %w", p.Name, err)
	}
	if _, err := api.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{
		QueueUrl:   aws.String(q.DLQURL),
		Attributes: map[string]string{string(types.QueueAttributeNameRedriveAllowPolicy): RedriveAllowPolicy(q.HotARN)},
	}); err != nil {
		return pipeline.Queues{}, fmt.Errorf("pipeline %q: DLQ redrive allow policy: %w", p.Name, err)
	}
	return q, nil
}

func ensureQueue(ctx context.Context, api CreateAPI, name string, attrs, tags map[string]string) (url, arn string, err error) {
	out, err := api.CreateQueue(ctx, &sqs.CreateQueueInput{
		QueueName:  aws.String(name),
		Attributes: maps.Clone(attrs),
		Tags:       maps.Clone(tags),
	})
	var exists *types.QueueNameExists
	switch {
	case err == nil:
		url = aws.ToString(out.QueueUrl)
	case errors.As(err, &exists):
		// It exists with other attributes: bring it to the definition.
		got, gerr := api.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
		if gerr != nil {
			return "", "", fmt.Errorf("GetQueueUrl %q: %w", name, gerr)
		}
		url = aws.ToString(got.QueueUrl)
		settable := maps.Clone(attrs)
		// FifoQueue cannot be changed after creation; a mismatch is in the name (.fifo).
		delete(settable, string(types.QueueAttributeNameFifoQueue))
		if _, err := api.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: settable}); err != nil {
			return "", "", fmt.Errorf("SetQueueAttributes %q: %w", name, err)
		}
		if _, err := api.TagQueue(ctx, &sqs.TagQueueInput{QueueUrl: aws.String(url), Tags: maps.Clone(tags)}); err != nil {
			return "", "", fmt.Errorf("TagQueue %q: %w", name, err)
		}
	default:
		return "", "", fmt.Errorf("CreateQueue %q: %w", name, err)
	}
	if arn, err = queueARN(ctx, api, url); err != nil {
		return "", "", err
	}
	return url, arn, nil
}
