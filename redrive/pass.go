package redrive

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"golang.org/x/time/rate"

	"github.com/agentdlq/agentdlq/redrive/audit"
)

// pass is one selective redrive over the DLQ: it receives, sorts what it
// receives (chosen, not chosen, deferred, seen before), hands the chosen
// letters of each receive to its mover, waits for the canary, and gives
// back what it holds when it ends. Each phase is a method; what moving
// means is the mover's (a real move, or a dry run's account of one).
type pass struct {
	r     *Redriver
	api   selectAPI
	req   SelectRequest
	res   *SelectResult
	mover mover

	hold    time.Duration // the receives' visibility timeout
	idleMax int           // receives that bring nothing new before the DLQ counts as exhausted
	wait    int32         // the receives' long-poll wait, seconds

	// seen are the letters the pass has looked at, by message id; held the
	// ones it leaves hidden until it ends (message id → latest receipt
	// handle), in a standard DLQ.
	seen map[string]bool
	held map[string]string
	// sent are the hot message ids of the pass's moves; back the ones of
	// them that came back to the DLQ while the pass ran (dead-lettered
	// again), which it never moves a second time.
	sent map[string]bool
	back map[string]bool
	// copies are the letters the pass chose, by copyKeyOf; keptAs the
	// ones of them whose move has not ended, by DLQ message id.
	copies map[string]*copyState
	keptAs map[string]*copyState

	canary     []canaryItem // the canary's letters, once moved
	canaryDone bool         // no canary, or it passed
	planned    int          // moves started: the limit and the canary count these
	idle       int          // receives in a row that brought nothing new
}

// mover is what a pass does with the chosen letters of one receive.
type mover interface {
	// move moves todo (or accounts for it), and returns the canary items
	// of the letters it moved, the letters it left (their claim check
	// restored nothing: they stay hidden with the ones not chosen), and
	// the first error, after which the pass stops.
	move(ctx context.Context, p *pass, todo []letter) (items []canaryItem, left []*letter, err error)
}

// sendMover moves for real: send, count the redrive, delete (moveBatch),
// at most workers at a time, all paced by one limiter.
type sendMover struct {
	limiter *rate.Limiter
	workers int
}

func (m sendMover) move(ctx context.Context, p *pass, todo []letter) ([]canaryItem, []*letter, error) {
	return p.r.moveBatch(ctx, p.api, m.limiter, m.workers, todo, p.res)
}

// dryMover moves nothing: it lists each chosen letter as one that would
// move, after reading its claim check as the move would (S3 GetObject
// only), so that a letter a move would leave behind is counted so; every
// letter stays in the DLQ, released when the pass ends.
type dryMover struct{}

func (dryMover) move(ctx context.Context, p *pass, todo []letter) ([]canaryItem, []*letter, error) {
	for i := range todo {
		l := &todo[i]
		o := restore(l)
		mv := movedLetter{DLQMessageID: l.MessageID, OriginalMessageID: o.OriginalMessageID,
			Reason: l.Reason, Fingerprint: l.Fingerprint, IdempotencyKey: o.IdempotencyKey, BodySHA256: bodySHA256(l.Body)}
		cc := p.r.restoreEvidence(ctx, &o)
		p.leave(ctx, l)
		p.res.Released++
		if cc == nil {
			p.res.Letters = append(p.res.Letters, mv)
			continue
		}
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		moveStatus{claimCheck: cc}.apply(p.res, l.Reason, mv)
	}
	return nil, nil, nil
}

// newPass applies the request's defaults and picks the mover.
func (r *Redriver) newPass(api selectAPI, req SelectRequest, res *SelectResult) *pass {
	p := &pass{r: r, api: api, req: req, res: res, hold: selectHold(req),
		idleMax: req.IdleReceives, wait: req.WaitSeconds,
		seen: map[string]bool{}, held: map[string]string{}, sent: map[string]bool{}, back: map[string]bool{},
		copies: map[string]*copyState{}, keptAs: map[string]*copyState{},
		canaryDone: req.Canary == 0 || req.DryRun}
	if p.idleMax <= 0 {
		p.idleMax = defaultIdleReceives
	}
	switch {
	case p.wait == 0:
		p.wait = 1
	case p.wait < 0:
		p.wait = 0
	}
	workers := req.Workers
	if workers <= 0 {
		workers = defaultWorkers
	}
	p.mover = sendMover{limiter: rate.NewLimiter(rate.Limit(req.Rate), 1), workers: workers}
	if req.DryRun {
		p.mover = dryMover{}
	}
	return p
}

