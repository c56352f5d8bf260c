package batch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/internal/textutil"
)

// SendMessageBatch takes at most ten entries, whose messages together are
// at most 1 MiB (256 KiB on queues and emulators that predate the 1 MiB
// limit of August 2025).
const (
	maxBatchEntries   = 10
	batchBytesClassic = 256 * 1024
	batchBytesLarge   = 1024 * 1024
)

// batchBytes is the most a SendMessageBatch of this processor carries: 256
// KiB, unless the DLQ takes messages larger than that (MaxMessageBytes), in
// which case the queue's region has the 1 MiB limit for batches too.
func (p *Processor) batchBytes() int {
	if p.maxMessage > batchBytesClassic {
		return batchBytesLarge
	}
	return batchBytesClassic
}

// entryIDs are the entries' Ids: their index in the batch.
var entryIDs = [maxBatchEntries]string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}

// pendingLetter is a dead letter waiting in an outbox for its send.
type pendingLetter struct {
	rec    Record
	reason deadletter.Reason
	code   string
	errMsg string // the redacted error text, for the log
	cause  error
	now    time.Time
}

// outbox holds up to ten dead letters of one lane of an invocation (the
// sequential loop, or one of the Concurrency goroutines) for one
// SendMessageBatch. Each batch's input (its entries, their attribute maps
// and strings) is new and never written again once sent: the client may
// keep it. Only the scratch of the dead letter being encoded is reused.
type outbox struct {
	n       int // letters waiting
	bytes   int // their size, as SQS counts it
	pending [maxBatchEntries]pendingLetter
	entries []types.SendMessageBatchRequestEntry // the batch being filled
	strs    []string                             // its *string values point here
	metas   [maxBatchEntries][]byte              // dlq_meta encoded, copied into the entry

	// Scratch for the dead letter being encoded (its Meta is encoded, or
	// copied into a claim check, before the next one is built).
	hist [1]deadletter.Attempt
	// The record's attributes as the dead letter being encoded carries them,
	// those kept on the message, and the ones folded into dlq_meta.
	rattrs []deadletter.NamedAttribute
	kept   []deadletter.NamedAttribute
	folded map[string]deadletter.Attribute
}

// history is a one-attempt history in the outbox's scratch.
func (o *outbox) history(a deadletter.Attempt) []deadletter.Attempt {
	o.hist[0] = a
	return o.hist[:]
}

// sha256Hex is the hex SHA-256 of b.
func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	var buf [2 * sha256.Size]byte
	hex.Encode(buf[:], sum[:])
	return string(buf[:])
}

var outboxPool = sync.Pool{New: func() any { return new(outbox) }}

func getOutbox() *outbox { return outboxPool.Get().(*outbox) }

// putOutbox recycles an empty outbox; it keeps no message alive.
func putOutbox(o *outbox) {
	if o == nil || o.n != 0 {
		return // never: every lane flushes before it ends
	}
	o.reset()
	clear(o.rattrs)
	clear(o.kept)
	clear(o.folded)
	outboxPool.Put(o)
}

// ptr returns a pointer to a copy of s in the batch's own slab: an
// aws.String each was an allocation per attribute. The slab is never
// written again once its batch is sent (reset starts a new one), and a
// pointer into a slab that append outgrew still points at its value.
func (o *outbox) ptr(s string) *string {
	if len(o.strs) == cap(o.strs) {
		o.strs = make([]string, 0, 64)
	}
	o.strs = append(o.strs, s)
	return &o.strs[len(o.strs)-1]
}

// reset forgets the sent batch: its input belongs to the client now.
func (o *outbox) reset() {
	o.pending = [maxBatchEntries]pendingLetter{}
	o.entries, o.strs = nil, nil
	o.hist = [1]deadletter.Attempt{}
	o.n, o.bytes = 0, 0
}

