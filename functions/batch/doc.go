// Package batch is a reusable processor for Lambda SQS events that
// classifies every failure, dead-letters what must not be retried with a
// reason, and never loses a message.
//
// A worker is a Handler, called once per record, and a Config:
//
//	p, err := batch.New(batch.Config{
//		Handler:         handle,          // func(ctx, batch.Record) error
//		SQS:             sqs.NewFromConfig(cfg),
//		DLQURL:          dlqURL,          // required: New fails without it
//		MaxReceiveCount: 4,               // the hot queue's redrive policy
//		Pipeline:        "agent-tasks",
//	})
//	lambda.Start(p) // or lambda.Start(p.Handle): see "Memory: the event type"
//
// # What an outcome does to the message
//
// The handler returns nil (the record is acknowledged) or an error made by
// one of the constructors, bare or wrapped:
//
//	Transient(err)        retry: batch item failure + visibility backoff;
//	                      on the last allowed receive, dead-letter budget_exhausted
//	AuthConfig(err)       retry like Transient; last receive: auth_config
//	DependencyOpen(err)   retry like Transient; last receive: dependency_open
//	Poison(reason, err)   dead-letter at once (json_invalid, schema_invalid,
//	                      tool_unknown, tool_version_unsupported)
//	Security(reason, err) dead-letter at once (signature_invalid, guardrail_reject)
//	EffectUnknown(err)    dead-letter at once: effect_unknown
//	PolicyLimit(err)      dead-letter at once: policy_limit
//	ErrDuplicate          acknowledge as a no-op (from Record.Begin)
//
// Each constructor's reason names a failure class of the one taxonomy,
// deadletter.Class (transient, poison, security, authorization, dependency,
// ambiguous, policy, unknown); deadletter.Class.Retryable says which classes
// are retried inside the budget. Outcome.Class and Classification.Class
// return it; there is no second enum.
//
// Any other error is classified by Classify, with this precedence: a typed
// outcome; the caller's Config.Classify; an *agenttask.ValidationError
// (poison with its reason); a context deadline, cancellation or network
// timeout (transient); a smithy.APIError by ErrorCode and ErrorFault
// (throttling and 5xx transient; AccessDenied, ExpiredToken, KMS*
// auth_config); anything else unclassified, dead-lettered at once and never
// assumed retryable. A panic is recovered into that record's unclassified
// failure. Once the handler called Record.StartEffect, every failure other
// than poison, security and policy_limit is effect_unknown: the call may
// have had its effect and there is no receipt.
//
// # Your own classification
//
// Config.Classify is a ClassifyFunc: given a failure that is not a typed
// outcome, it returns the reason for the errors it knows (a dependency's own
// error types, a model's refusal) and false for the rest, which the built-in
// rules decide. It is matched with errors.Is/As, so bare and wrapped errors
// alike are found:
//
//	Classify: func(err error) (deadletter.Reason, bool) {
//		if _, ok := errors.AsType[*search.QuotaError](err); ok {
//			return deadletter.ReasonBudgetExhausted, true // transient
//		}
//		return "", false
//	},
//
// A reason the worker cannot write (receive_limit, redrive_loop, an unknown
// one) or a panic in the function makes the failure unclassified, with the
// error code "classify:<reason>" or "classify:panic".
//
// "The last allowed receive" is ApproximateReceiveCount >= MaxReceiveCount:
// the processor dead-letters the record itself, with its reason and attempt
// history, so that no message the worker saw reaches the DLQ without a
// reason. The one exception is a ledger outage: that record is retried
// whatever its receive count and never dead-lettered (if the broker moves it
// after MaxReceiveCount, triage infers receive_limit).
//
// # Dead letters
//
// A dead letter is sent by the processor to the DLQ with SendMessageBatch,
// up to ten a call (and at most 256 KiB of messages a call, 1 MiB when
// MaxMessageBytes is above 256 KiB; sqs:SendMessage allows the call): the
// original body byte for byte, the original message attributes plus
// dlq_reason and dlq_meta (deadletter.EncodeDeadLetter: extras beyond eight are
// folded into dlq_meta), and the AWSTraceHeader. On a FIFO DLQ it keeps the
// MessageGroupId and its MessageDeduplicationId is "dlq-" + the original
// message id, and each dead letter is sent before the next record of the
// batch is handled (a failed send holds its group). Only when the send
// succeeded is the record acknowledged; when it fails, or SendMessageBatch
// reports that entry failed or does not report it, that record alone is a
// batch item failure and DLQSendFailures counts it: nothing is lost.
//
// A dead letter always fits (deadletter.FitDeadLetter): metadata that is too
// large for dlq_meta (16 KiB) or cannot be encoded, or a message that would
// exceed Config.MaxMessageBytes (default 256 KiB, the DLQ's
// MaximumMessageSize), is never retried for it. The dead letter gives up, in
// order and only as far as needed, its attempt history, the folded
// attributes, the original attributes kept on the message, and all of
// dlq_meta but its identity (reason, attempts, message id, idempotency key,
// task and trace ids, input hash, effect); dlq_meta lists what in "reduced".
// The body stays byte for byte. With Config.Evidence, what was given up (the
// whole metadata and every original attribute) is put in the eval bucket as
// a claim check, <pipeline>/evidence/<yyyy-mm-dd>/<message id>.json, and
// dlq_meta's "evidence" points to it, as the SQS Extended Client does for a
// body; a claim check that cannot be stored is logged and the dead letter
// sent without the pointer. Only a body that leaves no room for the
// smallest dlq_meta cannot be dead-lettered by the worker: it is retried,
// and the broker moves it at maxReceiveCount. A key dead-lettered again after RedriveLoopAfter redrives
// (the ledger's redrive count) is dead-lettered as redrive_loop.
//
// # Backoff schedule
//
// A retried record is hidden with ChangeMessageVisibility for a random whole
// number of seconds in [0, min(Max, Base·2^(n-1))] after its n-th receive
// (exponential backoff with full jitter). With the defaults, base 2 s and
// max 120 s:
//
//	after receive  1: 0–2 s
//	after receive  2: 0–4 s
//	after receive  3: 0–8 s
//	after receive  4: 0–16 s
//	after receive  5: 0–32 s
//	after receive  6: 0–64 s
//	after receive 7+: 0–120 s
//
// The backoff needs Config.HotQueueURL; without it, or with
// Backoff.Disabled, the queue's visibility timeout spaces the retries.
//
// # FIFO queues
//
// Records are handled in order. At the first record of a message group that
// is retried (batch item failure), that record and every later record of the
// same group in the batch are reported as batch item failures, unhandled, so
// that the group's order holds; other groups go on. A failure that
// dead-letters at once depends on Config.FIFOPoison:
//
//   - dead_letter (default): the record is dead-lettered and its group goes
//     on with its next record — one bad step does not stall a run;
//   - hold_group: the record and the rest of its group are batch item
//     failures until the record's last allowed receive, when it is
//     dead-lettered with its own reason and the group goes on. Use it when
//     later steps must never run before an earlier one was looked at.
//
// # Idempotency ledger
//
// With Config.Ledger, a handler calls Record.Begin(ctx, key, mutates) before
// any work: the key is taken with a lease (owner: the message id); a key
// already done returns ErrDuplicate (acknowledged as a no-op, counted as
// DuplicatesSkipped); a key leased by another delivery is retried; a
// mutating task whose earlier delivery started its call without a receipt
// is effect_unknown. Record.StartEffect is called before a mutating call,
// Record.SetReceipt(receipt) gives the effect receipt, and the processor marks the
// key done when the handler returns nil, or dead-lettered (counting it) when
// it dead-letters the record. A ledger outage retries the record. Every
// ledger call is guarded as the handler is: a panic in the ledger
// implementation is that call's outage (ledger.ErrUnavailable), so it never
// escapes Handle to fail the whole batch (and send its dead letters twice on
// the retry) or, with Concurrency > 1, crash the process. A panic in
// DeadLettered, after the dead letter was sent, only loses its count. A
// dead-lettered key may be begun again: that is a redrive, and the task
// runs again (for effect_unknown, only after the owner reconciled it, as
// the runbook says; a reconciled effect is recorded as done, which makes
// the redrive a no-op).
//
// # Concurrency
//
// By default records are handled one after the other, in event order. With
// Config.Concurrency n > 1, a standard queue's records are handled by up to
// n goroutines, and a FIFO queue's message groups are (each group's records
// in order, so the FIFO rules above hold); the partial batch response still
// lists the failures in event order. Raise it when the handler waits on the
// network (a DynamoDB ledger); the sample worker's Lambda uses 16.
//
// # Running out of time
//
// A Lambda timeout fails the whole batch, records already handled included.
// So no record is started when the invocation's deadline is nearer than
// Config.DeadlineMargin (default 2 s): the records left are reported as
// batch item failures, unhandled, and one log line says how many.
//
// # Metrics and logs
//
// One line of CloudWatch embedded metric format per invocation in namespace
// AgentDLQ with dimension Pipeline: Processed, Retried, DeadLettered,
// DLQSendFailures, DuplicatesSkipped; plus one line per reason dead-lettered
// in the invocation, with dimensions Pipeline and Reason: DeadLettered.
// Logs are slog records with the keys message_id, queue, reason, attempt and
// trace_id, written for failures only: nothing per successful record. With
// a Logger made on NewLogHandler (slog's JSON handler), the processor writes
// the line of each dead letter itself, the same bytes without slog's work
// per attribute.
// Error texts are redacted (deadletter.Redact) before they are logged or stamped.
//
// # Testing a handler
//
// Package batchtest (functions/batch/batchtest) runs a Handler through
// this processor, on the lean path of lambda.Start(p) (Worker.Handle for
// Handle's), with an in-memory ledger and a recording DLQ: build an
// event from bodies and attributes, run it, and require each record's
// fate (acknowledged, retried, dead-lettered with a reason).
//
// # Memory: the event type
//
// There are two ways in, and handlers see the same Record on both:
//
//	lambda.Start(p)        // the lean path: p is a lambda.Handler (Invoke)
//	lambda.Start(p.Handle) // aws-lambda-go's events.SQSEvent
//
// Through Handle, aws-lambda-go decodes the payload into events.SQSEvent
// first: each record's two attribute maps are built whether anyone reads
// them or not, and the runtime's payload buffer and its json.Decoder's copy
// of it are alive too. On a 10,000-record event of the generated mix (27.7
// MB of JSON) that path peaks at 233–260 MB RSS (functions/sampleworker/bench
// -path events, GOMEMLIMIT 230 MiB or unset; README "Performance").
//
// Invoke (and DecodeEvent with HandleEvent) is the lean path: the payload is
// decoded once, by a scanner that accepts what json.Unmarshal into
// events.SQSEvent accepts and yields the same values (checked against it
// over the fixtures, generated mixes and a fuzz target), except a duplicate
// key, which it refuses. Each body is decoded in place in the payload (a
// body decodes to at most its escaped length), the attributes and message
// attributes stay raw JSON in the payload, validated, and are decoded when
// read; a record's own strings (message id, receipt handle, group id) are
// one allocation. The same 10,000 records peak at 92–96 MB, of which 27.7
// MB is the payload the runtime holds and about half the Go heap's growth
// to twice the live heap between collections; at the largest batch Lambda
// passes (6 MB), 34 MB against 78 MB.
//
// What changes for a handler on the lean path: Record.Message is nil (no
// events.SQSMessage is built). Record's accessors read both paths:
// MessageID, Body, Attribute, MessageAttributes (decoded into a new map on
// each call), EventSourceARN, ReceiptHandle, and SQSMessage, which
// materializes the aws-lambda-go type on demand for code that needs it. Body
// aliases the invocation's payload, which the Lambda runtime reuses for the
// next invocation: it is valid during the handler call only, and what a
// handler keeps it copies (a string made from it is a copy). Handle and its
// events.SQSEvent stay, unchanged, for handlers that read Record.Message.
//
// The Go heap: GOMEMLIMIT bounds the peak where memory is short; the
// agentdlq construct sets it at 90% of the function's memory (230 MiB for
// the default 256 MB), and the sample worker's Lambda entry derives it from
// AWS_LAMBDA_FUNCTION_MEMORY_SIZE when it is unset. At the default it never
// binds on these batches. A real SQS event is also much smaller than 10,000
// such records: Lambda passes a batch up to the 6 MB payload limit of a
// synchronous invocation, about 2,300 of them.
//
// # Bad input
//
// A body that is not JSON is the handler's poison; a record with no
// attributes or an unreadable ApproximateReceiveCount is handled as a first
// receive (and logged); an event whose records are not SQS messages makes
// Handle return an error wrapping ErrNotSQSEvent and acknowledge nothing,
// and so does a payload Invoke cannot decode (not JSON, not an object, a
// field of the wrong type, a duplicate key: the error says which and where,
// and Lambda retries the whole batch); a Config without a DLQ makes New
// fail.
package batch