// run receives until the DLQ is exhausted, the limit is reached, the
// context ends or a phase fails; it always gives back what it holds.
func (p *pass) run(ctx context.Context) error {
	defer p.releaseHeld(ctx)
	for !p.exhausted() {
		if err := ctx.Err(); err != nil {
			p.res.Partial = "interrupted"
			return err
		}
		if p.req.Limit > 0 && p.planned >= p.req.Limit {
			p.res.Partial = fmt.Sprintf("limit of %d reached", p.req.Limit)
			return nil
		}
		msgs, err := p.receive(ctx)
		if err != nil {
			p.res.Partial = "receive failed"
			return err
		}
		todo, fresh := p.sort(ctx, msgs)
		if err := p.moveChosen(ctx, todo); err != nil {
			p.res.Partial = "stopped on an error"
			return err
		}
		if fresh == 0 {
			p.idle++
		} else {
			p.idle = 0
		}
		if err := p.checkCanary(ctx); err != nil {
			return err
		}
	}
	return nil
}

// exhausted: a few receives in a row brought nothing new. Released letters
// come straight back and can fill several receives in a row with letters
// already seen; while fewer letters were seen than the DLQ held at the
// start, the pass keeps going ten times longer before it calls the DLQ
// exhausted (it still ends, and says partial, if they never show up).
func (p *pass) exhausted() bool {
	if p.res.Seen < p.res.DepthAtStart {
		return p.idle >= 10*p.idleMax
	}
	return p.idle >= p.idleMax
}

// receive is one receive of up to ten letters, hidden for the hold.
func (p *pass) receive(ctx context.Context) ([]sqstypes.Message, error) {
	out, err := p.api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(p.r.cfg.Queues.DLQURL),
		MaxNumberOfMessages:         10,
		VisibilityTimeout:           int32(p.hold / time.Second),
		WaitTimeSeconds:             p.wait,
		MessageAttributeNames:       []string{"All"},
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
	})
	if err != nil {
		return nil, p.r.queueErr(err, p.r.cfg.Queues.DLQURL)
	}
	return out.Messages, nil
}

// sort decides what becomes of each received letter: one seen before is
// hidden longer (held) or released; a new one is tagged and counted, and
// is chosen (todo), deferred (chosen, but the limit or the canary is full:
// released, to be seen again) or left (not chosen: held until the pass
// ends). fresh counts the new ones.
func (p *pass) sort(ctx context.Context, msgs []sqstypes.Message) (todo []letter, fresh int) {
	for _, m := range msgs {
		l := fromSQS(m)
		if p.seen[l.MessageID] {
			if _, ok := p.held[l.MessageID]; ok {
				// Back after its hold lapsed (a pass longer than the hold):
				// hide it four times longer, so that letters which keep
				// coming back cannot fill every receive, and keep the new
				// handle for the release at the end.
				p.held[l.MessageID] = l.ReceiptHandle
				p.r.rehide(ctx, p.api, &l, 4*p.hold)
				continue
			}
			p.r.release(ctx, p.api, &l)
			continue
		}
		l.Tagged = p.r.tag(l.Message)
		if hot := p.sentAs(&l); hot != "" {
			// One of this pass's moves, dead-lettered again while it runs
			// (a new message in the DLQ): not another letter of the group.
			// Moved again it would loop until redrive_loop; it stays, left
			// like the letters not chosen, and the canary counts it.
			p.seen[l.MessageID] = true
			p.back[hot] = true
			p.res.Returned++
			p.leave(ctx, &l)
			continue
		}
		p.seen[l.MessageID] = true
		fresh++
		p.res.Seen++
		match := selector{p.req.Reasons, p.req.Fingerprints}.match(l.Reason, l.Fingerprint)
		if match {
			p.res.ofReason++
			match = matchFilter(p.req.Filter, &l) && p.r.settled(ctx, p.req, &l, p.res)
		}
		key := ""
		if match {
			var cs *copyState
			if cs, key = p.copyOf(&l); cs != nil {
				// A copy of a letter this pass chose: never moved twice.
				p.onCopy(ctx, cs, l)
				continue
			}
		}
		full := (p.req.Limit > 0 && p.planned >= p.req.Limit) || (!p.canaryDone && p.planned >= p.req.Canary)
		switch {
		case match && full:
			p.r.release(ctx, p.api, &l)
			delete(p.seen, l.MessageID) // deferred, not handled yet: see it again later
			p.res.Seen--
			p.res.ofReason--
		case !match:
			p.leave(ctx, &l)
			p.res.Released++
		default:
			p.res.Matched++
			p.planned++
			p.chosen(&l, key)
			todo = append(todo, l)
		}
	}
	return todo, fresh
}

