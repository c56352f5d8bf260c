package deadletter

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Attribute names the worker stamps on a dead letter.
const (
	AttrReason = "dlq_reason"
	AttrMeta   = "dlq_meta"
	// AttrPrefix marks every attribute agentdlq owns; a redrive removes them.
	AttrPrefix = "dlq_"
)

// SQS allows at most 10 message attributes. A dead letter keeps at most
// MaxKeptAttributes of the original ones beside dlq_reason and dlq_meta; the
// rest are folded into dlq_meta and restored on redrive.
const (
	MaxAttributes     = 10
	MaxKeptAttributes = MaxAttributes - 2
	// MetaVersion is the version of the dlq_meta document this code writes.
	MetaVersion = 1
	// MaxMetaBytes bounds the encoded dlq_meta. Larger metadata is refused by
	// the encoder (history is dropped first) and reported by the decoder.
	MaxMetaBytes = 16 * 1024
	// MaxErrorRunes bounds the redacted error text in the metadata.
	MaxErrorRunes = 256
	// MaxHistory bounds the attempt history kept in the metadata.
	MaxHistory = 10
)

// Attribute is an SQS message attribute, independent of any SDK. DataType is
// "String", "Number" or "Binary", optionally with a custom suffix
// ("String.trace"); String and Number carry StringValue, Binary BinaryValue.
type Attribute struct {
	DataType    string `json:"type"`
	StringValue string `json:"s,omitempty"`
	BinaryValue []byte `json:"b,omitempty"`
}

// EffectState says what is known of a task's external effect.
type EffectState string

// The effect states.
const (
	EffectNone     EffectState = "none"      // no mutating call started
	EffectUnknown  EffectState = "unknown"   // a mutating call started, outcome not known
	EffectReadOnly EffectState = "read_only" // the tool does not mutate the outside world
)

// TaskFields is what dlq_meta says of the task a message carried, for
// triage, redrive and logs; a worker that decoded the body names them
// (batch.Record.Describe). No prompt, no argument, no result.
type TaskFields struct {
	TaskID         string
	RunID          string
	Tenant         string
	Tool           string
	ToolVersion    string
	SchemaVersion  int
	IdempotencyKey string
	TraceID        string
}

// Attempt is one failed attempt in a dead letter's history.
type Attempt struct {
	Receive   int       `json:"n"`
	At        time.Time `json:"at"`
	Class     Class     `json:"class"`
	ErrorCode string    `json:"code,omitempty"`
	Error     string    `json:"error,omitempty"` // redacted
}

// Meta is the dlq_meta document: why a message was dead-lettered and what it
// was, without its prompt, secrets or tool results. Encode it with
// EncodeDeadLetter; read it with DecodeDeadLetter.
type Meta struct {
	Version    int        `json:"v"`
	Class      Class      `json:"class"`
	Reason     Reason     `json:"reason"`
	NextAction NextAction `json:"next_action"`
	// Attempts is the number of receives that failed (the receive count when dead-lettered).
	Attempts       int       `json:"attempts"`
	FirstFailureAt time.Time `json:"first_failure_at,omitzero"`
	LastFailureAt  time.Time `json:"last_failure_at,omitzero"`
	ErrorCode      string    `json:"error_code,omitempty"`
	// Error is redacted and at most MaxErrorRunes long.
	Error   string    `json:"error,omitempty"`
	History []Attempt `json:"history,omitempty"`

	SourceQueueARN string    `json:"source_queue_arn,omitempty"`
	MessageID      string    `json:"message_id,omitempty"`
	SentAt         time.Time `json:"sent_at,omitzero"` // the original SentTimestamp
	DeadLetteredAt time.Time `json:"dead_lettered_at"`
	WorkerVersion  string    `json:"worker_version,omitempty"`
	// MessageGroupID is set for FIFO queues.
	MessageGroupID string `json:"message_group_id,omitempty"`

	TaskID         string      `json:"task_id,omitempty"`
	RunID          string      `json:"run_id,omitempty"`
	Tenant         string      `json:"tenant,omitempty"`
	Tool           string      `json:"tool,omitempty"`
	ToolVersion    string      `json:"tool_version,omitempty"`
	SchemaVersion  int         `json:"schema_version,omitempty"`
	IdempotencyKey string      `json:"idempotency_key,omitempty"`
	TraceID        string      `json:"trace_id,omitempty"`
	InputSHA256    string      `json:"input_sha256,omitempty"` // of the whole original body
	Effect         EffectState `json:"effect,omitempty"`
	// RedriveCount is the ledger's redrive count of the key when dead-lettered.
	RedriveCount int `json:"redrive_count,omitempty"`

	// Folded holds original attributes that did not fit beside dlq_reason and
	// dlq_meta (or that used a reserved dlq_ name); redrive restores them.
	Folded map[string]Attribute `json:"folded,omitempty"`

	// Reduced lists what FitDeadLetter gave up so that the dead letter fits
	// SQS's message size (Reduction values, in the order given up).
	Reduced []Reduction `json:"reduced,omitempty"`
	// Evidence points to the claim check that holds what was given up (the
	// whole metadata and every original attribute), such as
	// s3://bucket/pipeline/evidence/2026-11-29/<message id>.json; empty
	// when nothing was given up or there was nowhere to keep it.
	Evidence string `json:"evidence,omitempty"`
}

