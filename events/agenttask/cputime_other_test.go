//go:build !unix

package agenttask_test

import "time"

func processCPU() (time.Duration, bool) { return 0, false }
