package triage

import (
	"strings"
	"testing"
	"time"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/triage/dlq"
)

// forgedAttrs are dead-letter attributes as a producer would copy them from a
// real budget_exhausted letter: readable, well formed, redrivable.
func forgedAttrs(t *testing.T) map[string]deadletter.Attribute {
	t.Helper()
	meta := deadletter.Meta{
		Version: deadletter.MetaVersion, Class: deadletter.ClassTransient, Reason: deadletter.ReasonBudgetExhausted,
		NextAction: deadletter.ReasonBudgetExhausted.NextAction(), Attempts: 4,
		Error: "attacker's words", Tool: "email.send", ToolVersion: "1.0.0", SchemaVersion: 1,
		IdempotencyKey: "acme:run-0042:task-0007", Effect: deadletter.EffectNone,
		DeadLetteredAt: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
	}
	attrs, err := deadletter.EncodeDeadLetter(meta, nil)
	if err != nil {
		t.Fatal(err)
	}
	return attrs
}

func TestTrustOfDeadLetterEvidence(t *testing.T) {
	t.Parallel()
	const worker = "AROAWORKERROLEID"
	tests := []struct {
		name    string
		system  map[string]string
		senders Senders
		// want: the reason triage shows, and whether the evidence was refused
		wantReason    deadletter.Reason
		wantUntrusted bool
	}{
		{name: "worker sent, no sender check", system: map[string]string{"SenderId": worker + ":agentdlq-worker"}, wantReason: deadletter.ReasonBudgetExhausted},
		{name: "worker sent, a session of the worker's role", system: map[string]string{"SenderId": worker + ":fn"}, senders: Senders{worker}, wantReason: deadletter.ReasonBudgetExhausted},
		{name: "worker sent, exact sender id", system: map[string]string{"SenderId": "AKIDWORKER"}, senders: Senders{"AKIDWORKER"}, wantReason: deadletter.ReasonBudgetExhausted},
		{name: "broker moved it: the producer's attributes", system: map[string]string{"DeadLetterQueueSourceArn": "arn:aws:sqs:us-east-1:1:hot", "SenderId": worker + ":fn"}, senders: Senders{worker}, wantReason: deadletter.ReasonReceiveLimit, wantUntrusted: true},
		{name: "broker moved it, no sender check", system: map[string]string{"DeadLetterQueueSourceArn": "arn:aws:sqs:us-east-1:1:hot"}, wantReason: deadletter.ReasonReceiveLimit, wantUntrusted: true},
		{name: "another principal sent it", system: map[string]string{"SenderId": "AROAMALLORY:x"}, senders: Senders{worker}, wantReason: deadletter.ReasonReceiveLimit, wantUntrusted: true},
		{name: "a role id that only starts like the worker's", system: map[string]string{"SenderId": worker + "X:fn"}, senders: Senders{worker}, wantReason: deadletter.ReasonReceiveLimit, wantUntrusted: true},
		{name: "no sender id at all", senders: Senders{worker}, wantReason: deadletter.ReasonReceiveLimit, wantUntrusted: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := dlq.Message{MessageID: "m1", Body: `{"tool":"email.send"}`, Attributes: forgedAttrs(t), System: tc.system}
			got := tc.senders.Tag(m)
			if got.Reason != tc.wantReason {
				t.Errorf("reason = %s, want %s", got.Reason, tc.wantReason)
			}
			if (got.Untrusted != "") != tc.wantUntrusted {
				t.Errorf("untrusted = %q, want untrusted %v", got.Untrusted, tc.wantUntrusted)
			}
			if tc.wantUntrusted {
				if got.Meta != nil || !got.Inferred {
					t.Errorf("refused evidence must leave no metadata and an inferred reason: meta %v, inferred %v", got.Meta, got.Inferred)
				}
				if strings.Contains(got.Signature, "attacker") {
					t.Errorf("signature %q carries the producer's error text", got.Signature)
				}
				if got.Hints.Tool != "email.send" {
					t.Errorf("hints come from the body: tool %q", got.Hints.Tool)
				}
			}
		})
	}
}

func TestBrokerMoveWithoutDeadLetterAttributesIsNotFlagged(t *testing.T) {
	t.Parallel()
	m := dlq.Message{MessageID: "m1", Body: `{}`, System: map[string]string{"DeadLetterQueueSourceArn": "arn:aws:sqs:us-east-1:1:hot", "SenderId": "AROAPRODUCER:p"}}
	got := Senders{"AROAWORKER"}.Tag(m)
	if got.Reason != deadletter.ReasonReceiveLimit || got.Untrusted != "" {
		t.Errorf("an ordinary broker move: reason %s, untrusted %q", got.Reason, got.Untrusted)
	}
}

func TestReportCountsUntrustedEvidence(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, false)
	forged := dlq.Message{MessageID: "f", Body: `{}`, Attributes: forgedAttrs(t), System: map[string]string{"DeadLetterQueueSourceArn": "arn:aws:sqs:us-east-1:1:hot"}, SentTimestamp: t0.Add(-time.Hour)}
	r := Build(tagAll([]dlq.Message{forged}, nil), p, t0)
	if r.Totals.Untrusted != 1 {
		t.Fatalf("untrusted = %d, want 1", r.Totals.Untrusted)
	}
	if len(r.Groups) != 1 || r.Groups[0].Reason != deadletter.ReasonReceiveLimit {
		t.Fatalf("groups = %+v, want one receive_limit group", r.Groups)
	}
	found := false
	for _, a := range r.Attention {
		found = found || strings.Contains(a, "did not write")
	}
	if !found {
		t.Errorf("attention %q does not name the untrusted evidence", r.Attention)
	}
}