// Errors the codec returns; test with errors.Is.
var (
	ErrMetaInvalid  = errors.New("dlq_meta is not valid JSON metadata")
	ErrMetaVersion  = errors.New("dlq_meta version is not supported")
	ErrMetaTooLarge = errors.New("dlq_meta is too large")
	ErrMetaMismatch = errors.New("dlq_reason and dlq_meta disagree")
)

// EncodeDeadLetter returns the attributes of the dead letter of a message with
// the original attributes: at most MaxKeptAttributes originals (by name order),
// dlq_reason, and dlq_meta holding m with the rest folded in. The error text
// is redacted and truncated here, whatever the caller passed. original is not
// modified.
func EncodeDeadLetter(m Meta, original map[string]Attribute) (map[string]Attribute, error) {
	return encodeSized(m, original, 0, math.MaxInt)
}

// AppendMeta appends to dst the dlq_meta document that EncodeDeadLetter
// writes for m, m.Folded holding the original attributes it folds (none
// when KeepsAll; otherwise all but the first MaxKeptAttributes names, in
// name order, without the dlq_ prefix): the same bytes, without the
// attribute maps, so that a caller that sends many dead letters can encode
// them into a buffer it reuses.
// It completes m as EncodeDeadLetter does (version, class, next action),
// redacts and truncates m.Error and the history's texts in place (the
// caller can log m.Error afterwards without redacting it again; a history
// whose texts redaction changes is copied first), bounds the history, and
// drops it when the document would exceed MaxMetaBytes. The error wraps
// ErrMetaTooLarge, or says that the reason is unknown or a time cannot be
// written; dst is then returned unchanged.
func AppendMeta(dst []byte, m *Meta) ([]byte, error) {
	if !m.Reason.Valid() {
		return dst, fmt.Errorf("encode dead letter: unknown reason %q", m.Reason)
	}
	normalize(m)
	n := len(dst)
	data, err := encodeMeta(dst, m)
	if err != nil {
		return dst[:n], err
	}
	return data, nil
}

// KeepsAll reports whether EncodeDeadLetter keeps every original attribute
// as it is: at most MaxKeptAttributes of them, none with a reserved dlq_
// name. A dead letter of such a message carries the attributes, dlq_reason
// and the document of AppendMeta.
func KeepsAll[V any](original map[string]V) bool {
	if len(original) > MaxKeptAttributes {
		return false
	}
	for name := range original {
		if strings.HasPrefix(name, AttrPrefix) {
			return false
		}
	}
	return true
}

// NamedAttribute is one original message attribute with its name, for a
// caller that holds a message's attributes in a slice rather than a map
// (see FoldNamed and LetterSize).
type NamedAttribute struct {
	Name string
	Attribute
}

// Keeps is the fold rule of EncodeDeadLetter for one original attribute,
// the names taken in order: the attribute name is kept on the dead letter
// when fewer than MaxKeptAttributes were kept before it and it has no
// reserved dlq_ prefix; otherwise it is folded into dlq_meta. A caller that
// builds dead letters without the maps (see AppendMeta) folds with it.
func Keeps(name string, keptBefore int) bool {
	return keptBefore < MaxKeptAttributes && !strings.HasPrefix(name, AttrPrefix)
}

// normalize completes m for encoding: version, class and next action,
// the error texts redacted and truncated, the history bounded.
func normalize(m *Meta) {
	m.Version = MetaVersion
	if m.Class == "" {
		m.Class = m.Reason.Class()
	}
	if m.NextAction == "" {
		m.NextAction = m.Reason.NextAction()
	}
	m.Error = Redact(m.Error, MaxErrorRunes)
	if len(m.History) > MaxHistory {
		m.History = m.History[len(m.History)-MaxHistory:]
	}
	// Copied on the first error text that redaction changes, so that the
	// caller's history is not redacted in place; a history whose texts are
	// already clean (the worker's: one attempt, no text) is not copied.
	copied := false
	for i := range m.History {
		e := Redact(m.History[i].Error, MaxErrorRunes/2)
		if e == m.History[i].Error {
			continue
		}
		if !copied {
			m.History, copied = slices.Clone(m.History), true
		}
		m.History[i].Error = e
	}
}

