//go:build unix

package main

import (
	"syscall"
	"time"
)

// selfCPU is the user plus system CPU time of this process.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
