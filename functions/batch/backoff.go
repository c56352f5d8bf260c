package batch

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/agentdlq/agentdlq/events/deadletter"
)

// Backoff is the exponential backoff with full jitter of retried records:
// before receive n+1 a record stays hidden for a random whole number of
// seconds in [0, min(Max, Base·2^(n-1))]. See the package doc for the schedule.
type Backoff struct {
	// Base is optional (default 2 s).
	Base time.Duration
	// Max is optional (default 120 s; at most 12 hours, the SQS maximum).
	Max time.Duration
	// Disabled is optional: leave retries to the queue's visibility timeout.
	Disabled bool
}

// retry leaves the record to be redelivered, hidden for a backoff.
func (p *Processor) retry(ctx context.Context, rec Record, c Classification, err error) {
	p.release(ctx, rec)
	var delay int32 = -1
	switch {
	case p.hotURL == "" || rec.ReceiptHandle() == "":
	case c.RetryAfter > 0:
		// The provider said when: its delay, not the backoff (even with the
		// backoff disabled), at most SQS's 12 hours.
		delay = retryAfterSeconds(c.RetryAfter, MaxVisibility)
		if verr := p.changeVisibility(ctx, rec.ReceiptHandle(), delay); verr != nil {
			p.logFailure(ctx, slog.LevelWarn, "Retry-After visibility failed; the visibility timeout applies", rec, c.Reason, verr)
		}
	case !p.backoff.Disabled:
		delay = p.backoff.delaySeconds(rec.ReceiveCount, p.rand)
		if verr := p.changeVisibility(ctx, rec.ReceiptHandle(), delay); verr != nil {
			p.logFailure(ctx, slog.LevelWarn, "visibility backoff failed; the visibility timeout applies", rec, c.Reason, verr)
		}
	}
	logAttrs(ctx, p.log, slog.LevelWarn, "retried",
		slog.String("message_id", rec.MessageID()), slog.String("queue", queueName(rec.EventSourceARN())),
		slog.String("reason", string(c.Reason)), slog.Int("attempt", rec.ReceiveCount), slog.String("trace_id", rec.st.fields.TraceID),
		slog.String("class", string(c.Class())), slog.String("error_code", c.Code), slog.Int("backoff_s", int(delay)),
		slog.String("error", deadletter.Redact(err.Error(), deadletter.MaxErrorRunes)))
}

func (p *Processor) release(ctx context.Context, rec Record) {
	if rec.st.begun && !rec.st.released && p.ledger != nil {
		rec.st.released = true
		if err := p.ledger.Release(ctx, rec.st.ledgerKey, rec.MessageID(), p.now()); err != nil {
			p.logFailure(ctx, slog.LevelWarn, "ledger release failed; the lease expires by itself", rec, "", err)
		}
	}
}

// delaySeconds draws the backoff before receive n+1: full jitter over
// [0, min(Max, Base·2^(n-1))], in whole seconds.
func (b Backoff) delaySeconds(receive int, rnd func(int64) int64) int32 {
	ceil := b.Ceiling(receive)
	return int32(rnd(int64(ceil/time.Second) + 1))
}

// Ceiling is the upper bound of the backoff after a failed receive n (1 for
// the first delivery): min(Max, Base·2^(n-1)).
func (b Backoff) Ceiling(receive int) time.Duration {
	if receive < 1 {
		receive = 1
	}
	d := b.Base
	for i := 1; i < receive && d < b.Max; i++ {
		d *= 2
	}
	return min(d, b.Max)
}

// changeVisibility hides a retried record for seconds.
func (p *Processor) changeVisibility(ctx context.Context, receipt string, seconds int32) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("visibility change panicked: %v", v)
		}
	}()
	_, err = p.sqs.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(p.hotURL), ReceiptHandle: aws.String(receipt), VisibilityTimeout: seconds,
	})
	return err
}
