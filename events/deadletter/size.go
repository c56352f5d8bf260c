package deadletter

import (
	"fmt"
	"slices"
	"strings"
)

// FoldNamed is EncodeDeadLetter's fold of a message's original attributes,
// for attributes held in a slice: when KeepsAll holds for them, every one
// is kept (attrs is returned as it is, in its order, and folded as it
// was); otherwise attrs is sorted by name in place, the ones Keeps (the
// first MaxKeptAttributes names without the dlq_ prefix) are appended to
// kept[:0] and returned, and the others are put in folded (cleared first,
// made when nil), which dlq_meta carries as Meta.Folded. EncodeDeadLetter
// and a sender that builds dead letters without maps (functions/batch's
// fast path, with AppendMeta) fold with it, so that both keep the same
// attributes on the message.
func FoldNamed(attrs, kept []NamedAttribute, folded map[string]Attribute) ([]NamedAttribute, map[string]Attribute) {
	if keepsAllNamed(attrs) {
		return attrs, folded
	}
	slices.SortFunc(attrs, func(a, b NamedAttribute) int { return strings.Compare(a.Name, b.Name) })
	kept = kept[:0]
	if folded == nil {
		folded = make(map[string]Attribute, len(attrs))
	}
	clear(folded)
	for _, a := range attrs {
		if Keeps(a.Name, len(kept)) {
			kept = append(kept, a)
			continue
		}
		folded[a.Name] = a.Attribute
	}
	return kept, folded
}

// keepsAllNamed is KeepsAll for attributes in a slice.
func keepsAllNamed(attrs []NamedAttribute) bool {
	if len(attrs) > MaxKeptAttributes {
		return false
	}
	for i := range attrs {
		if !Keeps(attrs[i].Name, i) {
			return false
		}
	}
	return true
}

// LetterSize is the size SQS counts for a dead letter: a body bodyBytes
// long, dlq_reason holding reason, dlq_meta holding a document metaBytes
// long, and the original attributes kept on the message (FoldNamed). It is
// MessageSize of the attributes EncodeDeadLetter returns, without building
// them: FitDeadLetter sizes each attempt with it, and so does a sender that
// builds dead letters without maps.
func LetterSize(bodyBytes int, reason Reason, metaBytes int, kept []NamedAttribute) int {
	n := bodyBytes + len(AttrReason) + len("String") + len(reason) + len(AttrMeta) + len("String") + metaBytes
	for i := range kept {
		n += AttributeSize(kept[i].Name, &kept[i].Attribute)
	}
	return n
}

// encodeSized is EncodeDeadLetter for a body bodyBytes long whose dead
// letter must be at most maxBytes (LetterSize): the attributes, or nil
// (and no error) when the dead letter would be larger.
func encodeSized(m Meta, original map[string]Attribute, bodyBytes, maxBytes int) (map[string]Attribute, error) {
	if !m.Reason.Valid() {
		return nil, fmt.Errorf("encode dead letter: unknown reason %q", m.Reason)
	}
	normalize(&m)
	var buf [MaxKeptAttributes]NamedAttribute
	kept, m, data, err := encodeLetter(m, original, buf[:0])
	if err != nil {
		return nil, err
	}
	if LetterSize(bodyBytes, m.Reason, len(data), kept) > maxBytes {
		return nil, nil
	}
	return letterAttributes(kept, m.Reason, data), nil
}

// encodeLetter is EncodeDeadLetter without the attribute map: the original
// attributes it keeps on the message (appended to keptBuf[:0]), m as it is
// encoded (completed, its folded attributes in m.Folded), and the dlq_meta
// document.
func encodeLetter(m Meta, original map[string]Attribute, keptBuf []NamedAttribute) ([]NamedAttribute, Meta, []byte, error) {
	named := keptBuf[:0]
	if !KeepsAll(original) {
		named = make([]NamedAttribute, 0, len(original))
	}
	for name, a := range original {
		named = append(named, NamedAttribute{Name: name, Attribute: a})
	}
	kept, folded := FoldNamed(named, keptBuf, nil)
	m.Folded = folded
	data, err := encodeMeta(make([]byte, 0, 768+256*len(m.History)), &m)
	return kept, m, data, err
}

// letterAttributes is the attribute map of a dead letter: the kept
// original attributes, dlq_reason and dlq_meta.
func letterAttributes(kept []NamedAttribute, reason Reason, meta []byte) map[string]Attribute {
	// Sized for what it holds: a small map (eight entries or fewer) is much
	// cheaper to make than one hinted for the SQS maximum.
	out := make(map[string]Attribute, len(kept)+2)
	for _, a := range kept {
		out[a.Name] = a.Attribute
	}
	out[AttrReason] = Attribute{DataType: "String", StringValue: string(reason)}
	out[AttrMeta] = Attribute{DataType: "String", StringValue: string(meta)}
	return out
}
