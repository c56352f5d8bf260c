package deadletter

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentdlq/agentdlq/internal/textutil"
)

// Reduction is one thing FitDeadLetter gave up so that a dead letter fits.
type Reduction string

const (
	// ReducedHistory means the attempt history was dropped.
	ReducedHistory Reduction = "history"
	// ReducedFolded means the folded attributes (beyond the eight kept) were left out.
	ReducedFolded Reduction = "folded"
	// ReducedAttributes means the original attributes kept on the message were
	// left out too.
	ReducedAttributes Reduction = "attributes"
	// ReducedMeta means dlq_meta keeps its identity fields only (reason, class,
	// next action, attempts, message id, idempotency key, task and trace
	// ids, input hash, effect).
	ReducedMeta Reduction = "meta"
	// ReducedTimes means times outside the years 0..9999 (a producer's bad
	// SentTimestamp) were left out: JSON cannot hold them.
	ReducedTimes Reduction = "times"
)

// Evidence is what a dead letter could not carry, kept elsewhere as a claim
// check (the SQS Extended Client's pattern): the whole metadata and every
// original attribute. The body is never in it: it stays on the message,
// byte for byte.
type Evidence struct {
	// Reduced is what the dead letter gave up (its dlq_meta says the same).
	Reduced    []Reduction          `json:"reduced"`
	Meta       Meta                 `json:"meta"`
	Attributes map[string]Attribute `json:"attributes,omitempty"`
}

// Reserve is the most room a dead letter needs beside its body:
// dlq_reason and the identity dlq_meta FitDeadLetter falls back to,
// whatever its fields hold (each is bounded there). A DLQ whose
// MaximumMessageSize is at least its hot queue's plus Reserve takes the dead
// letter of every message its hot queue takes: at SQS's maximum of 1 MiB
// (1,048,576 bytes) for the DLQ, a hot queue of at most 1,032,192 bytes.
const Reserve = 16 * 1024

// maxEvidenceRef bounds the claim check's address kept in the identity
// dlq_meta; a longer one (a message id no SQS queue gives) is left out.
const maxEvidenceRef = 1024

// ErrBodyTooLarge is returned when the body alone leaves no room for dlq_reason and the
// smallest dlq_meta under the size limit; nothing can be dead-lettered.
var ErrBodyTooLarge = errors.New("message body leaves no room for the dead-letter attributes")

// MessageSize is the size SQS counts for a message: the body and each
// attribute's name, data type and value. Binary values are counted as
// their base64 text, as they travel, which is never less than SQS counts.
func MessageSize(body int, attrs map[string]Attribute) int {
	n := body
	for name, a := range attrs {
		n += AttributeSize(name, &a)
	}
	return n
}

// AttributeSize is what SQS counts of one message attribute toward the
// message's size: its name, data type and value (a binary value as base64).
func AttributeSize(name string, a *Attribute) int {
	return len(name) + len(a.DataType) + len(a.StringValue) + base64.StdEncoding.EncodedLen(len(a.BinaryValue))
}

