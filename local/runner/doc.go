// Package runner sets up one pipeline on the local emulators the way
// `agentdlq demo`, `agentdlq bench` and the end-to-end tests all need it,
// so that the three run the same pipeline:
//
//   - StartEmulators starts private emulators (scripts/local.sh on free
//     ports of 127.0.0.1, a fresh state directory) and points this process
//     at them; a start that fails keeps its emulators' logs, prints the
//     failed one's last lines and is tried once more (StartEmulatorsWith);
//   - Setup creates the pipeline's hot queue and DLQ (or takes queues made
//     elsewhere), the ledger table, and builds the real sample worker over a
//     counting DynamoDB ledger (ledger.Counting);
//   - Local.Send puts tasks on the hot queue, Local.Drain drains it through
//     the local event source mapping (local/esm) with the worker,
//     counting handler invocations per message, and Local.Account says
//     where every message sent ended up (workload.Account).
//
// Every endpoint comes from the AWS configuration (AWS_ENDPOINT_URL and the
// per-service variables, or BaseEndpoint): a caller that puts a proxy in
// front of an emulator only changes the configuration it passes. Setup
// takes the pipeline as given; callers that want the demo's short timings
// apply workload.Quick first.
package runner
