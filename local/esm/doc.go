// Package esm is a local SQS event source mapping: it does for the local
// emulators what Lambda's SQS event source does in AWS, so that the real
// worker handler runs locally exactly as it is deployed.
//
// Each of Config.Pollers pollers repeats: receive a batch (long polling; up to
// BatchSize records, gathering for up to BatchWindow; every system attribute
// and every message attribute), build the Lambda SQS event from it, invoke the
// handler with the Lambda timeout as its deadline, and delete the records that
// did not fail (DeleteMessageBatch). What it does with the handler's answer:
//
//   - a nil error and a partial batch response: every record not named in
//     batchItemFailures is deleted; the named ones are left alone, so they
//     come back after their visibility timeout — or after the backoff the
//     handler set with ChangeMessageVisibility, which the mapping never resets;
//   - an error, a panic, or a batchItemFailures entry whose itemIdentifier is
//     empty or not a message id of the batch: the whole batch failed and
//     nothing is deleted (Lambda's rule);
//   - a delete that fails: counted and logged; the record comes back and the
//     worker's idempotency ledger makes the repeat a no-op.
//
// The redrive policy of the hot queue (maxReceiveCount) moves what keeps
// failing to the DLQ, as in AWS: the emulator implements it.
//
// # Where it differs from Lambda
//
//   - Scaling: Lambda starts with five pollers and scales invocations up to
//     the event source's maximum concurrency; here Pollers (the pipeline's
//     max_concurrency) poll from the start, one invocation each at a time.
//   - Timeout: Lambda kills an invocation at its timeout; here the handler's
//     context is cancelled at the deadline and the mapping waits for it to
//     return, then treats the batch as failed (as Lambda does a timeout).
//   - Payload: Lambda stops gathering at a 6 MB invocation payload; here only
//     BatchSize and BatchWindow bound a batch (agent tasks are small).
//   - Backoff on errors: Lambda backs off its pollers after function errors
//     and throttles; here a poller goes on at once (the visibility timeout
//     still spaces the retries of the failed records).
//   - Process: the handler runs in this process, not in a fresh runtime, so
//     state kept in package variables survives between invocations, as it
//     does in a warm Lambda — and a crash of the handler (a panic) is caught
//     instead of ending the runtime.
//   - Until idle: Run can stop by itself once the queue is drained
//     (Config.UntilIdle), which an event source never does. It stops
//     gracefully: each poller finishes its current long poll and handles
//     what it brought. (Cancelling a long poll instead would leave SQS free
//     to hand the next message to a request nobody reads any more; that
//     message would sit invisible for its visibility timeout. Cancelling
//     Run's context does exactly that — it is not lost, only delayed, with
//     one receive of its maxReceiveCount spent.) Mapping.Stop stops the
//     same graceful way on request: agentdlq work calls it on its first
//     interrupt.
package esm
