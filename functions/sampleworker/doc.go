// Package sampleworker is the sample agent-task worker: a batch.Handler over the
// tool catalog of Catalog, wired to a pipeline's queues and the
// idempotency ledger. Its Lambda entry is functions/sampleworker/lambda.
//
// For each record it decodes the agent task (agenttask.DecodeTask: a
// failure is poison with its reason), begins the idempotency key in the ledger (a
// done key is acknowledged as a no-op), runs the tool and records the
// receipt. The tools are deterministic: their work, and their receipt, is
// the hex SHA-256 of the raw args bytes as they stand in the body.
//
// # Fault injection
//
// A task's args.fault drives the failure paths, so that demos, tests and
// benchmarks reach every one of them (the conventions of events/doc.go):
//
//	{"retryable":true,"status":503|429,"error":"..."}  transient (retried; budget_exhausted
//	                                                   on the last receive)
//	  ... ,"until_receive":N                           transient before receive N, then ok
//	  ... ,"retry_after_seconds":S                     with the provider's Retry-After S
//	{"kind":"rate_limited","retry_after_seconds":S}    a 429 with Retry-After S (default 1):
//	                                                   transient, retried after S; not
//	                                                   counted where retry_after_requeues
//	                                                   allows it (until_receive works too)
//	{"kind":"timeout_after_effect"}                    a timeout after the call started:
//	                                                   effect_unknown for a mutating tool
//	                                                   (file.write, email.send), transient
//	                                                   for a read-only one
//	{"kind":"lost_reply"}                              the same, but the call took effect and
//	                                                   only its reply was lost (see Effects)
//	{"kind":"auth","code":"AccessDenied"}              auth_config (retried inside the budget)
//	{"kind":"dependency_open","dependency":"x"}        dependency_open (retried inside the budget)
//	{"kind":"policy_limit"}                            policy_limit, dead-lettered at once
//	{"kind":"signature_invalid"}                       signature_invalid, dead-lettered at once
//	{"kind":"guardrail_reject"}                        guardrail_reject, dead-lettered at once
//	{"kind":"panic"}                                   the tool panics: unclassified
//	{"kind":"error","error":"..."}                     an unclassified error
//
// A fault may name a dependency ("dependency":"search-api", with any kind
// or a retryable status). With Config.Dependencies set, such a task fails
// only while that dependency is down: locally, DependencyDir keeps the
// health as files that `agentdlq local dependency down|up NAME` switches, so
// an outage can end and its dead letters be redriven and processed. Without
// it, the fault fails on every receive (the fixtures and the benchmarks).
// A dependency name that is not one (CheckDependencyName: a-z, 0-9, '.',
// '_', '-', at most 64) is the producer's bug: schema_invalid, poison.
//
// Other producers' spellings of the same faults are read too: "type" for
// "kind"; kinds "timeout" and "effect_unknown" as timeout_after_effect,
// "authorization", "auth_config", "access_denied", "unauthorized",
// "forbidden" and "expired_token" as auth, "circuit_open" as
// dependency_open, "guardrail" and "signature" as the security kinds,
// "rate_limit", "throttled" and "too_many_requests" as rate_limited; and a
// fault with no kind, not retryable, with HTTP status 401 or 403 as auth.
// Kinds are matched without regard to case.
//
// # Effects and their verifiers
//
// With Config.Effects (EffectDir locally), a mutating tool's call leaves a
// trace where it lands, as a real tool's does in the mail provider's log:
// the call reached the system, and whether it took effect (always without
// a fault; never with timeout_after_effect; with lost_reply, yes). The
// tools' Verifier reads it back, read-only, for `agentdlq ledger verify`;
// Catalog registers it on the mutating tools.
//
// Any other fault is an unclassified error: never assumed retryable. The
// fault is parsed only when the args mention "fault" (ParseFault searches
// for the word first), so a task without one pays one byte search of its
// args and no JSON decode of them.
package sampleworker
