// Package rusage reads the process's own resource usage (getrusage) for the
// two benches that report CPU time and peak memory per message:
// `agentdlq bench` (cmd/agentdlq) and the worker-only bench binary
// (functions/sampleworker/bench). It imports only the standard library, so
// the worker-only binary stays as lean as the Lambda it measures. The
// benchmarks of the packages use CPUTime too. Where getrusage does not exist
// (not unix) CPUTime and MaxRSSMB are 0.
package rusage

import (
	"os"
	"strconv"
	"strings"
)

// ResetPeak resets the kernel's high-water mark of the resident set (Linux:
// writing 5 to /proc/self/clear_refs), so that StatusMB("VmHWM") reads the
// peak from now on. It reports whether it could.
func ResetPeak() bool {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// StatusMB reads a kB field of /proc/self/status ("VmRSS", "VmHWM") in
// MiB, or 0 where it cannot be read.
func StatusMB(field string) float64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				return 0
			}
			return kb / 1024
		}
	}
	return 0
}
