package main

import (
	"os"
	"path/filepath"
	"slices"
	"time"
)

// durableWriteFloor is what the kernel alone takes for the durable write goalbox's write tool makes: a temporary
// file in the same folder, the content written, fsync, close, rename over the target. It is done here, in the
// benchmark's own process, so its latency is the floor under the tool's and the rest is the server's own cost.
// ServerCPUs is this process's CPU time per write (user and system), the kernel's share of the work.
func durableWriteFloor(dir, content string, n int) (figure, error) {
	f := figure{Server: "kernel alone", Workload: "write 4 KiB", Transport: "syscalls", Callers: 1, Load1: load1(),
		Note: "create temp, write, fsync, close, rename: the floor under a durable write"}
	target := filepath.Join(dir, "written-by-floor.txt")
	lat := make([]time.Duration, 0, n)
	cpu0 := selfCPU()
	start := time.Now()
	for range n {
		t := time.Now()
		tmp, err := os.CreateTemp(dir, ".floor-*")
		if err != nil {
			return f, err
		}
		if _, err := tmp.WriteString(content); err != nil {
			return f, err
		}
		if err := tmp.Sync(); err != nil {
			return f, err
		}
		if err := tmp.Close(); err != nil {
			return f, err
		}
		if err := os.Rename(tmp.Name(), target); err != nil {
			return f, err
		}
		lat = append(lat, time.Since(t))
	}
	wall := time.Since(start)
	slices.Sort(lat)
	f.Calls = n
	f.CallsPerS = float64(n) / wall.Seconds()
	f.P50Ms = float64(lat[n/2].Microseconds()) / 1000
	f.P99Ms = float64(lat[n*99/100].Microseconds()) / 1000
	f.ServerCPUs = float64((selfCPU() - cpu0).Microseconds()) / float64(n)
	return f, nil
}
