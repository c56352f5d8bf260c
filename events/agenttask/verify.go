package agenttask

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Verdict is what a verifier found out about a mutating call whose effect
// is unknown (the call started and left no receipt).
type Verdict string

const (
	// VerdictConfirmed means the call took effect; the external system shows it
	// (Verification.Receipt is its id of the effect). Reconciled, the key is
	// done and the task never runs again.
	VerdictConfirmed Verdict = "confirmed"
	// VerdictNoEffect means the call reached the external system and nothing
	// took effect. Reconciled, the task may be redriven and runs afresh.
	VerdictNoEffect Verdict = "no_effect"
	// VerdictUnknown means the check could not tell (no record either way, the
	// system unreachable, a record that does not match the task). Nothing
	// is reconciled: the owner checks by hand.
	VerdictUnknown Verdict = "unknown"
)

// Verification is a verifier's answer.
type Verification struct {
	Verdict Verdict
	// Receipt is the external system's id of the effect: required with
	// VerdictConfirmed (it becomes the key's receipt), empty otherwise.
	Receipt string
	// Evidence says, in words, what was checked and what it showed ("mail
	// provider log: 1 message for the key, id in receipt"). It is kept in
	// the audit record of the reconciliation, redacted and cut to 512
	// characters: name systems and counts, never a prompt, an address or a
	// secret. A definite verdict without evidence is not applied.
	Evidence string
}

// Check says what is wrong with v for a reconciliation, or nil: a known
// verdict, a receipt with VerdictConfirmed only, and evidence with a
// definite verdict.
func (v Verification) Check() error {
	switch v.Verdict {
	case VerdictConfirmed:
		if strings.TrimSpace(v.Receipt) == "" {
			return fmt.Errorf("verdict %s without the effect's receipt", v.Verdict)
		}
	case VerdictNoEffect:
		if v.Receipt != "" {
			return fmt.Errorf("verdict %s with a receipt", v.Verdict)
		}
	case VerdictUnknown:
		return nil
	default:
		return fmt.Errorf("unknown verdict %q (want %s, %s or %s)", v.Verdict, VerdictConfirmed, VerdictNoEffect, VerdictUnknown)
	}
	if strings.TrimSpace(v.Evidence) == "" {
		return fmt.Errorf("verdict %s without evidence", v.Verdict)
	}
	return nil
}

// Call is a mutating call whose effect is unknown, as the dead letter and
// the idempotency ledger keep it: what a verifier checks.
type Call struct {
	// Key is the idempotency key: what a tool should hand the external
	// system with the call (an idempotency key, a request or message id),
	// and so what a verifier looks the effect up by.
	Key string
	// Task is the task as the dead letter keeps it (Args exactly as they
	// stand in its body).
	Task Task
	// StartedBy is what the ledger keeps of the call instead of a receipt
	// (an unknown effect has none): the delivery that claimed the key and
	// started the call (its SQS message id); empty when the ledger does
	// not say.
	StartedBy string
	// Before is when the ledger last changed the key (most often, when the
	// task was dead-lettered): the call started before it, which bounds a
	// search of the external system's log.
	Before time.Time
	// ArgsDigest is the digest of the args the key was begun with, as the
	// ledger keeps it (ArgsDigest; empty for an entry written without one).
	// Verify checks it against Task.Args before it asks a verifier.
	ArgsDigest string
}

// Verifier checks, in the system a mutating tool changes, whether a call
// took effect, and changes nothing there. Register it on the tool
// (Tool.Verify); `agentdlq ledger verify` and redrive's Verify run it over
// the effect_unknown dead letters and reconcile the definite answers. An
// error is read as VerdictUnknown with the error as evidence; so is a
// Verification that fails Check. It must honour ctx (it is given a
// deadline) and be safe for concurrent use.
type Verifier func(ctx context.Context, c Call) (Verification, error)
