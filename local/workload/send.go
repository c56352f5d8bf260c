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

// SQS's limits on one SendMessageBatch request: at most ten entries, and
// the sum of their bodies at most 1 MiB (1,048,576 bytes, the limit since
// August 2025; 256 KiB before). Send cuts batches so that no request passes
// either.
const (
	MaxBatchEntries = 10
	MaxBatchBytes   = 1 << 20
)

// Batches cuts tasks, in order, into the [start, end) ranges of the
// requests Send makes: at most MaxBatchEntries entries and maxBytes bytes
// of bodies each (a body alone larger than maxBytes is a request of its
// own, which SQS refuses and Send reports). maxBytes <= 0 is MaxBatchBytes.
func Batches(tasks []Task, maxBytes int) [][2]int {
	if maxBytes <= 0 {
		maxBytes = MaxBatchBytes
	}
	var out [][2]int
	start, size := 0, 0
	for i, t := range tasks {
		n := len(t.Body)
		if i > start && (i-start == MaxBatchEntries || size+n > maxBytes) {
			out = append(out, [2]int{start, i})
			start, size = i, 0
		}
		size += n
	}
	if start < len(tasks) {
		out = append(out, [2]int{start, len(tasks)})
	}
	return out
}

// SendError is Send's error when some requests failed: what was sent, and
// where a rerun resumes. Send stops starting requests at the first failure;
// requests already under way finish.
type SendError struct {
	// Sent is how many messages SQS accepted, of Total.
	Sent, Total int
	// Resume is the index (in the tasks given to Send) of the first task
	// not sent: every task before it was sent. Its Line says where it was
	// in the input.
	Resume int
	// SentAfter is how many tasks after Resume were sent all the same (by
	// concurrent requests): a rerun from Resume sends them again.
	SentAfter int
	// Err is the first failure.
	Err error
}

func (e *SendError) Error() string {
	return fmt.Sprintf("sent %d of %d messages, then: %v", e.Sent, e.Total, e.Err)
}

func (e *SendError) Unwrap() error { return e.Err }

// Send sends tasks to queueURL in batches within SQS's limits (Batches)
// with `senders` concurrent senders and returns them with their message
// ids, in task order. A FIFO queue gets each task's run as its message
// group and its task id as the deduplication id. Any entry that fails fails
// the whole Send with a *SendError.
func Send(ctx context.Context, api SendAPI, queueURL string, fifo bool, tasks []Task, senders int) ([]Sent, error) {
	return SendProgress(ctx, api, queueURL, fifo, tasks, senders, nil)
}

// SendProgress is Send that calls onSent (when not nil) with the number of
// messages of each batch sent, from the sending goroutines.
func SendProgress(ctx context.Context, api SendAPI, queueURL string, fifo bool, tasks []Task, senders int, onSent func(n int)) ([]Sent, error) {
	sent := make([]Sent, len(tasks))
	ok := make([]bool, len(tasks))
	batches := make(chan [2]int)
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		sendErr error
	)
	failed := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return sendErr != nil
	}
	for range max(1, senders) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range batches {
				if failed() {
					continue // handed over before the failure was known: not sent
				}
				entries := make([]types.SendMessageBatchRequestEntry, 0, b[1]-b[0])
				for i := b[0]; i < b[1]; i++ {
					e := types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(tasks[i].Body)}
					if fifo {
						e.MessageGroupId = aws.String(tasks[i].Group)
						e.MessageDeduplicationId = aws.String(tasks[i].TaskID)
					}
					entries = append(entries, e)
				}
				out, err := api.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: entries})
				n := 0
				if err == nil {
					mu.Lock()
					for _, s := range out.Successful {
						i, cerr := strconv.Atoi(aws.ToString(s.Id))
						if cerr != nil || i < b[0] || i >= b[1] {
							continue
						}
						sent[i], ok[i] = Sent{MessageID: aws.ToString(s.MessageId), Task: tasks[i]}, true
						n++
					}
					mu.Unlock()
					if len(out.Failed) > 0 {
						err = fmt.Errorf("%d entries failed, first: %s %s", len(out.Failed), aws.ToString(out.Failed[0].Code), aws.ToString(out.Failed[0].Message))
					}
				}
				if err != nil {
					mu.Lock()
					if sendErr == nil {
						sendErr = fmt.Errorf("send to %s: %w", queueURL, err)
					}
					mu.Unlock()
				}
				if onSent != nil && n > 0 {
					onSent(n)
				}
			}
		}()
	}
dispatch:
	for _, b := range Batches(tasks, MaxBatchBytes) {
		if failed() {
			break
		}
		select {
		case batches <- b:
		case <-ctx.Done():
			break dispatch
		}
	}
	close(batches)
	wg.Wait()
	if sendErr == nil {
		sendErr = ctx.Err()
	}
	if sendErr != nil {
		e := &SendError{Total: len(tasks), Resume: len(tasks), Err: sendErr}
		for i, done := range ok {
			switch {
			case !done && e.Resume == len(tasks):
				e.Resume = i
			case done:
				e.Sent++
				if e.Resume < len(tasks) {
					e.SentAfter++
				}
			}
		}
		return sent[:e.Resume], e
	}
	return sent, nil
}
