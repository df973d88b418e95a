//go:build windows

package sandbox_test

import (
	"syscall"
	"time"
)

// processCPU is the user plus system CPU time of this process (GetProcessTimes, in 100 ns units).
func processCPU() time.Duration {
	var creation, exit, kernel, user syscall.Filetime
	h, err := syscall.GetCurrentProcess()
	if err != nil || syscall.GetProcessTimes(h, &creation, &exit, &kernel, &user) != nil {
		return 0
	}
	ticks := func(ft syscall.Filetime) int64 { return int64(ft.HighDateTime)<<32 | int64(ft.LowDateTime) }
	return time.Duration((ticks(kernel) + ticks(user)) * 100)
}
