// Package loadbench is the no-loss load bench behind `agentdlq bench`:
// Config in, Run, Result out (the shape of River's riverbench). It sends N
// agent tasks of the demo's mix (workload.Mix), or a workload made
// elsewhere, to a fresh hot queue of a pipeline on the local emulators
// (local/runner), drains it with the real worker through the
// local event source mapping with concurrent pollers, and accounts for every
// message: processed, dead-lettered by reason, in flight, lost (must be 0).
// It also reports the duplicate side effects recorded in the ledger (must
// be 0), the handler invocations per poison message (must be 1) and per
// transient message, the pipeline's messages per second, and the
// emulators' own raw rates measured in the same run, as ratios. Result.Failures
// lists the musts that failed.
//
// The figures are measurements, never assertions. Every endpoint comes from
// Config.AWS, so a caller can put a proxy in front of an emulator.
package loadbench
