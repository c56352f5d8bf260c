// Package e2e holds the end-to-end and fault-injection tests of the whole
// local pipeline: the real worker (functions/sampleworker) behind the local event
// source mapping (local/esm), on the SQS, DynamoDB and S3 emulators that
// `make test` starts, with triage and redrive reading and moving what the
// worker dead-lettered.
//
// Each test states the fault it injects and what must hold. Faults are
// injected at the SDK boundary by wrappers around the real clients (a DLQ
// send that fails, a delete that is lost, a ledger that is unavailable, a
// handler that crashes mid-batch), never by changing the code under test.
//
// The pipelines are pipelines.json's agent-tasks (and agent-steps for FIFO)
// with the demo's short timings (workload.Quick), and a visibility timeout of
// a few seconds where a test waits for redeliveries. Each test's pipeline is
// set up by local/runner, as the demo and the load bench set up
// theirs, on the test's own queues and ledger table.
package e2e