// sentAs is the hot message id under which this pass moved the letter l
// came back as, or "": the worker's dead letter names the message it
// received (dlq_meta.message_id), and the broker's move keeps its id.
func (p *pass) sentAs(l *letter) string {
	switch {
	case len(p.sent) == 0:
		return ""
	case p.sent[l.MessageID]:
		return l.MessageID
	case l.Meta != nil && p.sent[l.Meta.MessageID]:
		return l.Meta.MessageID
	}
	return ""
}

// moveChosen hands the chosen letters to the mover; the ones it left stay
// hidden like the letters not chosen and count toward neither the limit
// nor the canary.
func (p *pass) moveChosen(ctx context.Context, todo []letter) error {
	if len(todo) == 0 {
		return nil
	}
	items, left, err := p.mover.move(ctx, p, todo)
	moved := make(map[string]bool, len(items))
	for _, it := range items {
		if it.moved.HotMessageID != "" {
			p.sent[it.moved.HotMessageID] = true
		}
		moved[it.moved.DLQMessageID] = true
	}
	if p.req.DryRun {
		for i := range todo {
			moved[todo[i].MessageID] = true // would move
		}
	}
	for _, l := range left {
		p.leave(ctx, l)
		p.planned--
		delete(moved, l.MessageID)
	}
	// Copies wait for the move of their letter: deleted only after it
	// moved, whatever stopped the others.
	p.settleCopies(context.WithoutCancel(ctx), todo, moved)
	if !p.canaryDone {
		p.canary = append(p.canary, items...)
	}
	return err
}

// checkCanary waits for the canary's outcome once it has moved (or the
// DLQ ran out before it filled), audits it, and stops the pass if it failed.
func (p *pass) checkCanary(ctx context.Context) error {
	if p.canaryDone || !(len(p.canary) >= p.req.Canary || (p.exhausted() && len(p.canary) > 0)) {
		return nil
	}
	for i := range p.canary {
		if p.back[p.canary[i].moved.HotMessageID] {
			p.canary[i].state = canaryDeadLettered // back already: the pass holds it, no peek sees it
		}
	}
	cr, err := p.r.waitCanary(ctx, p.api, p.req, p.canary, p.seen)
	p.res.Canary = cr
	if aerr := p.r.record(ctx, audit.Entry{Actor: p.req.Owner, Action: audit.ActionCanary, Why: p.req.Why,
		Reasons: p.r.selectRecord(p.req).Reasons, Fingerprints: p.req.Fingerprints, Counts: cr.counts()}, err); aerr != nil && err == nil {
		return aerr
	}
	if err != nil {
		p.res.Partial = "canary failed"
		return err
	}
	p.canaryDone = true
	p.idle = 0
	return nil
}

// leave keeps a letter the pass does not move hidden until it ends (in a
// standard DLQ: released at once, it would come straight back and fill
// the next receives, and a deep DLQ's chosen letters behind it might never
// be reached). In a FIFO DLQ it is released at once: held, it would block
// its message group, whose letters behind it come only with it.
func (p *pass) leave(ctx context.Context, l *letter) {
	if !p.r.cfg.Queues.FIFO && len(p.held) < maxHeld {
		p.held[l.MessageID] = l.ReceiptHandle
		return
	}
	p.r.release(ctx, p.api, l)
}

// releaseHeld gives back what the pass holds, with a context of its own:
// an interrupted pass still releases.
func (p *pass) releaseHeld(ctx context.Context) {
	relCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	p.r.releaseHeld(relCtx, p.api, p.held)
}
