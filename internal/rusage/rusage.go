// Package rusage reads the process's own resource usage (getrusage) for the
// two benches that report CPU time and peak memory per message:
// `agentdlq bench` (cmd/agentdlq) and the worker-only bench binary
// (functions/sampleworker/bench). It imports only the standard library, so
// the worker-only binary stays as lean as the Lambda it measures.
package rusage

import (
	"syscall"
	"time"
)

// CPUTime is the process's user+system CPU time so far (0 if getrusage
// fails).
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// MaxRSSMB is the process's peak resident set size in MiB (Linux reports
// KiB; 0 if getrusage fails).
func MaxRSSMB() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Maxrss) / 1024
}
