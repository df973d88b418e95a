//go:build linux

package docker

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/sandboxtest"
)

// TestDockerContainment attacks the docker backend through the real MCP server. After each attack the server must
// still answer, the workspace sentinel must be intact, nothing next to the workspace may have changed, and no
// container may be left.
func TestDockerContainment(t *testing.T) {
	for _, mode := range dockerModes {
		t.Run(mode.name, func(t *testing.T) { testDockerContainment(t, mode.pool) })
	}
}

func testDockerContainment(t *testing.T, pool int) {
	const secret = "GOALBOX-DOCKER-TEST-SECRET-8c1f"
	t.Setenv("GOALBOX_TEST_API_KEY", secret) // the server's own environment

	// Small limits make the bombs quick; the defaults are enforced the same way.
	const pids, memory = 128, 256 << 20
	b, ws := newDockerTestBackend(t, func(c *Config) {
		c.PIDs = pids
		c.Memory = memory
		c.TmpfsSize = 64 << 20
		c.WarmPool = pool
	})
	outside := filepath.Join(filepath.Dir(ws), "outside.txt")
	if err := os.WriteFile(outside, []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	beforeOutside := dockerListDir(t, filepath.Dir(ws))

	srv := sandboxtest.StartServer(t, b, ws, execserver.Config{OutputCap: 8 << 10}, nil)
	cs := srv.Session
	mcpPort := dockerPortOf(t, srv.Addr)

	// Another listener on the host, on all interfaces, counting every connection it gets.
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	lnPort := ln.Addr().(*net.TCPAddr).Port

	// Sleep lengths unique to this run find its processes on the host, whatever else runs there.
	marker := dockerMarker()
	attacks := []struct {
		name  string
		in    protocol.RunCommandInput
		check func(t *testing.T, out protocol.RunCommandOutput)
	}{
		{"write outside the workspace",
			protocol.RunCommandInput{Command: `for f in /evil /etc/evil /usr/bin/evil /workspace/../evil /proc/sys/kernel/evil /sys/evil /dev/evil; do
				(echo x > "$f") 2>/dev/null && echo "WROTE $f"; done
				cat /workspace/../outside.txt 2>/dev/null; mount -t tmpfs t /mnt 2>/dev/null && echo MOUNTED
				echo temp > /tmp/left-behind; echo done`},
			func(t *testing.T, out protocol.RunCommandOutput) {
				if out.ExitCode != 0 || out.Stdout != "done\n" {
					t.Errorf("got %+v", out)
				}
			}},
		{"tmp does not outlive the command",
			protocol.RunCommandInput{Command: `test -e /tmp/left-behind && echo FOUND; echo checked`},
			func(t *testing.T, out protocol.RunCommandOutput) {
				if out.Stdout != "checked\n" {
					t.Errorf("got %+v", out)
				}
			}},
		{"read the server's environment",
			protocol.RunCommandInput{Command: fmt.Sprintf(`env; cat /proc/1/environ /proc/%d/environ 2>&1 | tr '\0' '\n'
				for e in /proc/[0-9]*/environ; do tr '\0' '\n' < "$e"; done 2>&1; ls /proc | grep -c '^[0-9]' `, os.Getpid())},
			func(t *testing.T, out protocol.RunCommandOutput) {
				if strings.Contains(out.Stdout+out.Stderr, secret) {
					t.Errorf("the secret leaked into the container: %+v", out)
				}
				// Only the container's own processes are visible: sh, ls, grep, and the loop's tr.
				lines := strings.Split(strings.TrimSpace(out.Stdout), "\n")
				if n, err := strconv.Atoi(lines[len(lines)-1]); err != nil || n > 8 {
					t.Errorf("the container sees %q processes, want only its own", lines[len(lines)-1])
				}
			}},
		{"network egress",
			// bash's /dev/tcp where the image has bash (Debian), nc where it has that (busybox).
			protocol.RunCommandInput{Command: fmt.Sprintf(`ls /sys/class/net
				if command -v bash >/dev/null; then echo tool; try() { timeout 3 bash -c "echo x > /dev/tcp/$1/$2"; }
				elif command -v nc >/dev/null; then echo tool; try() { echo x | timeout 3 nc "$1" "$2"; }
				fi
				for a in "127.0.0.1 %d" "127.0.0.1 %d" "172.17.0.1 %d" "172.17.0.1 %d" "1.1.1.1 53" "8.8.8.8 443"; do
					try $a 2>/dev/null && echo "CONNECTED $a"; done; echo tried`,
				mcpPort, lnPort, mcpPort, lnPort)},
			func(t *testing.T, out protocol.RunCommandOutput) {
				if out.Stdout != "lo\ntool\ntried\n" {
					t.Errorf("want only loopback, a tool to connect with, and no connection; got %+v", out)
				}
				if n := accepted.Load(); n != 0 {
					t.Errorf("the host listener accepted %d connections from the container", n)
				}
			}},
		{"orphaned background processes",
			protocol.RunCommandInput{Command: fmt.Sprintf(`(sleep %[1]s1 &); setsid sleep %[1]s2 & nohup sleep %[1]s3 >/dev/null 2>&1 &
				sh -c 'sleep %[1]s4 &' ; echo spawned`, marker)},
			func(t *testing.T, out protocol.RunCommandOutput) {
				if out.ExitCode != 0 || out.Stdout != "spawned\n" {
					t.Errorf("got %+v", out)
				}
				if left := dockerHostProcesses(t, "sleep "+marker); len(left) != 0 {
					t.Errorf("background processes outlived the call: %v", left)
				}
			}},
		{"endless loop",
			protocol.RunCommandInput{Command: `while :; do :; done`, TimeoutSeconds: 2},
			func(t *testing.T, out protocol.RunCommandOutput) {
				if out.ExitCode != -1 || !out.TimedOut {
					t.Errorf("got %+v", out)
				}
			}},
		{"endless output",
			protocol.RunCommandInput{Command: `yes`, TimeoutSeconds: 4},
			func(t *testing.T, out protocol.RunCommandOutput) {
				if out.ExitCode != -1 || !out.TimedOut || !out.StdoutTruncated || !strings.HasPrefix(out.Stdout, "y\ny\n") || len(out.Stdout) > 16<<10 {
					t.Errorf("got exit %d timed out %v truncated %v, %d bytes", out.ExitCode, out.TimedOut, out.StdoutTruncated, len(out.Stdout))
				}
			}},
		{"fork bomb",
			// until: the container lives on while the bomb holds every pid (sleep cannot fork), so the sampler sees
			// it; the bomb once ended in 0.2 s, between two samples.
			protocol.RunCommandInput{Command: `f() { f | f & }; f; until sleep 3; do :; done; echo survived`, TimeoutSeconds: 6},
			func(t *testing.T, out protocol.RunCommandOutput) {
				// The shell reports failed forks: the pids limit is what stopped the bomb.
				if !strings.Contains(out.Stderr, "fork") {
					t.Errorf("no failed fork reported; stderr %.300q", out.Stderr)
				}
			}},
		{"memory bomb",
			protocol.RunCommandInput{Command: `x=$(head -c 2000000000 /dev/zero | tr '\0' a); echo ${#x}`, TimeoutSeconds: 60},
			func(t *testing.T, out protocol.RunCommandOutput) {
				if out.ExitCode != 137 || out.TimedOut || !strings.Contains(out.Stderr, "out-of-memory") {
					t.Errorf("want the OOM killer's 137 and a note on stderr, got %+v", out)
				}
			}},
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			var stopSampling func() pidsSample
			if a.name == "fork bomb" {
				stopSampling = dockerSamplePids(t, b)
			}
			a.check(t, sandboxtest.MustRun(t, cs, a.in))
			if stopSampling != nil {
				// The bomb really forked up to the limit (the pids controller refused forks), and no container
				// ever held more tasks than the limit.
				s := stopSampling()
				t.Logf("fork bomb: a container held at most %d tasks (limit %d); the limit refused %d forks", s.peak, pids, s.refused)
				if s.refused == 0 {
					t.Errorf("the pids limit refused no fork during the fork bomb: the bomb never reached it")
				}
				if s.peak > pids {
					t.Errorf("a container held %d tasks, above the limit %d", s.peak, pids)
				}
			}
			if out := sandboxtest.MustRun(t, cs, protocol.RunCommandInput{Command: "echo alive"}); out.ExitCode != 0 || out.Stdout != "alive\n" {
				t.Fatalf("the server does not answer after the attack: %+v", out)
			}
			dockerCheckSentinel(t, ws)
			if after := dockerListDir(t, filepath.Dir(ws)); !slices.Equal(after, beforeOutside) {
				t.Errorf("the folder around the workspace changed: %v, was %v", after, beforeOutside)
			}
			if b, err := os.ReadFile(outside); err != nil || string(b) != secret {
				t.Errorf("file outside the workspace changed: %q, %v", b, err)
			}
			dockerSettled(t, b)
		})
	}
}

