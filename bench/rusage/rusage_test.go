package rusage

import (
	"crypto/sha256"
	"os"
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

// TestPeakAndStatus: on Linux the high-water mark can be reset and read,
// and it is at least the resident set; a field that does not exist reads 0.
func TestPeakAndStatus(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc/self/status: not Linux")
	}
	if !ResetPeak() {
		t.Fatal("ResetPeak: /proc/self/clear_refs could not be written")
	}
	buf := make([]byte, 32<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	rss, hwm := StatusMB("VmRSS"), StatusMB("VmHWM")
	if rss < 32 || hwm < rss {
		t.Errorf("after touching 32 MiB: VmRSS %.1f MiB, VmHWM %.1f MiB", rss, hwm)
	}
	if v := StatusMB("NoSuchField"); v != 0 {
		t.Errorf("StatusMB of a missing field = %v", v)
	}
	t.Logf("rss %.1f MiB, peak %.1f MiB (%d)", rss, hwm, buf[len(buf)-1])
}
