// Package capacity sizes a pipeline for a rate: Plan takes a pipeline
// definition (pipeline.Pipeline) and the inputs a platform team knows (the
// sustained task rate, the tool's latency at p50 and p99, the payload size)
// and returns a Plan: what to set (batch size, batching window, maximum
// concurrency or provisioned pollers, worker memory, the processor's
// Concurrency, reserved concurrency), what it predicts (Lambda
// concurrency, billed GB-seconds, ledger write units, cost per million
// tasks) and the quotas in order of how close the rate comes to them, each
// with its documented figure and source. It is arithmetic on documented
// figures and on the requests per task the load bench measured
// (MeasuredMostlyOK, `agentdlq local bench --mix cost`): no AWS calls, no
// SDK. `agentdlq capacity` prints it.
package capacity