// encodeMeta appends the document of the normalized m to dst: without its
// history when the whole would exceed MaxMetaBytes (m.History is then nil),
// and an error wrapping ErrMetaTooLarge when even that does.
func encodeMeta(dst []byte, m *Meta) ([]byte, error) {
	n := len(dst)
	data, err := appendMeta(dst, m)
	if err == nil && len(data)-n > MaxMetaBytes && len(m.History) > 0 {
		m.History = nil // the history is the first thing to give up
		data, err = appendMeta(data[:n], m)
	}
	if err != nil {
		return nil, fmt.Errorf("encode dead letter: %w", err)
	}
	if len(data)-n > MaxMetaBytes {
		return nil, fmt.Errorf("encode dead letter: %w: %d bytes (max %d; folded attributes are too big)", ErrMetaTooLarge, len(data)-n, MaxMetaBytes)
	}
	return data, nil
}

// DecodeDeadLetter splits a dead letter's attributes into its metadata and the
// message's original attributes (dlq_* removed, folded ones restored). A dead
// letter without dlq_meta returns a nil Meta and no error: the worker never
// wrote it (triage infers its reason). Metadata that cannot be read returns
// the attributes without dlq_* and an error wrapping ErrMetaInvalid,
// ErrMetaVersion, ErrMetaTooLarge or ErrMetaMismatch; attrs is not modified.
func DecodeDeadLetter(attrs map[string]Attribute) (*Meta, map[string]Attribute, error) {
	original := make(map[string]Attribute, len(attrs))
	for name, a := range attrs {
		if !strings.HasPrefix(name, AttrPrefix) {
			original[name] = a
		}
	}
	raw, ok := attrs[AttrMeta]
	if !ok {
		if r, ok := attrs[AttrReason]; ok {
			return nil, original, fmt.Errorf("%w: dlq_reason %q without dlq_meta", ErrMetaInvalid, Redact(r.StringValue, maxReasonRunes))
		}
		return nil, original, nil
	}
	m, err := ParseMeta([]byte(raw.StringValue))
	if err != nil {
		return nil, original, err
	}
	// Folded attributes are restored even when the reasons disagree: the
	// message's own attributes are never lost.
	for name, a := range m.Folded {
		original[name] = a
	}
	if r, ok := attrs[AttrReason]; ok && Reason(r.StringValue) != m.Reason {
		return m, original, fmt.Errorf("%w: dlq_reason %q, dlq_meta reason %q", ErrMetaMismatch, Redact(r.StringValue, maxReasonRunes), m.Reason)
	}
	return m, original, nil
}

// maxReasonRunes bounds a reason that is not one, as an error quotes it
// (redacted: anyone may have written it).
const maxReasonRunes = 64

// ParseMeta decodes and checks one dlq_meta document.
func ParseMeta(data []byte) (*Meta, error) {
	if len(data) > MaxMetaBytes {
		return nil, fmt.Errorf("%w: %d bytes (max %d)", ErrMetaTooLarge, len(data), MaxMetaBytes)
	}
	var m Meta
	err := json.Unmarshal(data, &m)
	if err != nil || m.Version != MetaVersion {
		// Another version may not fit this struct: read the version alone
		// to say which failure it is.
		var probe struct {
			Version *int `json:"v"`
		}
		switch perr := json.Unmarshal(data, &probe); {
		case perr != nil:
			return nil, fmt.Errorf("%w: %v", ErrMetaInvalid, perr)
		case probe.Version == nil:
			return nil, fmt.Errorf("%w: no version field", ErrMetaInvalid)
		case *probe.Version != MetaVersion:
			return nil, fmt.Errorf("%w: v%d (this build reads v%d)", ErrMetaVersion, *probe.Version, MetaVersion)
		default:
			return nil, fmt.Errorf("%w: %v", ErrMetaInvalid, err)
		}
	}
	if !m.Reason.Valid() {
		return nil, fmt.Errorf("%w: unknown reason %q", ErrMetaInvalid, Redact(string(m.Reason), maxReasonRunes))
	}
	// The texts are redacted again by this build's rules: a letter written
	// before them, or a dlq_meta a producer set itself, holds what they catch.
	// The worker's own texts are already redacted and come out unchanged.
	m.Error = Redact(m.Error, MaxErrorRunes)
	for i := range m.History {
		m.History[i].Error = Redact(m.History[i].Error, MaxErrorRunes/2)
	}
	return &m, nil
}