// enqueue encodes the dead letter of rec into the lane's outbox and sends
// the outbox when it is full, or at once on a FIFO queue (the group's next
// record waits for this one's fate). The record's fate is set by the send
// (settle); until then it counts as retried, so that a letter never sent is
// never acknowledged. A dead letter that cannot be encoded at all fails at
// once, as a failed send.
func (p *Processor) enqueue(ctx context.Context, rec Record, meta *deadletter.Meta, code string, cause error, m *counters) {
	o := m.dlq
	rec.st.result = resultRetry
	letter := pendingLetter{rec: rec, reason: meta.Reason, code: code, cause: cause, now: meta.DeadLetteredAt}
	// The message's attributes and body as the dead letter carries them:
	// the attributes decoded now (data type and values only), the body
	// copied as it was received.
	clear(o.rattrs)
	o.rattrs = rec.m.AppendDeadLetterAttrs(o.rattrs[:0])
	body := rec.m.BodyString() // as received (the handler's copy may have changed)

	// The common case: the metadata is written into the slot's reused
	// buffer, the original attributes kept on the message (all of them, or
	// the first eight by name without the dlq_ prefix, the rest folded into
	// dlq_meta: deadletter.FoldNamed, EncodeDeadLetter's own fold) are read
	// from the record, and the message fits (deadletter.LetterSize, the
	// size FitDeadLetter checks).
	if rec.st.requeues > 0 { // the processor's own bookkeeping stays behind
		o.rattrs = withoutRequeued(o.rattrs)
	}
	slot, size := o.n, -1
	var fitted map[string]deadletter.Attribute
	orig := *meta
	kept, folded := deadletter.FoldNamed(o.rattrs, o.kept, o.folded)
	if len(kept) != len(o.rattrs) { // some were folded (FoldNamed keeps all or folds one at least)
		o.kept, o.folded = kept, folded
		meta.Folded = folded
	}
	buf, err := deadletter.AppendMeta(o.metas[slot][:0], meta)
	o.metas[slot] = buf
	if err == nil {
		size = deadletter.LetterSize(len(body), meta.Reason, len(buf), kept)
		letter.errMsg = meta.Error // redacted by AppendMeta
	}
	if err != nil || size > p.maxMessage {
		size, *meta = -1, orig
	}
	if size < 0 {
		// Folded attributes, a reduction or an encoding problem: the
		// general path (deadletter.FitDeadLetter, claim checks).
		attrs, err := p.fit(ctx, rec, o.rattrs, *meta)
		letter.errMsg = deadletter.Redact(meta.Error, deadletter.MaxErrorRunes)
		if err != nil {
			p.settle(ctx, &letter, err, m)
			return
		}
		fitted, size = attrs, deadletter.MessageSize(len(body), attrs)
	}
	if o.n > 0 && o.bytes+size > p.batchBytes() {
		p.flush(ctx, m)
		if fitted == nil { // the encoded metadata moves to the first slot
			o.metas[0], o.metas[slot] = o.metas[slot], o.metas[0]
		}
		slot = 0
	}

	if o.entries == nil {
		o.entries = make([]types.SendMessageBatchRequestEntry, 0, maxBatchEntries)
	}
	o.entries = o.entries[:slot+1]
	e := &o.entries[slot]
	*e = types.SendMessageBatchRequestEntry{Id: &entryIDs[slot], MessageBody: o.ptr(body)}
	if fitted == nil {
		am := make(map[string]types.MessageAttributeValue, len(kept)+2)
		for i := range kept {
			am[kept[i].Name] = sqsAttribute(&kept[i].Attribute, o.ptr)
		}
		am[deadletter.AttrReason] = types.MessageAttributeValue{DataType: o.ptr("String"), StringValue: o.ptr(string(letter.reason))}
		am[deadletter.AttrMeta] = types.MessageAttributeValue{DataType: o.ptr("String"), StringValue: o.ptr(string(o.metas[slot]))}
		e.MessageAttributes = am
	} else {
		am := make(map[string]types.MessageAttributeValue, len(fitted))
		for name, a := range fitted {
			am[name] = sqsAttribute(&a, o.ptr)
		}
		e.MessageAttributes = am
	}
	if th := rec.m.TraceHeader(); th != "" {
		e.MessageSystemAttributes = map[string]types.MessageSystemAttributeValue{
			string(types.MessageSystemAttributeNameForSendsAWSTraceHeader): {DataType: o.ptr("String"), StringValue: o.ptr(th)},
		}
	}
	if p.fifo {
		group := rec.GroupID
		if group == "" {
			group = rec.MessageID()
		}
		e.MessageGroupId = o.ptr(group)
		e.MessageDeduplicationId = o.ptr(DeduplicationID(rec.MessageID()))
	}
	o.pending[slot] = letter
	o.n, o.bytes = slot+1, o.bytes+size
	if o.n == maxBatchEntries || p.fifo {
		p.flush(ctx, m)
	}
}

