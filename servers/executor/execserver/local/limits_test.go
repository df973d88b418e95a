//go:build linux

package local

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/ciskip"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/sandboxtest"
)

// TestLocalTotalLimits: concurrent bombs, each within its own command's limit, must not pass the executor's total:
// the parent cgroup's count (read on the host while they run) stays at or under it, and the server answers.
func TestLocalTotalLimits(t *testing.T) {
	sandboxtest.RequireNamespaceMode(t)
	if !pidsCgroupAvailable(t) {
		ciskip.Skip(t, "no pids cgroup here: the total is RLIMIT_NPROC, which the containment suite's fork bomb exercises")
	}
	const perCommand, total = 200, 300
	b, ws := newLocalTestBackend(t, func(c *Config) {
		c.PidsLimit, c.TotalPidsLimit = perCommand, total
		c.MemoryLimit, c.TotalMemoryLimit = 512<<20, 700<<20
	})
	lb := b.(*localBackend)
	srv := sandboxtest.StartServer(t, b, ws, execserver.Config{}, nil)

	t.Run("pids", func(t *testing.T) {
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				sandboxtest.MustRun(t, srv.Session, protocol.RunCommandInput{Command: "b() { b | b & }; b; sleep 10", TimeoutSeconds: 4})
			})
		}
		peak := sampleMax(filepath.Join(lb.pids.Dir(), "pids.current"), 3*time.Second)
		wg.Wait()
		// The slack: a sandbox made for the next command is moved into its cgroup, which the kernel does not count
		// against pids.max. The backend does not make one when the total is reached, but between its look and the
		// move a bomb may take the last place: at most one keeper over per sandbox being made.
		if peak > total+nsPoolSize+1 {
			t.Errorf("3 fork bombs reached %d processes together; the total is %d (and %d sandboxes being made)", peak, total, nsPoolSize+1)
		}
		if peak <= perCommand {
			t.Logf("positive control weak: the bombs reached only %d processes together (one command's limit is %d)", peak, perCommand)
		}
		t.Logf("3 concurrent fork bombs: peak %d processes together (per command %d, total %d)", peak, perCommand, total)
		if out := sandboxtest.MustRun(t, srv.Session, protocol.RunCommandInput{Command: "echo alive"}); out.Stdout != "alive\n" {
			t.Errorf("server after the bombs: %+v", out)
		}
	})

	t.Run("memory", func(t *testing.T) {
		if _, err := os.Stat("/usr/bin/python3"); err != nil {
			ciskip.Skip(t, "no python3")
		}
		usage := filepath.Join(lb.mem.Dir(), "memory.max_usage_in_bytes")
		if _, err := os.Stat(usage); err != nil {
			usage = filepath.Join(lb.mem.Dir(), "memory.peak") // cgroup v2
		}
		// The commands start together, but two sandboxes are made ahead and the third on demand, seconds later on
		// a loaded machine: each holds its 400 MiB until the same moment, 8 s from now (the realtime clock is the
		// host's), not for 3 s of its own, so that three that hold them hold them at once. Each says from when to
		// when, which the check below holds them to.
		until := time.Now().Add(8 * time.Second).UnixNano()
		var wg sync.WaitGroup
		outs := make([]protocol.RunCommandOutput, 3)
		for i := range outs {
			wg.Go(func() {
				outs[i] = sandboxtest.MustRun(t, srv.Session, protocol.RunCommandInput{Command: fmt.Sprintf(`python3 -c "
import time
b = bytearray(400 << 20)
for i in range(0, len(b), 4096): b[i] = 1
print('HELD', time.time_ns(), flush=True); time.sleep(max(1, (%d - time.time_ns()) / 1e9)); print('UNTIL', time.time_ns())"`, until), TimeoutSeconds: 60})
			})
		}
		wg.Wait()
		held, lastFrom, firstUntil := 0, int64(0), int64(math.MaxInt64)
		for _, o := range outs {
			var from, until int64
			if n, _ := fmt.Sscanf(o.Stdout, "HELD %d\nUNTIL %d\n", &from, &until); n == 2 && o.ExitCode == 0 {
				held++
				lastFrom, firstUntil = max(lastFrom, from), min(firstUntil, until)
			}
		}
		switch {
		case held == 3 && lastFrom < firstUntil:
			t.Errorf("three commands each held 400 MiB together under a 700 MiB total")
		case held == 3:
			t.Errorf("the three commands each held 400 MiB, but one after another (the last began %v after the first ended): the attack did not run at once, the total was not tested",
				time.Duration(lastFrom-firstUntil))
		}
		if b, err := os.ReadFile(usage); err == nil {
			peak, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
			t.Logf("3 commands asking 400 MiB each: %d held it, peak %d MiB together (total 700 MiB)", held, peak>>20)
			if peak > 700<<20 {
				t.Errorf("the executor's commands used %d MiB together, over the 700 MiB total", peak>>20)
			}
		}
	})
}

// sampleMax reads an integer file every few milliseconds for d and returns the largest value.
func sampleMax(path string, d time.Duration) int {
	peak := 0
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if b, err := os.ReadFile(path); err == nil {
			if v, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && v > peak {
				peak = v
			}
		}
	}
	return peak
}

