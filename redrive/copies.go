package redrive

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Copies of one dead letter: the worker's SendMessageBatch reached SQS, its
// response was lost, and the worker (or its SDK's retry) sent the same
// dead letter again. A pass moves one of them and deletes the others from
// the DLQ, but only after that move succeeded, and only the ones identical
// to it: the same original message id (dlq_meta's message_id) and the same
// body, message attributes (dlq_reason, dlq_meta byte for byte, the kept
// originals) and message group, no field ignored. A letter that differs in
// anything (another dead-lettering of the same message, with its own
// attempts, times or error) is a letter of its own: it moves as one, and
// the idempotency key absorbs the second run.

// copyKeyOf is the identity of a tagged letter's copies: its original
// message id and a digest of everything it holds. A letter without
// readable metadata naming its original message has none (false).
func copyKeyOf(l *letter) (string, bool) {
	if l.Meta == nil || l.MetaErr != nil || l.Meta.MessageID == "" {
		return "", false
	}
	return copyKey(l.Meta.MessageID, l), true
}

// copyKey is the copy key of a letter of original message id orig.
func copyKey(orig string, l *letter) string {
	h := sha256.New()
	field := func(h hash.Hash, s []byte) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write(s)
	}
	field(h, []byte(l.Body))
	field(h, []byte(l.MessageGroupID))
	names := make([]string, 0, len(l.Attributes))
	for name := range l.Attributes {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		a := l.Attributes[name]
		field(h, []byte(name))
		field(h, []byte(a.DataType))
		field(h, []byte(a.StringValue))
		field(h, a.BinaryValue)
	}
	return orig + "/" + hex.EncodeToString(h.Sum(nil))
}

// copyState is what a pass knows of one dead letter it chose and of the
// copies of it it received.
type copyState struct {
	kept, original string // the DLQ message id of the letter the pass moves, and its original message id
	done           bool   // the move of kept ended
	moved          bool   // ... and succeeded (a dry run's: would)
	pending        []letter
	listed         int // index in SelectResult.Copies, -1 while none was deleted
}

// copiesDeleted is one moved dead letter and the copies of it a pass
// deleted (a dry run's: would delete).
type copiesDeleted struct {
	DLQMessageID      string   `json:"dlq_message_id"`
	OriginalMessageID string   `json:"original_message_id"`
	Deleted           []string `json:"deleted_message_ids"`
}

// chosen notes a letter the pass is about to move, of copy key key ("":
// none), so that copies of it received later (or in the same receive) are
// deleted once it moved.
func (p *pass) chosen(l *letter, key string) {
	if key == "" {
		return
	}
	cs := &copyState{kept: l.MessageID, original: l.Meta.MessageID, listed: -1}
	p.copies[key] = cs
	p.keptAs[l.MessageID] = cs
}

// copyOf returns the state of the letter l is a copy of, if the pass chose
// one, and l's copy key ("": none).
func (p *pass) copyOf(l *letter) (*copyState, string) {
	key, ok := copyKeyOf(l)
	if !ok {
		return nil, ""
	}
	return p.copies[key], key
}

// onCopy handles a chosen letter that is a copy of one the pass chose:
// deleted when that one moved, left in the DLQ when it did not, held
// until it is known when its move has not ended yet.
func (p *pass) onCopy(ctx context.Context, cs *copyState, l letter) {
	switch {
	case !cs.done:
		cs.pending = append(cs.pending, l)
	case cs.moved:
		p.deleteCopy(ctx, cs, &l)
	default:
		p.leave(ctx, &l)
		p.res.Released++
	}
}

// settleCopies ends the wait of the copies of the letters of todo, whose
// moves ended: moved are the DLQ message ids of the ones that moved.
func (p *pass) settleCopies(ctx context.Context, todo []letter, moved map[string]bool) {
	for i := range todo {
		cs := p.keptAs[todo[i].MessageID]
		if cs == nil {
			continue
		}
		delete(p.keptAs, todo[i].MessageID)
		cs.done, cs.moved = true, moved[cs.kept]
		pending := cs.pending
		cs.pending = nil
		for _, c := range pending {
			p.onCopy(ctx, cs, c)
		}
	}
}

// deleteCopy deletes a copy of a letter the pass moved (a dry run leaves it
// and counts it). A delete that fails leaves it in the DLQ: a later pass
// moves it as a letter of its own, and the idempotency key absorbs it.
func (p *pass) deleteCopy(ctx context.Context, cs *copyState, l *letter) {
	if p.req.DryRun {
		p.leave(ctx, l)
	} else if _, err := p.api.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(p.r.cfg.Queues.DLQURL), ReceiptHandle: aws.String(l.ReceiptHandle)}); err != nil {
		p.res.CopyDeleteFailed++
		p.r.log().WarnContext(ctx, "copy of a moved dead letter not deleted: it stays in the DLQ", "message_id", l.MessageID, "copy_of", cs.kept,
			"queue", p.r.cfg.Queues.DLQURL, "pipeline", p.r.cfg.Pipeline.Name, "error", err.Error())
		p.leave(ctx, l)
		return
	} else {
		p.r.log().InfoContext(ctx, "copy of a moved dead letter deleted", "message_id", l.MessageID, "copy_of", cs.kept,
			"original_message_id", cs.original, "pipeline", p.r.cfg.Pipeline.Name)
	}
	p.res.CopiesDeleted++
	switch {
	case cs.listed >= 0:
		p.res.Copies[cs.listed].Deleted = append(p.res.Copies[cs.listed].Deleted, l.MessageID)
	case len(p.res.Copies) < MaxLetters:
		cs.listed = len(p.res.Copies)
		p.res.Copies = append(p.res.Copies, copiesDeleted{DLQMessageID: cs.kept, OriginalMessageID: cs.original, Deleted: []string{l.MessageID}})
	}
}

// copiesDetail is the audit record's account of the copies a pass
// deleted: "<kept> (original <id>): deleted <id> <id>; …".
func copiesDetail(cs []copiesDeleted) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = c.DLQMessageID + " (original " + c.OriginalMessageID + "): deleted " + strings.Join(c.Deleted, " ")
	}
	return strings.Join(parts, "; ")
}
