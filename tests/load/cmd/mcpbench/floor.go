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
	return f.finish(lat, time.Since(start), selfCPU()-cpu0), nil
}

// readFloor is what the kernel alone takes to read the 16 KiB file the read workload reads (open, read, close),
// in this process: with the pipe floor's CPU per call, the floor under a server's CPU per 16 KiB read over stdio.
func readFloor(dir string, n int) (figure, error) {
	f := figure{Server: "kernel alone", Workload: "read 16 KiB", Transport: "syscalls", Callers: 1, Load1: load1(),
		Note: "open, read, close of the file: the floor under a read tool"}
	path := filepath.Join(dir, "read16k.txt")
	lat := make([]time.Duration, 0, n)
	cpu0 := selfCPU()
	start := time.Now()
	for range n {
		t := time.Now()
		if _, err := os.ReadFile(path); err != nil {
			return f, err
		}
		lat = append(lat, time.Since(t))
	}
	return f.finish(lat, time.Since(start), selfCPU()-cpu0), nil
}

// finish fills in the figure of calls timed in this process: their latencies, the wall time and the CPU they took.
func (f figure) finish(lat []time.Duration, wall, cpu time.Duration) figure {
	n := len(lat)
	slices.Sort(lat)
	f.Calls = n
	f.CallsPerS = float64(n) / wall.Seconds()
	f.P50Ms = float64(lat[n/2].Microseconds()) / 1000
	f.P99Ms = float64(lat[n*99/100].Microseconds()) / 1000
	f.ServerCPUs = float64(cpu.Microseconds()) / float64(n)
	return f
}