// TestLocalDiskCap: a command that takes the workspace past the disk cap is killed and told why; one that cleans
// up a workspace already over the cap runs. The positive control runs the same filler without a cap.
func TestLocalDiskCap(t *testing.T) {
	fill := "fallocate -l 200M big 2>/dev/null || head -c 200000000 /dev/zero > big; sleep 3; echo filled"
	for _, noNS := range []bool{false, true} {
		t.Run(fmt.Sprintf("no-namespaces=%v", noNS), func(t *testing.T) {
			modeWanted(t, noNS)
			if !noNS {
				sandboxtest.RequireNamespaceMode(t)
			}
			free, ws := newLocalTestBackend(t, func(c *Config) { c.NoNamespaces = noNS; c.MaxWorkspaceBytes = -1 })
			ctl := sandboxtest.MustRun(t, sandboxtest.StartServer(t, free, ws, execserver.Config{}, nil).Session, protocol.RunCommandInput{Command: fill, TimeoutSeconds: 60})
			if ctl.ExitCode != 0 || diskUsage(ws) < 150<<20 {
				t.Fatalf("positive control: without a cap the filler does not fill: %+v, %d bytes", ctl, diskUsage(ws))
			}

			b, ws := newLocalTestBackend(t, func(c *Config) { c.NoNamespaces = noNS; c.MaxWorkspaceBytes = 64 << 20 })
			srv := sandboxtest.StartServer(t, b, ws, execserver.Config{}, nil)
			out := sandboxtest.MustRun(t, srv.Session, protocol.RunCommandInput{Command: fill, TimeoutSeconds: 60})
			switch {
			case !noNS:
				// The namespace mode's layer: the write fails at the act (ENOSPC), nothing to kill.
				if !strings.Contains(out.Stderr, "No space left on device") {
					t.Errorf("a command past the disk cap was not stopped at the act: %+v", out)
				}
			case out.ExitCode != -1 || strings.Contains(out.Stdout, "filled") || !strings.Contains(out.Stderr, "disk cap of 67108864 bytes"):
				t.Errorf("a command past the disk cap: %+v", out)
			}
			if clean := sandboxtest.MustRun(t, srv.Session, protocol.RunCommandInput{Command: "rm -f big; echo cleaned"}); clean.Stdout != "cleaned\n" {
				t.Errorf("cleaning up: %+v", clean)
			}
			if used := diskUsage(ws); used > 64<<20 {
				t.Errorf("workspace still uses %d bytes", used)
			}
		})
	}
}

// TestLocalDiskCapHasNoHidingPlace: the three places bytes hid from the disk cap — the build cache, a file deleted
// while open, a folder made unreadable — are counted: each filler is killed at the cap, or in the namespace mode
// refused at the write by the command's layer. Positive control: the same
// filler without a cap keeps its bytes (in the cache, in the open file, in the locked folder).
func TestLocalDiskCapHasNoHidingPlace(t *testing.T) {
	fillers := map[string]string{
		"build cache":   `mkdir -p "$XDG_CACHE_HOME" && head -c 200000000 /dev/zero > "$XDG_CACHE_HOME/big"; sleep 3; echo filled`,
		"deleted file":  `python3 -c "import os,time; f=open('h','wb'); os.unlink('h'); [f.write(bytes(1<<20)) for _ in range(200)]; f.flush(); time.sleep(3); print('filled')"`,
		"locked folder": `mkdir locked && exec 3>locked/big && chmod 000 locked && head -c 200000000 /dev/zero >&3; sleep 3; echo filled`,
	}
	for _, noNS := range []bool{false, true} {
		for name, fill := range fillers {
			t.Run(fmt.Sprintf("no-namespaces=%v/%s", noNS, name), func(t *testing.T) {
				modeWanted(t, noNS)
				free, ws := newLocalTestBackend(t, func(c *Config) { c.NoNamespaces = noNS; c.MaxWorkspaceBytes = -1 })
				ctl := sandboxtest.MustRun(t, sandboxtest.StartServer(t, free, ws, execserver.Config{}, nil).Session, protocol.RunCommandInput{Command: fill, TimeoutSeconds: 60})
				if ctl.ExitCode != 0 || !strings.Contains(ctl.Stdout, "filled") {
					t.Fatalf("positive control: without a cap the filler runs to its end: %+v", ctl)
				}
				b, ws := newLocalTestBackend(t, func(c *Config) { c.NoNamespaces = noNS; c.MaxWorkspaceBytes = 64 << 20 })
				srv := sandboxtest.StartServer(t, b, ws, execserver.Config{}, nil)
				out := sandboxtest.MustRun(t, srv.Session, protocol.RunCommandInput{Command: fill, TimeoutSeconds: 60})
				// The layer (the workspace, and since the private folders are in it the build cache too) stops the
				// write at the act; the poll, still the second line, may kill the filler first on a loaded machine.
				atTheAct := !noNS && strings.Contains(out.Stderr, "No space left on device")
				if !atTheAct && (out.ExitCode != -1 || strings.Contains(out.Stdout, "filled") || !strings.Contains(out.Stderr, "disk cap of 67108864 bytes")) {
					t.Errorf("a filler hiding its bytes in the %s, past the disk cap: %+v", name, out)
				}
				_ = sandboxtest.MustRun(t, srv.Session, protocol.RunCommandInput{Command: `chmod 700 locked 2>/dev/null; rm -rf locked "$XDG_CACHE_HOME/big"`})
			})
		}
	}
}
