package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
)

// figure is one measured row: a server doing one workload over one transport with some callers.
type figure struct {
	Server     string  `json:"server"`
	Workload   string  `json:"workload"`
	Transport  string  `json:"transport"`
	Callers    int     `json:"callers"`
	Calls      int     `json:"calls"`
	CallsPerS  float64 `json:"calls_per_s"`
	P50Ms      float64 `json:"p50_ms"`
	P99Ms      float64 `json:"p99_ms"`
	ServerCPUs float64 `json:"server_cpu_us_per_call"` // CPU time of the server process per call, from /proc
	Load1      float64 `json:"load1"`                  // the 1-minute load average when the figure began
	Note       string  `json:"note,omitempty"`
}

// caller makes one call and says whether it succeeded.
type caller func() error

// measure runs warmup calls, then calls calls spread over len(callers) goroutines, each with one call in flight,
// and returns the figure. pid is the server process whose CPU time is read before and after.
func measure(pid int, calls, warmup int, callers []caller) (figure, error) {
	for i := range warmup {
		if err := callers[i%len(callers)](); err != nil {
			return figure{}, fmt.Errorf("warmup: %w", err)
		}
	}
	f := figure{Callers: len(callers), Calls: calls, Load1: load1()}
	per := calls / len(callers)
	lat := make([][]time.Duration, len(callers))
	cpu0, err := processCPU(pid)
	if err != nil {
		return f, err
	}
	// The callers run together, each until its calls are done or one fails; the first failure is the measure's.
	var g errgroup.Group
	start := time.Now()
	for c, call := range callers {
		g.Go(func() error {
			mine := make([]time.Duration, 0, per)
			for range per {
				t := time.Now()
				if err := call(); err != nil {
					return err
				}
				mine = append(mine, time.Since(t))
			}
			lat[c] = mine
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return f, err
	}
	wall := time.Since(start)
	cpu1, err := processCPU(pid)
	if err != nil {
		return f, err
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	q := func(p float64) float64 { return float64(all[int(p*float64(len(all)-1))].Microseconds()) / 1000 }
	f.Calls = len(all)
	f.CallsPerS = float64(len(all)) / wall.Seconds()
	f.P50Ms, f.P99Ms = q(0.50), q(0.99)
	f.ServerCPUs = float64((cpu1 - cpu0).Microseconds()) / float64(len(all))
	return f, nil
}

// clockTicks is USER_HZ, the unit of the CPU times in /proc/<pid>/stat: 100 on every Linux architecture Go runs on.
const clockTicks = 100

// processCPU is the user plus system CPU time pid has used, from /proc/<pid>/stat (10 ms resolution: measure
// enough calls that this is small beside the total).
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("server CPU time: %w", err)
	}
	// The command name (field 2) may hold spaces: fields are counted after its closing parenthesis.
	rest := string(b[strings.LastIndexByte(string(b), ')')+2:])
	fields := strings.Fields(rest)
	// utime and stime are fields 14 and 15, i.e. 11 and 12 after the name and state.
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("server CPU time: cannot parse /proc/%d/stat", pid)
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// load1 is the 1-minute load average, -1 when /proc/loadavg cannot be read.
func load1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	v, err := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	if err != nil {
		return -1
	}
	return v
}
