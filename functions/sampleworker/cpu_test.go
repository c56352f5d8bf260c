package sampleworker

import (
	"crypto/sha256"
	"testing"

	"github.com/agentdlq/agentdlq/bench/rusage"
)

// BenchmarkSHA256Baseline is the floor of a record's work: the SHA-256 of
// about 1 KB. On a shared machine, compare the worker's cpu-ns/record with it.
func BenchmarkSHA256Baseline(b *testing.B) {
	buf := make([]byte, 1024)
	cpu0 := rusage.CPUTime()
	for b.Loop() {
		sha256.Sum256(buf)
	}
	b.ReportMetric(float64((rusage.CPUTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}
