//go:build linux

package docker

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
)

// TestDockerTotalsCgroup: every container of a root server's backend runs under one cgroup limited to the total
// caps, and the kernel holds a command to that cgroup's pids limit even below its own container's. Positive
// control: with the parent's limit above the container's, the same command reaches its container's limit.
func TestDockerTotalsCgroup(t *testing.T) {
	requireRoot(t)
	const pids, totalPIDs, memory, totalMemory = 48, 96, 64 << 20, 256 << 20
	b, _ := newDockerTestBackend(t, func(c *Config) {
		c.PIDs, c.TotalPIDs, c.Memory, c.TotalMemory = pids, totalPIDs, memory, totalMemory
	})
	if b.cgroupParent == "" {
		t.Fatal("a root server over a cgroupfs Engine should start its containers under a cgroup of its own")
	}
	pidsDir, memDir := filepath.Join(cgroupRoot, "pids", b.cgroupParent), filepath.Join(cgroupRoot, "memory", b.cgroupParent)
	if _, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers")); err == nil {
		pidsDir, memDir = filepath.Join(cgroupRoot, b.cgroupParent), filepath.Join(cgroupRoot, b.cgroupParent)
	}
	for file, want := range map[string]string{filepath.Join(pidsDir, "pids.max"): strconv.Itoa(totalPIDs)} {
		if got, err := os.ReadFile(file); err != nil || strings.TrimSpace(string(got)) != want {
			t.Errorf("%s: %q %v, want %s", file, got, err, want)
		}
	}
	memFile := filepath.Join(memDir, "memory.limit_in_bytes")
	if _, err := os.Stat(memFile); err != nil {
		memFile = filepath.Join(memDir, "memory.max")
	}
	if got, _ := os.ReadFile(memFile); strings.TrimSpace(string(got)) != strconv.Itoa(totalMemory) {
		t.Errorf("%s: %q, want %d", memFile, got, totalMemory)
	}
	if code, out := dockerRun(t, b, backend.Request{Command: "cat /proc/self/cgroup"}); code != 0 || !strings.Contains(out, b.cgroupParent+"/") {
		t.Errorf("the command's cgroups are not under %s: %d %q", b.cgroupParent, code, out)
	}

	// Processes the command can hold: children forked until forks fail, then counted (perl: a shell exits at a
	// failed fork).
	if _, out := dockerRun(t, b, backend.Request{Command: "command -v perl || true"}); out == "" {
		t.Skip("the count is written in perl, which the test image does not have (debian:bookworm-slim has)")
	}
	const hold = `perl -e 'for (1..80) { my $p = fork; last unless defined $p; if (!$p) { sleep 60; exit } }
		opendir(my $d, "/proc"); print scalar(grep { /^\d+$/ } readdir $d), "\n"'`
	count := func() int {
		t.Helper()
		_, out := dockerRun(t, b, backend.Request{Command: hold})
		lines := strings.Split(strings.TrimSpace(out), "\n")
		n, err := strconv.Atoi(lines[len(lines)-1])
		if err != nil {
			t.Fatalf("count: %q", out)
		}
		return n
	}
	if n := count(); n < pids-8 {
		t.Errorf("positive control: the command held %d processes, want about its container's limit of %d", n, pids)
	}
	// The parent's limit below the container's, as the totals would be once other containers hold the rest.
	if err := os.WriteFile(filepath.Join(pidsDir, "pids.max"), []byte("20"), 0o644); err != nil {
		t.Fatal(err)
	}
	if n := count(); n > 20 {
		t.Errorf("with the totals' cgroup at 20 pids the command held %d processes", n)
	}
}
