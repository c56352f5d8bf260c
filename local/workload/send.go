package workload

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/agentdlq/agentdlq/pipeline"
)

// Quick returns a copy of p with the timings shortened so that retries
// happen within seconds: the demo and the end-to-end tests run the pipeline
// of pipelines.json with exactly these changes and nothing else — worker
// timeout 10 s, visibility timeout 60 s (still six times the worker timeout),
// backoff 1 s doubling to at most 2 s. Retries come from the backoff, so the
// timeouts cost nothing while all goes well; they are long enough that a
// batch on a loaded two-core machine does not run out of time (an invocation
// out of time retries its records not started, which would add attempts the
// end-to-end tests count). maxReceiveCount, batch size and
// window, concurrency, retentions, redrive-loop threshold, FIFO behaviour,
// alarms, triage and eval settings stay as defined.
func Quick(p *pipeline.Pipeline) *pipeline.Pipeline {
	cp := *p
	cp.WorkerTimeoutSeconds = 10
	cp.VisibilityTimeoutSeconds = 60
	cp.Backoff = pipeline.Backoff{BaseSeconds: 1, MaxSeconds: 2}
	return &cp
}

// SendAPI is the SQS call Send makes.
type SendAPI interface {
	SendMessageBatch(ctx context.Context, params *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
}

// Send sends tasks to queueURL in batches of ten with `senders` concurrent
// senders and returns them with their message ids, in task order. A FIFO
// queue gets each task's run as its message group and its task id as the
// deduplication id; a standard queue gets a task's TenantGroup, when it has
// one, as its MessageGroupId (FairQueue). Any entry that fails fails the
// whole Send.
func Send(ctx context.Context, api SendAPI, queueURL string, fifo bool, tasks []Task, senders int) ([]Sent, error) {
	return SendProgress(ctx, api, queueURL, fifo, tasks, senders, nil)
}

// SendProgress is Send that calls onSent (when not nil) with the number of
// messages of each batch sent, from the sending goroutines.
func SendProgress(ctx context.Context, api SendAPI, queueURL string, fifo bool, tasks []Task, senders int, onSent func(n int)) ([]Sent, error) {
	sent := make([]Sent, len(tasks))
	batches := make(chan int)
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		sendErr error
	)
	for range max(1, senders) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for start := range batches {
				end := min(start+10, len(tasks))
				entries := make([]types.SendMessageBatchRequestEntry, 0, end-start)
				for i := start; i < end; i++ {
					e := types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(tasks[i].Body)}
					if fifo {
						e.MessageGroupId = aws.String(tasks[i].Group)
						e.MessageDeduplicationId = aws.String(tasks[i].TaskID)
					} else if g := tasks[i].TenantGroup; g != "" {
						e.MessageGroupId = aws.String(g) // the tenant: a fair queue
					}
					entries = append(entries, e)
				}
				out, err := api.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: entries})
				if err == nil && len(out.Failed) > 0 {
					err = fmt.Errorf("%d entries failed, first: %s %s", len(out.Failed), aws.ToString(out.Failed[0].Code), aws.ToString(out.Failed[0].Message))
				}
				if err != nil {
					mu.Lock()
					if sendErr == nil {
						sendErr = fmt.Errorf("send to %s: %w", queueURL, err)
					}
					mu.Unlock()
					continue
				}
				for _, ok := range out.Successful {
					i, _ := strconv.Atoi(aws.ToString(ok.Id))
					sent[i] = Sent{MessageID: aws.ToString(ok.MessageId), Task: tasks[i]}
				}
				if onSent != nil {
					onSent(len(out.Successful))
				}
			}
		}()
	}
	for start := 0; start < len(tasks); start += 10 {
		select {
		case batches <- start:
		case <-ctx.Done():
		}
	}
	close(batches)
	wg.Wait()
	if sendErr != nil {
		return nil, sendErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return sent, nil
}
