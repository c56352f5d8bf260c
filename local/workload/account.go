package workload

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/pipeline"
)

// Sent is a task as it was sent: its message id on the hot queue.
type Sent struct {
	MessageID string
	Task      Task
}

// DeadLetter is one message found in the DLQ: the hot queue's message id it
// was (the worker's dlq_meta message_id, or the message's own id when the
// broker moved it) and its reason (written or inferred).
type DeadLetter struct {
	OriginalMessageID string
	Reason            deadletter.Reason
}

// Accounting says where every sent message ended up. Sent = Processed +
// DeadLettered + InFlight + Lost always holds; Lost must be 0.
type Accounting struct {
	Sent      int `json:"sent"`
	Processed int `json:"processed"`
	// Duplicates counts processed messages that shared their idempotency key
	// with another sent message (one did the work, the others were no-ops).
	Duplicates   int                       `json:"duplicates"`
	DeadLettered int                       `json:"dead_lettered"`
	ByReason     map[deadletter.Reason]int `json:"dead_lettered_by_reason"`
	InFlight     int                       `json:"in_flight"`
	Lost         int                       `json:"lost"`
	// ExtraDeadLetters are DLQ messages that match no sent message, or
	// repeat one already counted (a second dead letter of the same message).
	ExtraDeadLetters int `json:"extra_dead_letters"`
	// Unexpected lists messages whose fate differs from their kind's Expect.
	Unexpected []string `json:"unexpected,omitempty"`
}

// Account computes where each sent message ended: dead-lettered when the
// DLQ holds it, processed when its idempotency key is done in the ledger,
// otherwise still on the hot queue (inFlight, the hot queue's visible,
// in-flight and delayed count) — and lost when more are unaccounted for than
// the hot queue holds.
func Account(p *pipeline.Pipeline, sent []Sent, dlq []DeadLetter, inFlight int, done func(key string) bool) Accounting {
	a := Accounting{Sent: len(sent), ByReason: map[deadletter.Reason]int{}}
	dead := make(map[string]deadletter.Reason, len(dlq))
	for _, d := range dlq {
		if _, dup := dead[d.OriginalMessageID]; dup {
			a.ExtraDeadLetters++
			continue
		}
		dead[d.OriginalMessageID] = d.Reason
	}
	keys := map[string]int{}
	for _, s := range sent {
		if s.Task.Key != "" {
			keys[s.Task.Key]++
		}
	}
	matched := 0
	unaccounted := 0
	for _, s := range sent {
		known := s.Task.Kind.Known()
		want := s.Task.Kind.Expect(p)
		if r, ok := dead[s.MessageID]; ok {
			matched++
			a.DeadLettered++
			a.ByReason[r]++
			if known && (want.Processed || want.Reason != r) {
				a.Unexpected = append(a.Unexpected, fmt.Sprintf("%s (%s): dead-lettered as %s, want %s", s.MessageID, s.Task.Kind, r, describe(want)))
			}
			continue
		}
		if s.Task.Key != "" && done(ledger.Key(p.Name, s.Task.Tenant, s.Task.Key)) {
			a.Processed++
			if keys[s.Task.Key] > 1 {
				a.Duplicates++
			}
			if known && !want.Processed && !want.Recovers {
				a.Unexpected = append(a.Unexpected, fmt.Sprintf("%s (%s): processed, want %s", s.MessageID, s.Task.Kind, describe(want)))
			}
			continue
		}
		unaccounted++
	}
	a.ExtraDeadLetters += len(dead) - matched
	a.InFlight = min(unaccounted, inFlight)
	a.Lost = unaccounted - a.InFlight
	sort.Strings(a.Unexpected)
	return a
}

func describe(e Expect) string {
	if e.Processed {
		return "processed"
	}
	return "dead-lettered as " + string(e.Reason)
}

// AddsUp reports whether every sent message is accounted for.
func (a Accounting) AddsUp() bool {
	sum := 0
	for _, n := range a.ByReason {
		sum += n
	}
	return sum == a.DeadLettered && a.Processed+a.DeadLettered+a.InFlight+a.Lost == a.Sent
}

// Line is the closing line: every message sent, where it is, and whether
// the numbers add up.
func (a Accounting) Line() string {
	reasons := make([]string, 0, len(a.ByReason))
	for r := range a.ByReason {
		reasons = append(reasons, string(r))
	}
	slices.Sort(reasons)
	parts := make([]string, 0, len(reasons))
	for _, r := range reasons {
		parts = append(parts, fmt.Sprintf("%s %d", r, a.ByReason[deadletter.Reason(r)]))
	}
	verdict := "adds up"
	if !a.AddsUp() {
		verdict = "DOES NOT ADD UP"
	}
	line := fmt.Sprintf("sent %d = processed %d (%d sharing an idempotency key) + dead-lettered %d (%s) + in flight %d + lost %d: %s",
		a.Sent, a.Processed, a.Duplicates, a.DeadLettered, strings.Join(parts, ", "), a.InFlight, a.Lost, verdict)
	if a.ExtraDeadLetters > 0 {
		line += fmt.Sprintf("; %d extra dead letters (a second dead letter of a message, or one that matches no sent message)", a.ExtraDeadLetters)
	}
	return line
}
