package rusage

import (
	"crypto/sha256"
	"testing"
)

// TestReadsOwnUsage: a running test process has used CPU and holds memory,
// and CPU time never goes back.
func TestReadsOwnUsage(t *testing.T) {
	c0 := CPUTime()
	sum := sha256.Sum256(nil)
	for range 20000 {
		sum = sha256.Sum256(sum[:])
	}
	c1 := CPUTime()
	if c0 <= 0 || c1 < c0 {
		t.Errorf("CPUTime: %v then %v", c0, c1)
	}
	if rss := MaxRSSMB(); rss <= 0 {
		t.Errorf("MaxRSSMB = %v", rss)
	}
	t.Logf("cpu %v, peak rss %.1f MiB (digest %x)", c1, MaxRSSMB(), sum[:4])
}
