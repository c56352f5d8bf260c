// Package triage is agentdlq's read-only look at a DLQ: what is in there, why,
// and how long before retention deletes it. It is used by the triage Lambda
// (triage/lambda, on a schedule and on DLQ alarms) and by `agentdlq triage`.
//
// # Stages
//
//   - Scan (scan.go) receives every visible message once — batches of 10,
//     a short visibility timeout (30 s by default), message ids tracked — and
//     stops on an empty receive, on a receive of only repeats, or on the
//     count and time bounds; it then releases what it holds with
//     ChangeMessageVisibilityBatch(0). It never deletes, sends, purges or
//     moves: ScanAPI does not even name those calls. When it may have missed
//     messages (bounds, visibility lapse, in-flight or FIFO-locked messages,
//     a failed receive) the stats say so, why (PartialCause) and when a
//     rerun may see everything (RetryAfterSeconds); the report is then not
//     Complete, every form of it opens with a PARTIAL SCAN banner, the chart
//     draws the run as an outline, never as a count, and ScanStats.Err
//     (ErrScanPartial) is what a caller that must see every letter returns
//     (docs/triage.md).
//   - Tag (message.go) gives each dead letter a reason: dlq_reason/dlq_meta
//     where the worker wrote them; receive_limit, labelled inferred, for a
//     message without them (the broker moved it after maxReceiveCount: the
//     worker crashed, timed out or ran out of memory); and for metadata
//     that cannot be read — not JSON, an unknown version, oversized,
//     dlq_reason without dlq_meta, or the two disagreeing — the reason of
//     the dlq_reason attribute when it names a known reason (the alarm, the
//     operator and a selective redrive go by it), else unclassified,
//     labelled inferred; the error is kept either way. Such messages are
//     counted in a group of their own (by the kind of problem) and listed
//     under "unreadable" in the report: never dropped. Without metadata the tool, tool version, schema
//     version, tenant and idempotency key are read from the body when it is
//     a JSON object. A body that is not UTF-8 is tagged from its attributes
//     and listed as skipped; it is never exported.
//   - Fingerprint (fingerprint.go): a stable hash of reason, tool, tool
//     version, schema version and the normalised error signature (quoted
//     values, UUIDs, timestamps, hex, numbers and ids stripped).
//   - Build (report.go) groups by reason, then fingerprint: counts, first
//     and last seen, oldest age, soonest expiry, tenants affected (counted;
//     listed hashed when eval.hash_fields names "tenant"), next action and
//     redrivability from the events taxonomy, and what stands out: redrive
//     loops (redrive_loop, or dlq_meta/ledger redrive counts at least
//     redrive_loop_after), repeat keys (a key seen twice, or with earlier
//     dead letters or redrives in the ledger), recurring poison.
//   - Expiry (expiry.go): deletion time = clock start + DLQ retention. The
//     attribute read is always SentTimestamp as SQS reports it for the
//     message in the DLQ: for a standard queue's broker move it is the
//     original enqueue time (kept on the move); for a message the worker
//     sent itself (it has dlq_meta) it is the DLQ send time (a new message);
//     for a FIFO broker move the enqueue time is reset by the move (see
//     ClockFIFOReset for the conservative reading).
//   - Outputs: the Report as JSON (report_version 1), Text for a terminal,
//     Markdown for files and tickets (render.go), HTML: one self-contained
//     page, inline styles and an inline SVG chart of the kept reports, no
//     script (html.go, chart.go, html/; the console renders the same
//     templates); EMF metrics exactly as
//     docs/wiring.md pins them (metrics.go); the eval export (eval.go,
//     export.go) of recurring poison and unclassified groups as JSONL eval
//     records with a manifest, to a folder or S3 (s3dest.go).
//   - Reports are kept, one set per run, under <pipeline>/reports/ (history.go:
//     reportBase, History for the chart, LatestReport for the console).
//   - Handler (handler.go) is the Lambda's logic: schedule and alarm events,
//     reports kept in the eval bucket, EMF, and a summary on the alarm topic
//     that names the HTML report's S3 URI and its AWS console link.
//
// The decision core (message.go, fingerprint.go, expiry.go, report.go,
// render.go, metrics.go, eval.go) imports no AWS SDK; the adapters
// (scan.go, s3dest.go, handler.go) declare the small interfaces they need.
package triage
