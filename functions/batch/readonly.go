package batch

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentdlq/agentdlq/ledger"
)

// settleReadOnly settles a record whose tool declared that it changes
// nothing (Record.Begin with mutates false, which claimed nothing), given
// the handler's error, and returns the error the processor acts on.
//
// On success it marks the key done in one conditional write
// (ledger.Ledger.CompleteReadOnly): a key done meanwhile (a duplicate that
// ran at the same time, or a redelivery of done work) is acknowledged as a
// no-op, a key held with another digest is dead-lettered as
// idempotency_key_reused (the entry untouched), a key another delivery
// holds under a claim is retried, a ledger outage is retried.
//
// On failure it reads the entry (one read, on failures only) so that the
// record is treated as the claim would have: a done key is a no-op, a
// reused key is dead-lettered as reused, a key another delivery holds
// under a claim is retried, and otherwise the record goes on
// to its retry or dead letter knowing the key's redrive count, its dead
// letter counted on the entry as a claimed record's is.
func (p *Processor) settleReadOnly(ctx context.Context, rec Record, err error) error {
	st := rec.st
	if err == nil {
		prev, lerr := p.ledger.CompleteReadOnly(ctx, st.ledgerKey, rec.MessageID(), st.digest, st.receipt, st.now)
		switch {
		case lerr == nil:
			return nil
		case errors.Is(lerr, ledger.ErrKeyReused):
			return keyReused(lerr, prev, st.digest)
		case errors.Is(lerr, ledger.ErrDone):
			return ErrAlreadyDone
		case errors.Is(lerr, ledger.ErrLeased):
			return Transient(lerr)
		}
		return fmt.Errorf("%w: complete: %w", errLedger, lerr)
	}
	if errors.Is(err, ErrAlreadyDone) || errors.Is(err, errLedger) {
		return err
	}
	e, found, gerr := p.ledger.Get(ctx, st.ledgerKey)
	if gerr != nil {
		return fmt.Errorf("%w: read before the failure is acted on: %w (the failure: %w)", errLedger, gerr, err)
	}
	if found && e.Key != st.ledgerKey && e.KeyReused(st.digest) {
		// The entry of before scoping (Get's fallback) with other args is
		// another task's: it says nothing of this one.
		found, e = false, ledger.Entry{}
	}
	switch {
	case found && e.Key == st.ledgerKey && e.KeyReused(st.digest):
		return keyReused(ledger.ErrKeyReused, e, st.digest)
	case found && e.State == ledger.StateDone:
		return ErrAlreadyDone
	case found && e.State == ledger.StateInProgress && e.Owner != rec.MessageID() && st.now.Before(e.LeaseUntil):
		// A delivery that claimed the key holds it (a worker of the
		// version before, or a handler's StartEffect): its outcome stands.
		return Transient(fmt.Errorf("%w: %s holds the key", ledger.ErrLeased, e.Owner))
	}
	// From here the record is as a claimed one that gave its lease back:
	// its dead letter is counted on the entry and its redrive count is
	// known (the redrive_loop check), and there is no lease to release.
	st.begun, st.released = true, true
	st.redriveCount = e.RedriveCount
	return err
}
