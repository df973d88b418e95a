//go:build !unix

package sandbox_test

import "time"

// processCPU: not measured here (the benchmark reports 0).
func processCPU() time.Duration { return 0 }
