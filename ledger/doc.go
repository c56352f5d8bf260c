// Package ledger is the idempotency ledger: one entry per idempotency key
// that says whether the task is in progress (under a lease), done (with an
// effect receipt) or dead-lettered, and how often it was dead-lettered and
// redriven. The worker (functions/batch), triage and redrive share it.
//
// Ledger is the interface; Memory is the in-process implementation (tests,
// `agentdlq invoke`, benchmarks) and Dynamo the DynamoDB one (one
// conditional UpdateItem a change, TTL). Counting wraps any Ledger and counts
// the effects it records. A team that brings its own store implements Ledger
// and runs the conformance suite, ledger/ledgertest, against it: Memory and
// Dynamo pass the same suite.
//
//	func TestMyLedger(t *testing.T) {
//		ledgertest.Run(t, func(t *testing.T) ledger.Ledger { return mystore.New(t) })
//	}
//
// # States
//
// An entry is in one of three states (State), or in none when
// only Redriven has touched it (a key the worker never saw, for example
// one the broker moved to the DLQ):
//
//	(no entry) ──Begin──► in_progress ──Complete──► done
//	                        │  ▲   │
//	                Release │  │   └──DeadLettered──► dead_lettered
//	     (lease cleared, ◄──┘  │                        │
//	      still in_progress)   └────────Begin───────────┘  (a redrive runs it again)
//
// The rules, which every implementation keeps (the suite checks each):
//
//   - Begin claims a key for an owner (the SQS message id) until now+lease.
//     It fails with ErrDone when the key is done, and with ErrLeased when
//     another owner holds a lease that has not expired (the lease holds
//     while now < LeaseUntil). The same owner may Begin again (a redelivery
//     of the same message); anyone may Begin a dead-lettered key, a
//     released key, a key whose lease expired and a key with no state. Of
//     concurrent Begins on one key exactly one wins. Begin returns the entry
//     as it was before the claim (the zero Entry for a new key): on ErrDone
//     it holds the receipt, on ErrLeased the holder. A refused Begin changes
//     nothing, so a redelivery of done work is a no-op.
//   - StartEffect marks, before a mutating call, that its effect may happen
//     (EffectStarted). Only the holder of an in_progress key may; anyone
//     else gets ErrLeased and must not make the call.
//   - Complete marks the key done with its effect receipt and clears the
//     lease. It is unconditional: the effect happened, and its receipt must
//     not be lost because a lease ran out.
//   - Release clears the holder's lease after a failure that will be
//     retried, so that the next delivery need not wait for the lease to
//     expire. It does nothing (and returns nil) when the caller does not
//     hold the key, or the key is unknown or done.
//   - DeadLettered sets dead_lettered and the reason, clears the lease and
//     adds one to DeadLetterCount (creating the entry if need be); it
//     returns the new entry. The worker calls it after the DLQ accepted the
//     letter.
//   - Redriven adds one to RedriveCount and returns the new entry; it does
//     not change the state (creating an entry with no state if need be).
//     redrive calls it for each letter it moves back; the worker dead-letters
//     a key as redrive_loop once its redrive count reaches the limit.
//   - Get reads an entry (strongly consistent in Dynamo); ok is false for an
//     unknown key. triage and redrive only read.
//   - Reconcile records the owner's finding on a key whose effect is
//     unknown (Entry.EffectUnknown: EffectStarted, no receipt, not done, no
//     unexpired lease), in one conditional write. OutcomeEffectConfirmed
//     marks it done with the owner's receipt (Begin then fails with
//     ErrDone: the task never runs again); OutcomeNoEffect clears
//     EffectStarted (the next Begin sees no started effect, so a redriven
//     task runs afresh). Both set Reconciled, ReconciledBy and ReconciledAt
//     and keep the counts. The same reconciliation again returns the entry
//     unchanged; another fails with ErrReconciled; a key whose effect is
//     not unknown fails with ErrNotEffectUnknown (ErrLeased while a
//     delivery holds it), a malformed one with ErrInvalid, and none changes
//     anything. Of concurrent reconciliations with different outcomes
//     exactly one wins. An effect started again after no effect is unknown
//     again: a new incident, reconciled on its own.
//
// Counts never go down and concurrent increments are never lost. Every
// change sets UpdatedAt to the caller's now and ExpiresAt to now+DefaultTTL.
//
// # Time
//
// Every call takes now from the caller: the ledger reads no clock, so lease
// expiry is decided by the worker's clock and tests are deterministic.
// Entries keep nanoseconds, except Dynamo's ExpiresAt, which is whole
// epoch seconds (the TTL attribute).
//
// # Expiry
//
// DefaultTTL (30 days) is longer than the longest SQS retention (14 days),
// so that a redrive of the oldest dead letter still finds its key, and a
// redelivery of done work within that time is still a no-op. DynamoDB TTL
// deletes expired items within days of ExpiresAt; Memory keeps them.
//
// # Errors
//
// Test with errors.Is: ErrDone and ErrLeased (from Begin, and ErrLeased
// from StartEffect), ErrNotEffectUnknown, ErrReconciled and ErrInvalid
// (from Reconcile), ErrUnavailable for an outage (throttling, a server
// fault, the network, a deadline): the worker retries the record and never
// dead-letters it on a ledger outage. Other errors (a missing table,
// AccessDenied) are configuration faults, wrapped with their cause.
//
// # The DynamoDB table
//
// Partition key pk (a string: the idempotency key), on-demand billing, TTL
// on expires_at. The shared parts of infra/stack create it and grant each
// function its calls; Dynamo makes only GetItem and UpdateItem (DynamoAPI).
package ledger
