package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/agentdlq/agentdlq/events/agenttask"
	"github.com/agentdlq/agentdlq/pipeline"
)

// The producer's side, for the services that queue the team's tasks: each
// task goes onto the pipeline's hot queue as its agent task v1 body, with
// the message group its queue wants.

// SendAPI is the SQS call Enqueue makes.
type SendAPI interface {
	SendMessageBatch(ctx context.Context, params *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
}

// Entry is task as one entry of a SendMessageBatch onto pl's hot queue.
// A FIFO queue gets the run as the message group (a run's steps in order)
// and the task id as the deduplication id; a standard queue gets the
// tenant as the message group when pl makes it a fair queue
// (fair_queue_tenant, on by default), so that one tenant's flood does not
// hold up the others' tasks.
func Entry(pl *pipeline.Pipeline, id string, task agenttask.Task) (types.SendMessageBatchRequestEntry, error) {
	body, err := json.Marshal(task)
	if err != nil {
		return types.SendMessageBatchRequestEntry{}, fmt.Errorf("task %s: %w", task.TaskID, err)
	}
	e := types.SendMessageBatchRequestEntry{Id: aws.String(id), MessageBody: aws.String(string(body))}
	switch {
	case pl.FIFO:
		e.MessageGroupId, e.MessageDeduplicationId = aws.String(task.RunID), aws.String(task.TaskID)
	case pl.FairQueueTenants():
		if g := pipeline.TenantGroupID(task.Tenant); g != "" { // none: SQS takes the message as a tenant of its own
			e.MessageGroupId = aws.String(g)
		}
	}
	return e, nil
}

// Enqueue sends tasks onto pl's hot queue at queueURL, ten a request
// (keep each request's bodies under SQS's 1 MiB). An entry SQS refuses is
// an error that names its task; the tasks before it were sent.
func Enqueue(ctx context.Context, api SendAPI, queueURL string, pl *pipeline.Pipeline, tasks []agenttask.Task) error {
	for start := 0; start < len(tasks); start += 10 {
		batch := tasks[start:min(start+10, len(tasks))]
		entries := make([]types.SendMessageBatchRequestEntry, len(batch))
		for i, t := range batch {
			e, err := Entry(pl, strconv.Itoa(i), t)
			if err != nil {
				return err
			}
			entries[i] = e
		}
		out, err := api.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: entries})
		if err != nil {
			return fmt.Errorf("send tasks %d..%d: %w", start, start+len(batch)-1, err)
		}
		if len(out.Failed) > 0 {
			f := out.Failed[0]
			i, _ := strconv.Atoi(aws.ToString(f.Id))
			return fmt.Errorf("task %s refused: %s %s", batch[i].TaskID, aws.ToString(f.Code), aws.ToString(f.Message))
		}
	}
	return nil
}
