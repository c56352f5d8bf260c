//go:build !unix

package rusage

import "time"

// CPUTime is 0 where getrusage does not exist.
func CPUTime() time.Duration { return 0 }

// MaxRSSMB is 0 where getrusage does not exist.
func MaxRSSMB() float64 { return 0 }
