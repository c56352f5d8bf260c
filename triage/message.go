package triage

import (
	"encoding/json"
	"errors"
	"time"
	"unicode/utf8"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/triage/dlq"
)

// staleMetaAfter is how much later than dlq_meta's dead_lettered_at a
// message's SentTimestamp must be for the metadata to count as stale (the
// worker's send lands within seconds; the margin absorbs clock skew).
const staleMetaAfter = 5 * time.Minute

// errBodyNotUTF8 marks a body that is not valid UTF-8: it is tagged and
// counted, but not read for hints and not exported to an eval dataset.
var errBodyNotUTF8 = errors.New("body is not valid UTF-8")

// Tag gives a dead letter its reason and fingerprint. It never fails: a
// message whose metadata cannot be read keeps its dlq_reason (or is tagged
// unclassified, inferred) with MetaErr set, and the report lists it as
// unreadable.
//
//   - readable dlq_meta: its reason, tool, versions and error signature;
//   - no dlq_reason and no dlq_meta: receive_limit, inferred (the broker moved
//     it after maxReceiveCount receives: the worker never finished it);
//   - unreadable metadata (not JSON, unknown version, oversized, dlq_reason
//     without dlq_meta, dlq_reason disagreeing with dlq_meta): the dlq_reason
//     attribute's reason when it is a known one, else unclassified (inferred);
//     MetaErr set either way, and the report lists it as unreadable;
//   - metadata older than the message (SentTimestamp more than staleMetaAfter
//     after dead_lettered_at): the metadata's reason, StaleMeta set.
//
// Dead-letter attributes count as evidence only on a letter the worker sent:
// see Senders.Tag, which also checks the sender. Tag checks only what SQS
// marks on every letter the broker moved (DeadLetterQueueSourceArn).
func Tag(m dlq.Message) dlq.Tagged { return tag(m, nil, nil) }

// Tag is Tag that also trusts dlq_reason/dlq_meta only on letters whose
// SenderId is one of s (see Senders). A nil or empty s checks no sender.
func (s Senders) Tag(m dlq.Message) dlq.Tagged { return tag(m, nil, s) }

// tag is Tag with an optional memo of error signatures (the normalisation's
// regular expressions are the costly part, and a DLQ repeats its errors).
func tag(m dlq.Message, sigs map[[2]string]string, senders Senders) dlq.Tagged {
	t := dlq.Tagged{Message: m, DeadLetteredAt: m.SentTimestamp}
	if !utf8.ValidString(m.Body) {
		t.BodyErr = errBodyNotUTF8
	}
	t.Untrusted = senders.distrust(m)
	var meta *deadletter.Meta
	var err error
	if t.Untrusted == "" {
		meta, _, err = deadletter.DecodeDeadLetter(m.Attributes)
	}
	switch {
	case t.Untrusted != "":
		t.Reason, t.Inferred = deadletter.ReasonReceiveLimit, true
		t.Signature = untrustedSignature
	case err != nil:
		// The worker's dlq_reason attribute, when it names a known reason, is
		// kept even when dlq_meta cannot be read: the alarm, the operator and
		// a selective redrive by reason all go by it. Otherwise unclassified.
		t.Reason, t.Inferred, t.MetaErr = deadletter.ReasonUnclassified, true, err
		if r, ok := m.Attributes[deadletter.AttrReason]; ok && deadletter.Reason(r.StringValue).Valid() {
			t.Reason, t.Inferred = deadletter.Reason(r.StringValue), false
		}
		t.Meta = meta // set only on a mismatch
		t.Signature = "dlq_meta unreadable: " + metaProblem(err)
	case meta == nil:
		t.Reason, t.Inferred = deadletter.ReasonReceiveLimit, true
	default:
		t.Reason, t.Meta = meta.Reason, meta
		// Enqueued well after it was dead-lettered: redriven with its
		// attributes, then moved back by the broker.
		t.StaleMeta = !m.SentTimestamp.IsZero() && !meta.DeadLetteredAt.IsZero() && m.SentTimestamp.After(meta.DeadLetteredAt.Add(staleMetaAfter))
		if sigs == nil {
			t.Signature = signatureOf(meta.ErrorCode, meta.Error)
		} else {
			k := [2]string{meta.ErrorCode, meta.Error}
			sig, ok := sigs[k]
			if !ok {
				sig = signatureOf(meta.ErrorCode, meta.Error)
				if len(sigs) < maxSignatureMemo {
					sigs[k] = sig
				}
			}
			t.Signature = sig
		}
		if !meta.DeadLetteredAt.IsZero() {
			t.DeadLetteredAt = meta.DeadLetteredAt
		}
	}
	if t.Meta != nil {
		t.Hints = dlq.Hints{
			Tool: t.Meta.Tool, ToolVersion: t.Meta.ToolVersion, SchemaVersion: t.Meta.SchemaVersion,
			Tenant: t.Meta.Tenant, IdempotencyKey: t.Meta.IdempotencyKey, TaskID: t.Meta.TaskID,
		}
	}
	if t.Hints.Tool == "" && t.BodyErr == nil {
		t.Hints = bodyHints(m.Body, t.Hints)
	}
	t.Fingerprint = fingerprintOf(t.Reason, t.Hints.Tool, t.Hints.ToolVersion, t.Hints.SchemaVersion, t.Signature)
	return t
}

// metaProblem names the kind of metadata failure, without its detail (which
// may carry message-specific values), so that one kind makes one group.
func metaProblem(err error) string {
	switch {
	case errors.Is(err, deadletter.ErrMetaTooLarge):
		return "oversized"
	case errors.Is(err, deadletter.ErrMetaVersion):
		return "unknown version"
	case errors.Is(err, deadletter.ErrMetaMismatch):
		return "dlq_reason and dlq_meta disagree"
	case errors.Is(err, deadletter.ErrMetaInvalid):
		return "not valid metadata"
	default:
		return "unreadable"
	}
}

// bodyHints reads the task fields of a body that is a JSON object, keeping
// what base already holds. Fields of the wrong type are ignored.
func bodyHints(body string, base dlq.Hints) dlq.Hints {
	if len(body) == 0 || body[0] != '{' {
		return base
	}
	var raw struct {
		Tool           any `json:"tool"`
		ToolVersion    any `json:"tool_version"`
		SchemaVersion  any `json:"schema_version"`
		Tenant         any `json:"tenant"`
		IdempotencyKey any `json:"idempotency_key"`
		TaskID         any `json:"task_id"`
	}
	if json.Unmarshal([]byte(body), &raw) != nil {
		return base
	}
	str := func(dst *string, v any) {
		if s, ok := v.(string); ok && *dst == "" {
			*dst = s
		}
	}
	str(&base.Tool, raw.Tool)
	str(&base.ToolVersion, raw.ToolVersion)
	str(&base.Tenant, raw.Tenant)
	str(&base.IdempotencyKey, raw.IdempotencyKey)
	str(&base.TaskID, raw.TaskID)
	if f, ok := raw.SchemaVersion.(float64); ok && base.SchemaVersion == 0 && f == float64(int(f)) {
		base.SchemaVersion = int(f)
	}
	return base
}

// maxSignatureMemo bounds tagAll's memo of error signatures.
const maxSignatureMemo = 10000

// tagAll tags every message (as Tag does, remembering the error signatures
// it has made: a DLQ repeats its errors).
func tagAll(msgs []dlq.Message, senders Senders) []dlq.Tagged {
	out := make([]dlq.Tagged, len(msgs))
	sigs := map[[2]string]string{}
	for i, m := range msgs {
		out[i] = tag(m, sigs, senders)
	}
	return out
}
