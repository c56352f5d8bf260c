package topology

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/agentdlq/agentdlq/pipeline"
)

// ErrNotFound is returned (wrapped) when a pipeline's queues cannot be found.
var ErrNotFound = errors.New("queue not found")

// Override carries queue locations given from outside (the Lambda
// environment, a flag). Empty fields are looked up.
type Override struct {
	HotURL, HotARN string
	DLQURL, DLQARN string
}

// Environment variables of the override (docs/wiring.md).
const (
	EnvHotQueueURL = "AGENTDLQ_HOT_QUEUE_URL"
	EnvHotQueueARN = "AGENTDLQ_HOT_QUEUE_ARN"
	EnvDLQURL      = "AGENTDLQ_DLQ_URL"
	EnvDLQARN      = "AGENTDLQ_DLQ_ARN"
)

// OverrideFromEnv reads the override with getenv (os.Getenv in a main).
func OverrideFromEnv(getenv func(string) string) Override {
	return Override{
		HotURL: getenv(EnvHotQueueURL), HotARN: getenv(EnvHotQueueARN),
		DLQURL: getenv(EnvDLQURL), DLQARN: getenv(EnvDLQARN),
	}
}

// ResolveAPI is the part of the SQS client that Resolve uses.
type ResolveAPI interface {
	GetQueueUrl(ctx context.Context, params *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	GetQueueAttributes(ctx context.Context, params *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	ListQueues(ctx context.Context, params *sqs.ListQueuesInput, optFns ...func(*sqs.Options)) (*sqs.ListQueuesOutput, error)
	ListQueueTags(ctx context.Context, params *sqs.ListQueueTagsInput, optFns ...func(*sqs.Options)) (*sqs.ListQueueTagsOutput, error)
}

// ResolveWith finds the pipeline's queues, taking the given override first.
// Both queues must exist: a missing or misnamed DLQ is an error, so that a
// worker fails fast instead of acknowledging what it cannot dead-letter.
func ResolveWith(ctx context.Context, api ResolveAPI, p *pipeline.Pipeline, o Override) (pipeline.Queues, error) {
	q := pipeline.Queues{HotURL: o.HotURL, HotARN: o.HotARN, DLQURL: o.DLQURL, DLQARN: o.DLQARN, FIFO: p.FIFO}
	if q.HotURL == "" || q.DLQURL == "" {
		found, err := byName(ctx, api, p)
		if errors.Is(err, ErrNotFound) {
			found, err = byTags(ctx, api, p)
		}
		if err != nil {
			return pipeline.Queues{}, err
		}
		if q.HotURL == "" {
			q.HotURL, q.HotARN = found.HotURL, found.HotARN
		}
		if q.DLQURL == "" {
			q.DLQURL, q.DLQARN = found.DLQURL, found.DLQARN
			q.Senders = found.Senders
		}
	}
	var err error
	if q.HotARN == "" {
		if q.HotARN, err = queueARN(ctx, api, q.HotURL); err != nil {
			return pipeline.Queues{}, fmt.Errorf("pipeline %q hot queue: %w", p.Name, err)
		}
	}
	if q.DLQARN == "" {
		if q.DLQARN, err = queueARN(ctx, api, q.DLQURL); err != nil {
			return pipeline.Queues{}, fmt.Errorf("pipeline %q DLQ: %w", p.Name, err)
		}
	}
	return q, nil
}

// senders reads the DLQ's pipeline.TagSenders tag (nil when it has none).
func senders(ctx context.Context, api ResolveAPI, p *pipeline.Pipeline, dlqURL string) ([]string, error) {
	tags, err := api.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: aws.String(dlqURL)})
	if err != nil {
		return nil, fmt.Errorf("pipeline %q: ListQueueTags %s: %w", p.Name, dlqURL, err)
	}
	return pipeline.SendersOfTag(tags.Tags[pipeline.TagSenders]), nil
}

func byName(ctx context.Context, api ResolveAPI, p *pipeline.Pipeline) (pipeline.Queues, error) {
	q := pipeline.Queues{FIFO: p.FIFO}
	for _, x := range []struct {
		name string
		url  *string
	}{{p.HotQueueName(), &q.HotURL}, {p.DLQName(), &q.DLQURL}} {
		out, err := api.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(x.name)})
		if err != nil {
			var nx *types.QueueDoesNotExist
			if errors.As(err, &nx) {
				return pipeline.Queues{}, fmt.Errorf("pipeline %q: queue %q: %w", p.Name, x.name, ErrNotFound)
			}
			return pipeline.Queues{}, fmt.Errorf("pipeline %q: GetQueueUrl %q: %w", p.Name, x.name, err)
		}
		*x.url = aws.ToString(out.QueueUrl)
	}
	// Best effort: a caller that may not list the DLQ's tags (the worker)
	// gets no senders, and triage then checks only the broker's mark.
	q.Senders, _ = senders(ctx, api, p, q.DLQURL)
	return q, nil
}