// TestDockerContainmentShared runs the backend-neutral containment table on the docker backend. Its memory bomb
// needs python3, which only some images have; TestDockerContainment's shell memory bomb runs on every image.
func TestDockerContainmentShared(t *testing.T) {
	probe, _ := newDockerTestBackend(t, nil)
	var out strings.Builder
	if _, err := probe.Run(context.Background(), backend.Request{Command: "command -v python3 || true", Dir: ".", Timeout: time.Minute, Stdout: &out}); err != nil {
		t.Fatal(err)
	}
	var memoryBomb int64
	if out.Len() > 0 {
		memoryBomb = 1 << 30
	}
	sandboxtest.RunContainment(t, sandboxtest.Target{
		NewBackend: func(t *testing.T) (backend.Backend, string) {
			return newDockerTestBackend(t, func(c *Config) { c.PIDs = 128; c.Memory = 256 << 20 })
		},
		MemoryBomb: memoryBomb,
		ForkBomb:   true,
		NoPython:   memoryBomb == 0,
	})
}

func dockerPortOf(t testing.TB, addr string) int {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// dockerListDir names the entries of dir with their sizes: a cheap fingerprint of the folder around the workspace.
func dockerListDir(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, fmt.Sprintf("%s:%v:%d", e.Name(), fi.Mode(), fi.Size()))
	}
	return names
}

