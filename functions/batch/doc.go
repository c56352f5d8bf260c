// Package batch is a reusable processor for Lambda SQS events: it calls a
// Handler once per record, classifies every failure, dead-letters what must
// not be retried with its reason, and never loses a message. It knows no
// payload: a handler decodes its own bodies, and its errors and decoded
// values say what the dead letter carries (ReasonError, Describer).
//
//	p, err := batch.New(batch.Config{
//		Handler:         handle,                 // func(ctx, batch.Record) error
//		SQS:             sqs.NewFromConfig(cfg), // sends dead letters, backs off retries
//		DLQURL:          dlqURL,                 // required: New fails without it
//		MaxReceiveCount: 4,                      // the hot queue's redrive policy
//		Pipeline:        "agent-tasks",          // the metrics' dimension
//	})
//	lambda.Start(p) // or lambda.Start(p.Handle): the same Record either way
//
// batchpipeline.Config fills a Config from a pipeline definition.
//
// A handler returns nil (acknowledged) or an error. The outcome
// constructors say what it does to the message:
//
//	Transient(err)        retried with backoff; budget_exhausted on the last receive
//	AuthConfig(err)       retried; auth_config on the last receive
//	DependencyOpen(err)   retried; dependency_open on the last receive
//	Poison(reason, err)   dead-lettered at once with its poison reason
//	Security(reason, err) dead-lettered at once (signature_invalid, guardrail_reject,
//	                      idempotency_key_reused from Record.Begin)
//	EffectUnknown(err)    dead-lettered at once: effect_unknown
//	PolicyLimit(err)      dead-lettered at once: policy_limit
//	ErrAlreadyDone        acknowledged as a no-op (from Record.Begin)
//
// Any other error is classified (Classify): Config.Classify, then a
// ReasonError's own reason, then deadlines, AWS error codes, and last
// unclassified, dead-lettered at once and never assumed retryable. A panic
// is that record's unclassified failure. After Record.StartEffect, a
// failure that may have had its effect is effect_unknown.
//
// A Record is the same on every entry, and everything it returns is the
// record's own, safe to keep after the call: the body is the handler's
// copy, and the dead letter carries the message as it was received.
//
// A dead letter keeps the body byte for byte and the original attributes,
// and adds dlq_reason and dlq_meta (events/deadletter). It always fits
// Config.MaxMessageBytes (the DLQ's MaximumMessageSize, default 1 MiB): it
// gives up history, folded and kept attributes and all but the identity of
// its metadata, in that order, keeping them as a claim check with
// Config.Evidence. A body that leaves deadletter.Reserve under the limit is
// always dead-lettered. Only a successful send acknowledges a record: a
// failed one leaves it on the hot queue.
//
// Config.Ledger makes Record.Begin, StartEffect and SetReceipt an
// idempotency ledger: a done key is a no-op, a mutating task is never
// repeated blindly. FIFO queues keep each message group's order;
// Config.Concurrency handles records (or groups) at once.
//
// Package batchtest runs a handler through this processor in tests.
// docs/worker.md has the rest: the classification rules, the backoff
// schedule, FIFO, the ledger, metrics and logs, memory and bad input.
package batch