func byTags(ctx context.Context, api ResolveAPI, p *pipeline.Pipeline) (pipeline.Queues, error) {
	q := pipeline.Queues{FIFO: p.FIFO}
	pages := sqs.NewListQueuesPaginator(api, &sqs.ListQueuesInput{MaxResults: aws.Int32(1000)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return pipeline.Queues{}, fmt.Errorf("pipeline %q: ListQueues: %w", p.Name, err)
		}
		for _, url := range page.QueueUrls {
			tags, err := api.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: aws.String(url)})
			if err != nil {
				return pipeline.Queues{}, fmt.Errorf("pipeline %q: ListQueueTags %s: %w", p.Name, url, err)
			}
			if tags.Tags[pipeline.TagPipeline] != p.Name {
				continue
			}
			switch tags.Tags[pipeline.TagRole] {
			case RoleHot:
				q.HotURL = url
			case RoleDLQ:
				q.DLQURL = url
				q.Senders = pipeline.SendersOfTag(tags.Tags[pipeline.TagSenders])
			}
		}
	}
	switch {
	case q.HotURL == "" && q.DLQURL == "":
		return pipeline.Queues{}, fmt.Errorf("pipeline %q: no queue named %q or tagged %s=%s: %w", p.Name, p.HotQueueName(), pipeline.TagPipeline, p.Name, ErrNotFound)
	case q.HotURL == "":
		return pipeline.Queues{}, fmt.Errorf("pipeline %q: no hot queue (tag %s=%s): %w", p.Name, pipeline.TagRole, RoleHot, ErrNotFound)
	case q.DLQURL == "":
		return pipeline.Queues{}, fmt.Errorf("pipeline %q: no DLQ (tag %s=%s): %w", p.Name, pipeline.TagRole, RoleDLQ, ErrNotFound)
	}
	return q, nil
}

type attributesAPI interface {
	GetQueueAttributes(ctx context.Context, params *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

func queueARN(ctx context.Context, api attributesAPI, url string) (string, error) {
	out, err := api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		var nx *types.QueueDoesNotExist
		if errors.As(err, &nx) {
			return "", fmt.Errorf("%s: %w", url, ErrNotFound)
		}
		return "", fmt.Errorf("GetQueueAttributes %s: %w", url, err)
	}
	arn := out.Attributes[string(types.QueueAttributeNameQueueArn)]
	if arn == "" {
		return "", fmt.Errorf("%s has no QueueArn attribute", url)
	}
	return arn, nil
}

// Tag values of pipeline.TagRole.
const (
	RoleHot = "hot"
	RoleDLQ = "dlq"
)

// Tags are the tags of one queue of the pipeline.
func Tags(p *pipeline.Pipeline, role string) map[string]string {
	return map[string]string{pipeline.TagPipeline: p.Name, pipeline.TagOwner: p.Owner, pipeline.TagRole: role}
}

// DLQAttributes are the DLQ's attributes: the DLQ retention, the maximum
// message size (the hot queue's plus the dead-letter reserve, so that the
// dead letter of any message the hot queue took fits) and, for FIFO, a FIFO
// queue without content-based deduplication (the worker's dead letters
// carry their own deduplication id, so two identical bodies dead-lettered
// within five minutes are both kept).
func DLQAttributes(p *pipeline.Pipeline) map[string]string {
	a := map[string]string{
		string(types.QueueAttributeNameMessageRetentionPeriod): seconds(p.DLQRetention().Seconds()),
		string(types.QueueAttributeNameMaximumMessageSize):     strconv.Itoa(p.DLQMaxMessageBytes()),
	}
	if p.FIFO {
		a[string(types.QueueAttributeNameFifoQueue)] = "true"
	}
	return a
}

// HotAttributes are the hot queue's attributes: its retention, visibility
// timeout, maximum message size and the redrive policy to dlqARN with the
// pipeline's maxReceiveCount. A FIFO hot queue deduplicates by content when
// a producer gives no id.
func HotAttributes(p *pipeline.Pipeline, dlqARN string) map[string]string {
	a := map[string]string{
		string(types.QueueAttributeNameMessageRetentionPeriod): seconds(p.Retention().Seconds()),
		string(types.QueueAttributeNameVisibilityTimeout):      seconds(p.VisibilityTimeout().Seconds()),
		string(types.QueueAttributeNameMaximumMessageSize):     strconv.Itoa(p.MaxMessageBytes),
		string(types.QueueAttributeNameRedrivePolicy):          RedrivePolicy(dlqARN, p.MaxReceiveCount),
	}
	if p.FIFO {
		a[string(types.QueueAttributeNameFifoQueue)] = "true"
		a[string(types.QueueAttributeNameContentBasedDeduplication)] = "true"
	}
	return a
}

// RedrivePolicy is the JSON of a hot queue's RedrivePolicy attribute.
func RedrivePolicy(dlqARN string, maxReceiveCount int) string {
	b, _ := json.Marshal(struct {
		DeadLetterTargetArn string `json:"deadLetterTargetArn"`
		MaxReceiveCount     int    `json:"maxReceiveCount"`
	}{dlqARN, maxReceiveCount})
	return string(b)
}

// RedriveAllowPolicy is the JSON of a DLQ's RedriveAllowPolicy attribute: only
// its own hot queue may use it as a DLQ (and so be a move task's destination).
func RedriveAllowPolicy(hotARN string) string {
	b, _ := json.Marshal(struct {
		RedrivePermission string   `json:"redrivePermission"`
		SourceQueueArns   []string `json:"sourceQueueArns"`
	}{"byQueue", []string{hotARN}})
	return string(b)
}

func seconds(s float64) string { return strconv.Itoa(int(s)) }
