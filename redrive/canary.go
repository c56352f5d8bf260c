package redrive

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/agentdlq/agentdlq/ledger"
)

// Canary outcomes of one message.
const (
	canaryProcessed    = "processed"     // the ledger says done
	canaryDeadLettered = "dead_lettered" // back in the DLQ
	canaryPending      = "pending"       // no outcome before the timeout
)

type canaryItem struct {
	moved  movedLetter
	before ledger.Entry
	at     time.Time // when it was sent back
	state  string
}

// canaryResult is the outcome of the canary messages.
type canaryResult struct {
	Moved        int               `json:"moved"`
	Processed    int               `json:"processed"`
	DeadLettered int               `json:"dead_lettered"`
	Pending      int               `json:"pending"`
	Outcomes     map[string]string `json:"outcomes"` // hot message id → outcome
	Waited       time.Duration     `json:"waited_ns"`
}

func (c *canaryResult) counts() map[string]int {
	if c == nil {
		return nil
	}
	return map[string]int{"canary_moved": c.Moved, "canary_processed": c.Processed,
		"canary_dead_lettered": c.DeadLettered, "canary_pending": c.Pending}
}

// canaryOutcome is pure: what the ledger says of a canary message whose key's
// entry was before when it was moved and is now now (ok false: no entry).
// A done key is processed (a redrive of a done key is a no-op, which is a
// success); a higher dead-letter count means it was dead-lettered again.
func canaryOutcome(before, now ledger.Entry, ok bool) string {
	switch {
	case !ok:
		return canaryPending
	case now.DeadLetterCount > before.DeadLetterCount:
		return canaryDeadLettered
	case now.State == ledger.StateDone:
		return canaryProcessed
	default:
		return canaryPending
	}
}

// waitCanary waits, bounded, until every canary message is processed or back
// in the DLQ. It fails with ErrCanaryFailed when any came back, or when any
// outcome is still unknown at the timeout.
func (r *Redriver) waitCanary(ctx context.Context, api selectAPI, req SelectRequest, items []canaryItem, seen map[string]bool) (*canaryResult, error) {
	timeout, poll := req.CanaryTimeout, req.CanaryPoll
	if timeout <= 0 {
		timeout = DefaultCanaryTimeout
	}
	if poll <= 0 {
		poll = defaultCanaryPoll
	}
	start := r.now()
	deadline := start.Add(timeout)
	bodies := map[string][]int{}
	since := start
	for i := range items {
		if !items[i].at.IsZero() && items[i].at.Before(since) {
			since = items[i].at
		}
		if items[i].state == "" {
			items[i].state = canaryPending
		}
		bodies[items[i].moved.BodySHA256] = append(bodies[items[i].moved.BodySHA256], i)
	}
	r.log().InfoContext(ctx, "canary: waiting for the outcome", "pipeline", r.cfg.Pipeline.Name, "count", len(items), "timeout_s", int(timeout.Seconds()))
	for {
		pending := 0
		for i := range items {
			it := &items[i]
			if it.state != canaryPending || it.moved.IdempotencyKey == "" {
				continue
			}
			e, ok, err := r.cfg.Ledger.Get(ctx, r.ledgerKey(it.moved.Tenant, it.moved.IdempotencyKey))
			if err != nil {
				r.log().WarnContext(ctx, "canary: ledger read failed", "error", err.Error())
				continue
			}
			it.state = canaryOutcome(it.before, e, ok)
		}
		if err := r.peekDLQ(ctx, api, items, bodies, seen, since.Add(-canarySkew)); err != nil {
			r.log().WarnContext(ctx, "canary: DLQ peek failed", "error", err.Error())
		}
		for i := range items {
			if items[i].state == canaryPending {
				pending++
			}
		}
		if r.cfg.OnCanary != nil {
			r.cfg.OnCanary(pending, len(items), r.now().Sub(start), timeout)
		}
		if pending == 0 || !r.now().Before(deadline) {
			break
		}
		if err := r.sleep(ctx, poll); err != nil {
			return r.tallyCanary(items, start), err
		}
	}
	res := r.tallyCanary(items, start)
	switch {
	case res.DeadLettered > 0:
		return res, fmt.Errorf("%w: %d of %d canary messages were dead-lettered again (%d processed): fix the cause before redriving the rest",
			ErrCanaryFailed, res.DeadLettered, res.Moved, res.Processed)
	case res.Pending > 0:
		return res, fmt.Errorf("%w: %d of %d canary messages have no outcome after %s: is the worker running? A worker must consume the hot queue while the canary waits",
			ErrCanaryFailed, res.Pending, res.Moved, timeout)
	}
	return res, nil
}

func (r *Redriver) tallyCanary(items []canaryItem, start time.Time) *canaryResult {
	res := &canaryResult{Moved: len(items), Outcomes: map[string]string{}, Waited: r.now().Sub(start)}
	for _, it := range items {
		res.Outcomes[it.moved.HotMessageID] = it.state
		switch it.state {
		case canaryProcessed:
			res.Processed++
		case canaryDeadLettered:
			res.DeadLettered++
		default:
			res.Pending++
		}
	}
	return res
}

// canarySkew tolerates clock skew between this machine and SQS's SentTimestamp.
const canarySkew = 30 * time.Second

// peekDLQ looks for canary messages back in the DLQ: a dead letter this run
// has not seen whose body is byte-identical to a canary message's. What it
// receives it releases at once.
func (r *Redriver) peekDLQ(ctx context.Context, api selectAPI, items []canaryItem, bodies map[string][]int, seen map[string]bool, since time.Time) error {
	peeked := map[string]bool{}
	for range 5 {
		out, err := api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(r.cfg.Queues.DLQURL), MaxNumberOfMessages: 10, VisibilityTimeout: 5,
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		if err != nil {
			return err
		}
		fresh := 0
		for _, m := range out.Messages {
			l := fromSQS(m)
			r.release(ctx, api, &l)
			if peeked[l.MessageID] {
				continue
			}
			peeked[l.MessageID] = true
			fresh++
			// A canary message that failed again is a new message in the DLQ: the
			// worker's own send, or the broker's move of the message redrive
			// sent (which keeps that send's time). Older look-alikes are other
			// dead letters of the same task.
			if seen[l.MessageID] || (!l.SentTimestamp.IsZero() && l.SentTimestamp.Before(since)) {
				continue
			}
			for _, i := range bodies[bodySHA256(l.Body)] {
				if items[i].state == canaryPending {
					items[i].state = canaryDeadLettered
					break
				}
			}
		}
		if fresh == 0 {
			return nil
		}
	}
	return nil
}
