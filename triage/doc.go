// Package triage is agentdlq's read-only look at a DLQ: what is in there, why,
// and how long before retention deletes it. It is the read model the triage
// Lambda (triage/lambda, on a schedule and on DLQ alarms), `agentdlq
// triage`, the console and package redrive share. Run does it all for one
// pipeline; the stages are public for callers that compose their own.
// docs/triage.md is the long form.
//
// # Stages
//
//   - Scan (scan.go) receives every visible message once with a short
//     visibility timeout, stops on an empty receive, a receive of only
//     repeats or its bounds, then releases what it holds. It never deletes,
//     sends, purges or moves: ScanAPI does not even name those calls. When
//     it may have missed letters, report.ScanStats says why (PartialCause)
//     and when a rerun may see everything (RetryAfterSeconds); the report is
//     then not Complete, and ErrScanPartial is what a caller that must see
//     every letter returns instead of its answer.
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
//     the DLQ + DLQ retention; report.ClockFIFOReset explains the FIFO
//     reading.
//   - dlq.Filter chooses letters by tool, tenant, time and error text
//     (ParseFilter reads one from flags and URLs; Narrow rebuilds a report
//     of the letters it chose); dlq.FilterFields are its fields' names.
//   - The report.Report is JSON (report_version 1, report.schema.json). Run hands
//     it to an Exporter (Config.Export) and a Keeper (Config.Keep) when the
//     caller gives them; reports are kept, one set per run, under
//     ReportBase (History for the chart, LatestReport for the console).
//
// The report's types (Report, Group, Totals, ScanStats) are plain data in
// package triage/report, and the letters (Message, Tagged) and the Filter
// that picks them in package triage/dlq; neither imports triage. What is
// done with a report lives beside it, each used by whoever needs it:
// package triage/render writes it as text, Markdown and HTML (and
// keeps it: render.KeepIn), package triage/eval exports its eval cases
// (eval.To), and triage/lambda is the Lambda's handler, EMF metrics and
// alarm summary. Package triage/store is where exports and reports go.
//
// The decision core (message.go, fingerprint.go, expiry.go, report.go,
// filter.go) imports no AWS SDK; the adapter (scan.go) declares the small
// interface it needs.
package triage
