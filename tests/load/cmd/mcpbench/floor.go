package main

import (
	"os"
	"path/filepath"
	"slices"
	"time"
)

// The kernel's floors: the syscalls a tool makes, made here in the benchmark's own process, so that their latency
// is the floor under the tool's and their CPU time (this process's, user and system) the kernel's share of the
// work; the rest of a server's figure is the server's own cost.

// durableWriteFloor is the durable write goalbox's write tool makes: a temporary file in the same folder, the
// content written, fsync, close, rename over the target.
func durableWriteFloor(dir, content string, n int) (figure, error) {
	f := figure{Server: "kernel alone", Workload: "write 4 KiB", Transport: "syscalls",
		Note: "create temp, write, fsync, close, rename: the floor under a durable write"}
	target := filepath.Join(dir, "written-by-floor.txt")
	return f.timed(n, func() error {
		tmp, err := os.CreateTemp(dir, ".floor-*")
		if err != nil {
			return err
		}
		if _, err := tmp.WriteString(content); err != nil {
			return err
		}
		if err := tmp.Sync(); err != nil {
			return err
		}
		if err := tmp.Close(); err != nil {
			return err
		}
		return os.Rename(tmp.Name(), target)
	})
}

// readFloor reads the 16 KiB file the read workload reads (open, read, close): with the pipe floor's CPU per call,
// the floor under a server's CPU per 16 KiB read over stdio.
func readFloor(dir string, n int) (figure, error) {
	f := figure{Server: "kernel alone", Workload: "read 16 KiB", Transport: "syscalls",
		Note: "open, read, close of the file: the floor under a read tool"}
	path := filepath.Join(dir, "read16k.txt")
	return f.timed(n, func() error {
		_, err := os.ReadFile(path)
		return err
	})
}

// timed makes n calls of op in this process, one after another, and fills in the figure: latencies, calls/s and
// the CPU time per call.
func (f figure) timed(n int, op func() error) (figure, error) {
	f.Callers, f.Load1 = 1, load1()
	lat := make([]time.Duration, 0, n)
	cpu0 := selfCPU()
	start := time.Now()
	for range n {
		t := time.Now()
		if err := op(); err != nil {
			return f, err
		}
		lat = append(lat, time.Since(t))
	}
	wall, cpu := time.Since(start), selfCPU()-cpu0
	slices.Sort(lat)
	f.Calls = n
	f.CallsPerS = float64(n) / wall.Seconds()
	f.P50Ms = float64(lat[n/2].Microseconds()) / 1000
	f.P99Ms = float64(lat[n*99/100].Microseconds()) / 1000
	f.ServerCPUs = float64(cpu.Microseconds()) / float64(n)
	return f, nil
}