// FitDeadLetter is EncodeDeadLetter for a message whose body is bodyBytes
// long and whose dead letter must be at most maxBytes (the DLQ's
// MaximumMessageSize): when the metadata is too large for dlq_meta, cannot
// be encoded, or the message would be too large, it gives up, in this
// order and only as far as needed, the attempt history, the folded
// attributes, the original attributes kept on the message, and all of
// dlq_meta but its identity fields. Each step is listed in Meta.Reduced.
// A failure to fit is thus never a failure to dead-letter, and the body is
// never touched.
//
// What was given up (beyond the history, whose last error is meta's own) is
// returned as Evidence, nil when nothing was, for the caller to keep
// elsewhere; evidenceRef, when not empty, is where the caller will keep it,
// and dlq_meta says so (Meta.Evidence). ErrBodyTooLarge is returned when
// even the smallest dead letter does not fit.
func FitDeadLetter(m Meta, original map[string]Attribute, bodyBytes, maxBytes int, evidenceRef string) (map[string]Attribute, *Evidence, error) {
	attrs, err := encodeSized(m, original, bodyBytes, maxBytes)
	if err == nil && attrs != nil {
		return attrs, nil, nil
	}
	if err != nil && !errors.Is(err, ErrMetaTooLarge) {
		if !m.Reason.Valid() {
			return nil, nil, err // a caller's bug, not the message's
		}
		if dropBadTimes(&m) {
			m.Reduced = append(m.Reduced, ReducedTimes)
		}
	}
	// The claim check holds the metadata as dlq_meta would have: redacted.
	full := Evidence{Meta: m, Attributes: original}
	full.Meta.Version, full.Meta.Error = MetaVersion, Redact(m.Error, MaxErrorRunes)
	full.Meta.History = slices.Clone(m.History)
	for i := range full.Meta.History {
		full.Meta.History[i].Error = Redact(full.Meta.History[i].Error, MaxErrorRunes/2)
	}
	steps := []func(){
		func() { m.History, m.Reduced = nil, append(m.Reduced, ReducedHistory) },
		func() {
			original = kept(original)
			m.Reduced, m.Evidence = append(m.Reduced, ReducedFolded), evidenceRef
		},
		func() { original, m.Reduced = nil, append(m.Reduced, ReducedAttributes) },
		func() {
			// Every field is bounded, so that the whole fits Reserve.
			ref := evidenceRef
			if len(ref) > maxEvidenceRef {
				ref = ""
			}
			m = Meta{
				Class: m.Class, Reason: m.Reason, NextAction: m.NextAction, Attempts: m.Attempts,
				MessageID: textutil.Truncate(m.MessageID, 256), DeadLetteredAt: m.DeadLetteredAt, IdempotencyKey: textutil.Truncate(m.IdempotencyKey, 256),
				TaskID: textutil.Truncate(m.TaskID, 256), TraceID: textutil.Truncate(m.TraceID, 256), InputSHA256: textutil.Truncate(m.InputSHA256, 64), Effect: EffectState(textutil.Truncate(string(m.Effect), 32)),
				Reduced: append(m.Reduced, ReducedMeta), Evidence: ref,
			}
			if dropBadTimes(&m) {
				m.Reduced = append(m.Reduced, ReducedTimes)
			}
		},
	}
	for i, step := range steps {
		step()
		attrs, err = encodeSized(m, original, bodyBytes, maxBytes)
		if err != nil && !errors.Is(err, ErrMetaTooLarge) {
			return nil, nil, fmt.Errorf("fit dead letter: %w", err)
		}
		if err == nil && attrs != nil {
			if i == 0 { // the history alone: nothing to keep elsewhere
				return attrs, nil, nil
			}
			full.Reduced = m.Reduced
			return attrs, &full, nil
		}
	}
	return nil, nil, fmt.Errorf("%w: %d bytes of body, at most %d bytes a message", ErrBodyTooLarge, bodyBytes, maxBytes)
}

// kept returns the original attributes that EncodeDeadLetter keeps on the
// message, without the ones it would fold.
func kept(original map[string]Attribute) map[string]Attribute {
	if KeepsAll(original) {
		return original
	}
	named := make([]NamedAttribute, 0, len(original))
	for name, a := range original {
		named = append(named, NamedAttribute{Name: name, Attribute: a})
	}
	keep, _ := FoldNamed(named, nil, nil)
	out := make(map[string]Attribute, len(keep))
	for _, a := range keep {
		out[a.Name] = a.Attribute
	}
	return out
}

// dropBadTimes zeroes the times JSON cannot hold and reports whether any was.
func dropBadTimes(m *Meta) bool {
	bad := func(t *time.Time) bool {
		if y := t.Year(); y < 0 || y > 9999 {
			*t = time.Time{}
			return true
		}
		return false
	}
	dropped := bad(&m.FirstFailureAt)
	dropped = bad(&m.LastFailureAt) || dropped
	dropped = bad(&m.SentAt) || dropped
	if bad(&m.DeadLetteredAt) {
		m.DeadLetteredAt, dropped = time.Unix(0, 0).UTC(), true
	}
	for i := range m.History {
		dropped = bad(&m.History[i].At) || dropped
	}
	return dropped
}

// MarshalEvidence is the JSON document of a claim check.
func MarshalEvidence(e *Evidence) ([]byte, error) { return json.Marshal(e) }
