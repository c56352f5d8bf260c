package batch

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/internal/textutil"
)

// SQSAPI is what the processor calls on SQS, with the SDK's signatures: an
// *sqs.Client satisfies it. Dead letters go to the DLQ with SendMessageBatch,
// up to ten a call (IAM: sqs:SendMessage allows it). The processor never
// writes an input again once it has passed it: an implementation may keep
// it.
type SQSAPI interface {
	SendMessageBatch(ctx context.Context, params *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	ChangeMessageVisibility(ctx context.Context, params *sqs.ChangeMessageVisibilityInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
}

// S3API is what the processor calls on S3 to keep a claim check, with the
// SDK's signature: an *s3.Client satisfies it.
type S3API interface {
	PutObject(ctx context.Context, params *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
}

// deadLetter puts the record's dead letter in the lane's outbox (see
// enqueue): its reason and metadata, the original body byte for byte and
// the original attributes. Once sent, the record is recorded in the ledger;
// a failed send leaves it to be retried. It returns resultPending: the
// record's fate is set when its batch is sent.
func (p *Processor) deadLetter(ctx context.Context, rec Record, c Classification, cause error, m *counters) result {
	st := rec.st
	now := p.now().UTC()
	reason := c.Reason
	errText := cause.Error()
	if st.begun && st.redriveCount >= p.loopAfter {
		reason = deadletter.ReasonRedriveLoop
		errText = "dead-lettered again after " + itoa(st.redriveCount) + " redrives; last failure " + string(c.Reason) + ": " + errText
	}
	meta := deadletter.Meta{
		Reason:         reason,
		Attempts:       rec.ReceiveCount,
		FirstFailureAt: now,
		LastFailureAt:  now,
		ErrorCode:      c.Code,
		// Redacted once, by the encoder; the log line takes its result.
		Error: errText,
		// The attempt that dead-lettered it; its error text is meta.Error.
		History:        m.dlq.history(deadletter.Attempt{Receive: rec.ReceiveCount, At: now, Class: c.Reason.Class(), ErrorCode: c.Code}),
		SourceQueueARN: p.sourceARN,
		MessageID:      rec.MessageID(),
		SentAt:         rec.SentAt(),
		DeadLetteredAt: now,
		WorkerVersion:  p.version,
		MessageGroupID: rec.GroupID,
		IdempotencyKey: st.key,
		InputSHA256:    sha256Hex(rec.m.Body()),
		Effect:         effectState(st),
		RedriveCount:   st.redriveCount,
	}
	if first := rec.FirstReceivedAt(); rec.ReceiveCount > 1 && !first.IsZero() {
		meta.FirstFailureAt = first
	}
	if meta.SourceQueueARN == "" {
		meta.SourceQueueARN = rec.EventSourceARN()
	}
	if st.described {
		t := &st.fields
		meta.TaskID, meta.RunID, meta.Tenant, meta.Tool, meta.ToolVersion = t.TaskID, t.RunID, t.Tenant, t.Tool, t.ToolVersion
		meta.SchemaVersion, meta.TraceID = t.SchemaVersion, t.TraceID
		if meta.IdempotencyKey == "" {
			meta.IdempotencyKey = t.IdempotencyKey
		}
	}
	if meta.Tenant == "" {
		meta.Tenant = st.tenant // the scope of the key, when Describe named none
	}
	p.enqueue(ctx, rec, &meta, c.Code, cause, m)
	return resultPending
}

// fit encodes the dead letter so that it fits the DLQ's message size
// (deadletter.FitDeadLetter: an oversized or unencodable metadata is never
// a reason to retry), and keeps what it had to give up as a claim check in
// the evidence bucket. A claim check that cannot be stored does not hold
// the dead letter back: it is sent without the pointer, and the loss logged.
// The one error is a body that leaves no room for any dead letter.
func (p *Processor) fit(ctx context.Context, rec Record, recAttrs []deadletter.NamedAttribute, meta deadletter.Meta) (map[string]deadletter.Attribute, error) {
	original := attributeMap(recAttrs)
	var key, ref string
	if p.evidence != nil {
		key = p.pipeline + "/evidence/" + meta.DeadLetteredAt.Format(time.DateOnly) + "/" + rec.MessageID() + ".json"
		ref = "s3://" + p.evidenceBucket + "/" + key
	}
	attrs, ev, err := deadletter.FitDeadLetter(meta, original, len(rec.m.Body()), p.maxMessage, ref)
	if err != nil || ev == nil {
		return attrs, err
	}
	reduced := make([]string, len(ev.Reduced))
	for i, r := range ev.Reduced {
		reduced[i] = string(r)
	}
	if ref != "" {
		perr := p.putEvidence(ctx, key, ev)
		if perr == nil {
			p.logFailure(ctx, slog.LevelWarn, "dead letter reduced to fit; the rest kept as a claim check", rec, meta.Reason,
				fmt.Errorf("gave up %s; evidence at %s", strings.Join(reduced, ", "), ref))
			return attrs, nil
		}
		p.logFailure(ctx, slog.LevelError, "claim check could not be stored; the dead letter is sent without it", rec, meta.Reason, perr)
		if attrs, _, err = deadletter.FitDeadLetter(meta, original, len(rec.m.Body()), p.maxMessage, ""); err != nil {
			return nil, err
		}
	}
	names := make([]string, 0, len(ev.Attributes))
	for name := range ev.Attributes {
		if _, kept := attrs[name]; !kept {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	p.logFailure(ctx, slog.LevelWarn, "dead letter reduced to fit; no evidence store, what was given up is lost", rec, meta.Reason,
		fmt.Errorf("gave up %s; attributes not on the dead letter: %s", strings.Join(reduced, ", "), strings.Join(names, ", ")))
	return attrs, nil
}

// putEvidence stores a claim check; a client that panics fails the put.
func (p *Processor) putEvidence(ctx context.Context, key string, ev *deadletter.Evidence) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("claim check put panicked: %v", v)
		}
	}()
	data, err := deadletter.MarshalEvidence(ev)
	if err != nil {
		return err
	}
	_, err = p.evidence.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(p.evidenceBucket), Key: aws.String(key), Body: bytes.NewReader(data),
		ContentType: aws.String("application/json"), ContentLength: aws.Int64(int64(len(data))),
	})
	return err
}

func effectState(st *recordState) deadletter.EffectState {
	switch {
	case st.effectStarted:
		return deadletter.EffectUnknown
	case st.key == "" && !st.described:
		return ""
	case st.mutates:
		return deadletter.EffectNone
	default:
		return deadletter.EffectReadOnly
	}
}

// DeduplicationID is the MessageDeduplicationId of the dead letter of a FIFO
// message: "dlq-" and the original message id.
func DeduplicationID(messageID string) string { return "dlq-" + textutil.Truncate(messageID, 120) }

// attributeMap is a dead letter's original attributes as a map, nil when
// there are none (the general path of a dead letter only: see enqueue).
func attributeMap(attrs []deadletter.NamedAttribute) map[string]deadletter.Attribute {
	if len(attrs) == 0 {
		return nil
	}
	out := make(map[string]deadletter.Attribute, len(attrs))
	for _, a := range attrs {
		out[a.Name] = a.Attribute
	}
	return out
}
