package triage

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"

	"github.com/agentdlq/agentdlq/events/deadletter"
)

// maxCopySetsListed bounds the copy sets a report lists (Report.Copies);
// the counts stay exact.
const maxCopySetsListed = 1000

// maxCopyIDsInAttention bounds the original message ids the "Attention"
// line about copies names.
const maxCopyIDsInAttention = 5

// CopySet is one dead letter that the DLQ holds more than once: the
// worker's SendMessageBatch reached SQS, its response was lost, and the
// worker (or its SDK's retry) sent the same dead letter again. Copies are
// letters with readable dlq_meta naming the same original message id
// (dlq_meta's message_id), the same input digest (dlq_meta's
// input_sha256) and a body of the same SHA-256. The report counts the
// dead letter once: MessageID is the copy it counts (the earliest
// SentTimestamp, then the smallest message id), CopyMessageIDs the others,
// which no total, group, expiry, metric or eval candidate counts.
// DifferingMessageIDs are those of them whose message attributes
// (dlq_meta, dlq_reason, the kept originals) are not byte for byte the
// counted one's: the message was dead-lettered again on another receive
// (its own attempts, times or error), not sent twice. A selective redrive
// deletes only the identical copies; it moves these as letters of their
// own.
type CopySet struct {
	OriginalMessageID   string   `json:"original_message_id"`
	MessageID           string   `json:"message_id"`
	CopyMessageIDs      []string `json:"copy_message_ids"`
	DifferingMessageIDs []string `json:"differing_message_ids,omitempty"`
}

// copyKey is what makes two dead letters copies of one: the original
// message id, the input digest dlq_meta names, and the body's SHA-256.
// Letters without readable metadata naming their original message have
// none ("", false): they are never copies (the broker's own move of a
// message makes one letter, never two).
func copyKey(t *Tagged) (string, bool) {
	if t.Meta == nil || t.MetaErr != nil || t.Meta.MessageID == "" {
		return "", false
	}
	sum := sha256.Sum256([]byte(t.Body))
	return t.Meta.MessageID + "\x00" + t.Meta.InputSHA256 + "\x00" + hex.EncodeToString(sum[:]), true
}

// findCopies returns, for each of tagged, whether it is a copy that is not
// counted, and the copy sets sorted by original message id. The body is
// hashed only for letters whose original message id is seen more than
// once.
func findCopies(tagged []Tagged) ([]bool, []CopySet) {
	// The first letter of each original message id, and the ids seen more
	// than once with all their letters (few: no slice per letter).
	first := make(map[string]int, len(tagged))
	var byOrig map[string][]int
	for i := range tagged {
		t := &tagged[i]
		if t.Meta == nil || t.MetaErr != nil || t.Meta.MessageID == "" {
			continue
		}
		id := t.Meta.MessageID
		j, seen := first[id]
		if !seen {
			first[id] = i
			continue
		}
		if byOrig == nil {
			byOrig = map[string][]int{}
		}
		if byOrig[id] == nil {
			byOrig[id] = []int{j}
		}
		byOrig[id] = append(byOrig[id], i)
	}
	var isCopy []bool
	var sets []CopySet
	for _, idx := range byOrig {
		byKey := map[string][]int{}
		var keys []string
		for _, i := range idx {
			k, _ := copyKey(&tagged[i])
			if byKey[k] == nil {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], i)
		}
		for _, k := range keys {
			members := byKey[k]
			if len(members) < 2 {
				continue
			}
			sort.Slice(members, func(a, b int) bool {
				x, y := &tagged[members[a]], &tagged[members[b]]
				if !x.SentTimestamp.Equal(y.SentTimestamp) {
					return x.SentTimestamp.Before(y.SentTimestamp)
				}
				return x.MessageID < y.MessageID
			})
			if isCopy == nil {
				isCopy = make([]bool, len(tagged))
			}
			first := &tagged[members[0]]
			set := CopySet{OriginalMessageID: first.Meta.MessageID, MessageID: first.MessageID, CopyMessageIDs: make([]string, 0, len(members)-1)}
			for _, i := range members[1:] {
				isCopy[i] = true
				set.CopyMessageIDs = append(set.CopyMessageIDs, tagged[i].MessageID)
				if !sameAttributes(first.Attributes, tagged[i].Attributes) || first.MessageGroupID != tagged[i].MessageGroupID {
					set.DifferingMessageIDs = append(set.DifferingMessageIDs, tagged[i].MessageID)
				}
			}
			sets = append(sets, set)
		}
	}
	sort.Slice(sets, func(a, b int) bool {
		if sets[a].OriginalMessageID != sets[b].OriginalMessageID {
			return sets[a].OriginalMessageID < sets[b].OriginalMessageID
		}
		return sets[a].MessageID < sets[b].MessageID
	})
	if isCopy == nil {
		isCopy = make([]bool, len(tagged))
	}
	return isCopy, sets
}

// sameAttributes reports whether two letters' message attributes are the
// same, byte for byte.
func sameAttributes(a, b map[string]deadletter.Attribute) bool {
	if len(a) != len(b) {
		return false
	}
	for name, x := range a {
		y, ok := b[name]
		if !ok || x.DataType != y.DataType || x.StringValue != y.StringValue || !bytes.Equal(x.BinaryValue, y.BinaryValue) {
			return false
		}
	}
	return true
}

// copiesAttention is the "Attention" line about copies ("" without any).
func copiesAttention(r *Report) string {
	if r.Totals.Copies == 0 {
		return ""
	}
	n := r.Totals.CopiedLetters
	ids := make([]string, 0, min(n, maxCopyIDsInAttention))
	for _, s := range r.Copies {
		if len(ids) == maxCopyIDsInAttention {
			break
		}
		ids = append(ids, s.OriginalMessageID)
	}
	more := ""
	if n > len(ids) {
		more = ", …"
	}
	differ := ""
	if d := r.Totals.CopiesDiffering; d > 0 {
		differ = "; " + itoa(d) + " of the copies differ in their dlq_meta or attributes (dead-lettered again on another receive): redrive moves those as letters of their own"
	}
	return plural(n, "dead letter") + " held more than once (" + plural(r.Totals.Copies, "extra copy") +
		": a dead-letter send retried after SQS took it), each counted once; redrive select moves one and deletes the identical others" + differ + " (original message ids: " +
		strings.Join(ids, ", ") + more + ")"
}
