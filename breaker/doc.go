// Package breaker is a per-dependency circuit breaker whose state is shared
// by every worker instance of a pipeline, built to stop an outage of a model
// or tool provider from spending the tasks' receive budgets.
//
// The decisions are pure functions of a State, the pipeline's Settings and
// the time (Admit, Fail, Succeed, Force): they import no SDK and are table
// tested. A Breaker runs them against a Store (Memory in tests and one
// process; the DynamoDB adapter in breaker/dynamostore for a fleet), with
// compare-and-set writes on a version, logs every transition (slog JSON)
// and counts it as an embedded-metric-format line with the dependency as a
// dimension.
//
// The life of one dependency's breaker:
//
//	closed     every task is admitted. A failure of the dependency (the
//	           worker's dependency_open, rate_limited, auth_config, or a
//	           Retry-After the provider sent) is counted in a window of
//	           Settings.Window that slides (WindowBuckets buckets); at
//	           Settings.Threshold failures in the last window, from at
//	           least Settings.MinTenants distinct tenants, it opens. One
//	           tenant's failures alone (its revoked key, its quota) keep
//	           counting but never open it: a noisy tenant cannot defer
//	           every tenant's tasks. The state keeps the most recent
//	           tenants of the window (at most MaxTenants, as TenantHash).
//	open       no task that needs the dependency is admitted: each is
//	           deferred (Decision.Wait: until the breaker may probe, spread
//	           with jitter), which a worker turns into an uncounted requeue
//	           (batch.Deferred). It stays open Settings.OpenFor, or as long
//	           as the provider's Retry-After asked, whichever is longer.
//	half_open  Settings.Probes tasks are admitted as probes, one write each,
//	           the others deferred a short while. Failed probes of
//	           Settings.MinTenants tenants reopen it (one tenant's alone
//	           free their slots); as many successes as probes close it.
//	           Probes that never report back are given up after OpenFor
//	           and new ones admitted.
//	closed,    after the probes: a ramp of Settings.Ramp. A task is admitted
//	ramping    with a chance that grows linearly from 0 to 1 over the ramp,
//	           and one not admitted waits until its turn, so the backlog
//	           comes back spread over the ramp, not as a thundering herd.
//
// An owner can hold a breaker open (Force) until the owner closes it; a
// held breaker never closes by itself. Closing by hand ramps too.
//
// A store that also implements Lister (Memory, dynamostore.Store) lists the
// dependencies of a pipeline whose state it ever stored, so that List reads
// every breaker of a pipeline without knowing their names: what
// `agentdlq breaker status --pipeline P` and the console show.
//
// While closed and healthy a Breaker costs one store read per dependency
// per Config.Refresh per process, and no write: successes in the closed
// state write nothing.
package breaker
