// Package processed reads how many tasks the worker processed for a
// pipeline over a period: the sum of its Processed metric (namespace
// AgentDLQ, dimension Pipeline, the embedded metric format documents of
// functions/batch). Triage states the SLO period's error budget spent
// with it (triage.Config.ProcessedFrom; both sources here are
// triage.ProcessedSource).
//
//   - CloudWatch reads the metric with GetMetricData, summed a minute over
//     the period: the triage Lambda's, and agentdlq triage's against AWS.
//   - EMFFile sums the EMF lines a local worker wrote (agentdlq work's
//     stderr, agentdlq demo's worker.log): locally there is no CloudWatch.
//
// It is its own package so that package triage imports no CloudWatch SDK:
// a face wires it.
//
// # Missing data
//
// The worker writes one document with Processed (0 or more) per
// invocation, so a minute without a datapoint is a minute without an
// invocation: CloudWatch stores no zeros, and a Sum over no datapoints has
// no value rather than 0. No datapoint in the whole period therefore means
// 0 processed (the SLO's own query says the same: FILL(processed, 0)), with
// two caveats a reader of a report should know. CloudWatch extracts EMF
// metrics from the worker's log group within about a minute or two, so the
// last minutes of the period may not be counted yet (the count is a lower
// bound at its end); and documents CloudWatch could not extract (a
// malformed or rejected log event) are missing without a trace. A failed
// read is never taken as 0: its error is the report's.
package processed
