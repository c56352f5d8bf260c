package triage

import (
	"strings"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/triage/dlq"
)

// Senders are the principals whose dead letters carry evidence: the SenderId
// values SQS reports for the worker (and the redrive role), each an IAM
// unique id — a role's AROA… id matches every session of the role
// ("AROA…:session") — or an exact SenderId. The construct tags each DLQ
// with them (pipeline.TagSenders, read by pipeline.SendersOfTag into
// pipeline.Queues.Senders).
//
// On a shared platform any producer can put dlq_reason and dlq_meta
// attributes on a task: the broker then moves the task, attributes and all,
// after maxReceiveCount receives. So triage takes those attributes as the
// worker's word only on a letter that SQS did not move
// (no DeadLetterQueueSourceArn) and, when Senders is set, that one of them
// sent. The DLQ's policy (infra/stack) denies sqs:SendMessage to every other
// principal; Senders checks it again where the policy is not the construct's.
type Senders []string

// untrustedSignature is the error signature of a letter whose dead-letter
// attributes were not taken as evidence: one group for all of them.
const untrustedSignature = "dead-letter attributes not written by the worker"

// sysDLQSource and sysSenderID are the system attributes trust reads.
const (
	sysDLQSource = "DeadLetterQueueSourceArn"
	sysSenderID  = "SenderId"
)

// Trusts reports whether senderID is one of s: equal to an entry, or a
// session of a role whose unique id is the entry ("AROA…:session").
func (s Senders) Trusts(senderID string) bool {
	for _, id := range s {
		if id == "" {
			continue
		}
		if senderID == id || strings.HasPrefix(senderID, id+":") {
			return true
		}
	}
	return false
}

// distrust says why m's dead-letter attributes are not evidence, or "" when
// they are (or m has none).
func (s Senders) distrust(m dlq.Message) string {
	_, hasReason := m.Attributes[deadletter.AttrReason]
	_, hasMeta := m.Attributes[deadletter.AttrMeta]
	if !hasReason && !hasMeta {
		return ""
	}
	if src := m.System[sysDLQSource]; src != "" {
		return "the broker moved it here from " + src + ": its dlq_reason/dlq_meta came with the task, not from the worker"
	}
	if len(s) > 0 && !s.Trusts(m.System[sysSenderID]) {
		sender := m.System[sysSenderID]
		if sender == "" {
			sender = "an unknown sender"
		}
		return "sent by " + sender + ", not by the worker: its dlq_reason/dlq_meta are not evidence"
	}
	return ""
}