// sqsAttribute is a as the SDK sends it, its strings' pointers made by ptr
// (aws.String, or an outbox's slab).
func sqsAttribute(a *deadletter.Attribute, ptr func(string) *string) types.MessageAttributeValue {
	v := types.MessageAttributeValue{DataType: ptr(a.DataType)}
	if strings.HasPrefix(a.DataType, "Binary") {
		v.BinaryValue = a.BinaryValue
	} else {
		v.StringValue = ptr(a.StringValue)
	}
	return v
}

// flush sends the lane's waiting dead letters in one SendMessageBatch and
// settles each: an entry that SQS reports as failed, or does not report at
// all, leaves its record to be retried; the others are dead-lettered.
func (p *Processor) flush(ctx context.Context, m *counters) {
	o := m.dlq
	if o == nil || o.n == 0 {
		return
	}
	n := o.n
	out, err := p.sendBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: o.ptr(p.dlqURL), Entries: o.entries[:n]})
	var errs [maxBatchEntries]error
	if err != nil {
		for i := range n {
			errs[i] = err
		}
	} else {
		var sent [maxBatchEntries]bool
		for _, s := range out.Successful {
			if i := entryIndex(s.Id, n); i >= 0 {
				sent[i] = true
			}
		}
		for _, f := range out.Failed {
			if i := entryIndex(f.Id, n); i >= 0 {
				fault := smithy.FaultServer
				if f.SenderFault {
					fault = smithy.FaultClient
				}
				errs[i] = &smithy.GenericAPIError{Code: deref(f.Code), Message: deref(f.Message), Fault: fault}
			}
		}
		for i := range n {
			if errs[i] == nil && !sent[i] {
				errs[i] = errors.New("SendMessageBatch reported neither success nor failure for the entry")
			}
		}
	}
	for i := range n {
		p.settle(ctx, &o.pending[i], errs[i], m)
	}
	o.reset()
}

// sendBatch calls SendMessageBatch; a client that panics fails the call.
func (p *Processor) sendBatch(ctx context.Context, in *sqs.SendMessageBatchInput) (out *sqs.SendMessageBatchOutput, err error) {
	defer func() {
		if v := recover(); v != nil { // a client that panics fails this send, not the batch
			out, err = nil, fmt.Errorf("dead-letter send panicked: %v", v)
		}
	}()
	out, err = p.sqs.SendMessageBatch(ctx, in)
	if err == nil && out == nil {
		err = errors.New("SendMessageBatch returned no output")
	}
	return out, err
}

// entryIndex is the slot of the entry id, or -1.
func entryIndex(id *string, n int) int {
	if id == nil || len(*id) != 1 || (*id)[0] < '0' || int((*id)[0]-'0') >= n {
		return -1
	}
	return int((*id)[0] - '0')
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// settle acts on the send of one dead letter: a failure leaves the record on
// the hot queue (retried, DLQSendFailures); a success records the dead
// letter in the ledger, counts it and logs it.
func (p *Processor) settle(ctx context.Context, l *pendingLetter, err error, m *counters) {
	rec, st := l.rec, l.rec.st
	if err != nil {
		// Nothing is lost: the record stays on the hot queue and is retried.
		m.dlqSendFailures++
		p.logFailure(ctx, slog.LevelError, "dead-letter send failed; retried", rec, l.reason, err)
		p.release(ctx, rec)
		st.result = resultRetry
		return
	}
	st.result = resultDeadLettered
	if st.begun && p.ledger != nil {
		if _, lerr := p.ledger.DeadLettered(ctx, st.ledgerKey, l.reason, l.now); lerr != nil {
			// The dead letter is safe in the DLQ; only its count is missing.
			p.logFailure(ctx, slog.LevelError, "ledger could not count the dead letter", rec, l.reason, lerr)
		}
	}
	m.byReason[reasonIndex(l.reason)]++
	line := deadLetterLine{
		messageID: rec.MessageID(), queue: queueName(rec.EventSourceARN()), reason: string(l.reason), attempt: rec.ReceiveCount,
		traceID: st.fields.TraceID, code: l.code, err: l.errMsg,
	}
	if pe, ok := errors.AsType[*panicError](l.cause); ok {
		line.stack = textutil.Truncate(pe.stack(), 4096)
	}
	p.logDeadLettered(ctx, &line)
}
