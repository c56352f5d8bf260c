// Package triage is agentdlq's read-only look at a DLQ: what is in there, why,
// and how long before retention deletes it. It is used by the triage Lambda
// (triage/lambda, on a schedule and on DLQ alarms), by `agentdlq triage` and
// by the console. Run does it all for one pipeline; the stages are public
// for callers that compose their own. docs/triage.md is the long form.
//
// # Stages
//
//   - Scan (scan.go) receives every visible message once with a short
//     visibility timeout, stops on an empty receive, a receive of only
//     repeats or its bounds, then releases what it holds. It never deletes,
//     sends, purges or moves: ScanAPI does not even name those calls. When
//     it may have missed letters, ScanStats says why (PartialCause) and when
//     a rerun may see everything (RetryAfterSeconds); the Report is then not
//     Complete, and ScanStats.Err (ErrScanPartial) is what a caller that
//     must see every letter returns instead of its answer.
//   - Tag (message.go) gives each dead letter a reason: dlq_reason/dlq_meta
//     where the worker wrote them; receive_limit, labelled inferred, without
//     them (the broker moved it after maxReceiveCount); for metadata that
//     cannot be read, the dlq_reason attribute's reason when it is a known
//     one, else unclassified, with the error kept and the letter listed as
//     unreadable, never dropped. A body that is not UTF-8 is listed as
//     skipped and never exported.
//   - Build (report.go) groups by reason, then fingerprint (a stable hash of
//     reason, tool, versions and the normalised error signature): counts,
//     ages, soonest expiry, tenants, next action and redrivability from the
//     reason taxonomy, and what stands out (redrive loops, repeat keys,
//     recurring poison).
//   - Expiry (expiry.go): deletion time = SentTimestamp as SQS reports it in
//     the DLQ + DLQ retention; ClockFIFOReset explains the FIFO reading.
//   - Outputs: the Report as JSON (report_version 1), Text, Markdown
//     (render.go) and one self-contained HTML page with an SVG chart of the
//     kept reports and no script (html.go, chart.go; the console renders the
//     same templates); EMF metrics as docs/wiring.md names them
//     (metrics.go); the eval export of recurring poison and unclassified
//     groups as JSONL records with a manifest (eval.go, export.go), to a
//     store.Destination: a folder or S3 (package triage/store).
//   - Reports are kept, one set per run, under <pipeline>/reports/
//     (History for the chart, LatestReport for the console).
//   - Handler (handler.go) is the Lambda's logic: schedule and alarm events,
//     reports kept in the eval bucket, EMF, and a summary on the alarm topic.
//
// The decision core (message.go, fingerprint.go, expiry.go, report.go,
// render.go, metrics.go, eval.go) imports no AWS SDK; the adapters
// (scan.go, handler.go, triage/store) declare the small interfaces they need.
package triage
