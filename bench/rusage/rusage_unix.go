//go:build unix

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