// dockerHostProcesses lists the host's processes whose command line contains s.
func dockerHostProcesses(t testing.TB, s string) []string {
	t.Helper()
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var found []string
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil {
			continue
		}
		cmd := strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
		if strings.Contains(cmd, s) {
			found = append(found, filepath.Base(d)+": "+cmd)
		}
	}
	return found
}

// pidsSample is what the pids cgroups of a backend's containers showed while a sampler ran.
type pidsSample struct {
	peak    int // the most tasks one container held at once
	refused int // forks the pids controller refused, over all containers (the "max" count of pids.events)
}

// dockerSamplePids reads, every 20 ms until the returned function is called, the pids cgroup of each of b's
// containers: how many tasks it holds and how many forks its limit has refused. The kernel keeps both counts, so
// the result does not depend on catching the bomb's processes in a scan of /proc, which a loaded machine misses.
func dockerSamplePids(t testing.TB, b *dockerBackend) func() pidsSample {
	dirs := map[string]string{} // container ID -> its pids cgroup directory
	refused := map[string]int{}
	refresh := func() {
		for _, c := range dockerInstanceContainers(t, b) {
			if _, ok := dirs[c.ID]; ok {
				continue
			}
			info, err := b.cli.ContainerInspect(context.Background(), c.ID, client.ContainerInspectOptions{})
			if err != nil || info.Container.State == nil || info.Container.State.Pid == 0 {
				continue // created but not started yet, or already gone
			}
			if dir := pidsCgroupDir(info.Container.State.Pid); dir != "" {
				dirs[c.ID] = dir
			}
		}
	}
	var (
		sample pidsSample
		stop   = make(chan struct{})
		done   = make(chan struct{})
	)
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if i%5 == 0 { // a new command's container appears once; the list is an Engine call
				refresh()
			}
			for id, dir := range dirs {
				if n, err := readCgroupInt(filepath.Join(dir, "pids.current")); err == nil {
					sample.peak = max(sample.peak, n)
				}
				if ev, err := os.ReadFile(filepath.Join(dir, "pids.events")); err == nil {
					for line := range strings.Lines(string(ev)) {
						if n, ok := strings.CutPrefix(strings.TrimSpace(line), "max "); ok {
							v, _ := strconv.Atoi(n)
							refused[id] = max(refused[id], v)
						}
					}
				}
			}
		}
	}()
	return func() pidsSample {
		close(stop)
		<-done
		for _, n := range refused {
			sample.refused += n
		}
		return sample
	}
}

// pidsCgroupDir finds the pids cgroup directory of process pid, on cgroup v1 (a "pids" hierarchy) or v2.
func pidsCgroupDir(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return ""
	}
	for line := range strings.Lines(string(b)) {
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if slices.Contains(strings.Split(parts[1], ","), "pids") {
			return filepath.Join("/sys/fs/cgroup/pids", parts[2])
		}
		if parts[0] == "0" && parts[1] == "" {
			if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
				return filepath.Join("/sys/fs/cgroup", parts[2])
			}
		}
	}
	return ""
}

func readCgroupInt(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}
