package sampleworker

import (
	"crypto/sha256"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's user+system CPU time (getrusage).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSHA256Baseline is the floor of a record's work: the SHA-256 of
// about 1 KB. On a shared machine, compare the worker's cpu-ns/record with it.
func BenchmarkSHA256Baseline(b *testing.B) {
	buf := make([]byte, 1024)
	cpu0 := cpuTime()
	for b.Loop() {
		sha256.Sum256(buf)
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}
