// Package ledger is the idempotency ledger: one entry per idempotency key
// that says whether the task is in progress (under a lease), done (with an
// effect receipt) or dead-lettered, and how often it was dead-lettered and
// redriven. The worker (functions/batch), triage and redrive share it.
//
// Ledger is the interface, and its methods' docs are the rules every
// implementation keeps. Memory is the in-process implementation (tests,
// `agentdlq invoke`, benchmarks) and Dynamo the DynamoDB one (one
// conditional UpdateItem a change, TTL). Counting wraps any Ledger and
// counts the effects it records. A team that brings its own store
// implements Ledger and runs the conformance suite, ledger/ledgertest,
// against it; Memory and Dynamo pass the same suite:
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
// A task whose tool declares that it changes nothing skips the claim:
// CompleteReadOnly takes any state but done (and another owner's live
// lease) to done in one conditional write, with the checks Begin makes.
//
// Begin on a done key fails with ErrDone, so a redelivery or a redrive of
// done work is a no-op. Begin keeps the first digest of the task's
// canonical args a key is claimed with (Entry.ArgsDigest), and a Begin
// with another digest fails with ErrKeyReused before any other check and
// changes nothing: the key was issued for another task. An entry without a
// digest (written before digests were kept) takes the first one a
// successful Begin brings; a done entry without one cannot tell and stays
// a no-op for any args; a mutating handler calls StartEffect before its
// call, and a failure after it without a receipt is an unknown effect,
// which only the owner's Reconcile settles. Counts never go down and
// concurrent increments are never lost. Every change sets UpdatedAt to the
// caller's now and ExpiresAt to now+DefaultTTL.
//
// # Whose key it is
//
// A key is the producer's only within its pipeline and tenant: callers
// pass Key(pipeline, tenant, idempotencyKey), a length-prefixed form no
// choice of parts can forge, so that no tenant's task reads, claims or
// counts another's entry. Memory and Dynamo (and WithUnscopedFallback) fall
// back, for a scoped key with no entry of its own beyond a claim, to the
// entry the version before scoping wrote under the bare key, when its args
// digest is the task's: a task done before the upgrade stays a no-op.
// docs/worker.md ("Whose key it is") says why.
//
// # Time and expiry
//
// Every call takes now from the caller: the ledger reads no clock, so lease
// expiry is decided by the worker's clock and tests are deterministic.
// DefaultTTL (30 days) is longer than the longest SQS retention (14 days),
// so a redrive of the oldest dead letter still finds its key. DynamoDB TTL
// deletes expired items within days of ExpiresAt (whole epoch seconds);
// Memory keeps them.
//
// # Errors
//
// Test with errors.Is: ErrKeyReused, ErrDone and ErrLeased (Begin,
// CompleteReadOnly, StartEffect),
// ErrNotEffectUnknown, ErrReconciled and ErrInvalid (Reconcile), and
// ErrUnavailable for an outage (throttling, a server fault, the network, a
// deadline): the worker retries the record and never dead-letters it on a
// ledger outage. Other errors (a missing table, AccessDenied) are
// configuration faults, wrapped with their cause.
//
// # The DynamoDB table
//
// Partition key pk (a string: the scoped key, Key), on-demand billing, TTL
// on expires_at. The shared parts of infra/stack create it and grant each
// function its calls; Dynamo makes only GetItem and UpdateItem (DynamoAPI).
package ledger
