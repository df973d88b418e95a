package cgroup

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/ciskip"
)

// newOrSkip makes a pids limit, or skips (fails under CI=true) where this machine lets the server make no cgroup.
func newOrSkip(t *testing.T, cfg Config) *Limit {
	t.Helper()
	cfg.Controller = "pids"
	c, err := New(cfg)
	if err != nil {
		ciskip.Skipf(t, "no pids cgroup here: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestPlaceLimitsEachCommand: a placed process is in a cgroup of its own whose pids.max is the per-command limit,
// under the parent that carries the total; the release removes that cgroup once the process is gone.
func TestPlaceLimitsEachCommand(t *testing.T) {
	c := newOrSkip(t, Config{Instance: "test-" + strconv.Itoa(os.Getpid()) + "-place", PerCommand: 7, Total: 50})
	if got := readFile(t, filepath.Join(c.Dir(), "pids.max")); got != "50" {
		t.Errorf("the parent's pids.max is %q, want the total 50", got)
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	release, err := c.Place(cmd.Process.Pid)
	if err != nil {
		cmd.Process.Kill()
		t.Fatal(err)
	}
	own := readFile(t, "/proc/"+strconv.Itoa(cmd.Process.Pid)+"/cgroup")
	dir := filepath.Join(c.Dir(), "1")
	if !strings.Contains(own, "/"+filepath.Base(c.Dir())+"/1") {
		t.Errorf("the process is not in its command's cgroup: %q", own)
	}
	if got := readFile(t, filepath.Join(dir, "pids.max")); got != "7" {
		t.Errorf("the command's pids.max is %q, want 7", got)
	}
	cmd.Process.Kill()
	cmd.Wait()
	release()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(dir); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the command's cgroup %s is still there after its release", dir)
		}
	}
}

// TestNewRemovesDeadInstances: New removes the parent cgroup (and its empty children) of a backend InstanceDead
// calls gone, and leaves a live one's (the control: the same kind of leftover, not called dead).
func TestNewRemovesDeadInstances(t *testing.T) {
	base, _, err := OwnDir("pids")
	if err != nil {
		ciskip.Skipf(t, "no pids cgroup here: %v", err)
	}
	tag := strconv.Itoa(os.Getpid())
	dead, alive := filepath.Join(base, Prefix+"dead-"+tag), filepath.Join(base, Prefix+"alive-"+tag)
	for _, d := range []string{filepath.Join(dead, "3"), alive} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			ciskip.Skipf(t, "cannot make cgroups here: %v", err)
		}
	}
	t.Cleanup(func() { os.Remove(alive); os.Remove(filepath.Join(dead, "3")); os.Remove(dead) })
	newOrSkip(t, Config{Instance: "test-" + tag + "-stale", PerCommand: 7,
		InstanceDead: func(label string) bool { return label == "dead-"+tag }})
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("the dead instance's cgroup is still there (%v)", err)
	}
	if _, err := os.Stat(alive); err != nil {
		t.Errorf("the live instance's cgroup was removed: %v", err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestNewRemovesADeadInstanceWhileItsCommandsDie: a server started just after the last one was killed finds that
// one's commands still dying (their parent-death signals are on the way), and a cgroup with a process in it cannot be
// removed yet; New still removes the dead instance's cgroups, once the process is gone. A removal tried once, at the
// start, left them for good (TestMainRestartCleansUp, about once in four runs here).
func TestNewRemovesADeadInstanceWhileItsCommandsDie(t *testing.T) {
	base, _, err := OwnDir("pids")
	if err != nil {
		ciskip.Skipf(t, "no pids cgroup here: %v", err)
	}
	tag := strconv.Itoa(os.Getpid())
	dead := filepath.Join(base, Prefix+"dying-"+tag)
	cmdDir := filepath.Join(dead, "5")
	if err := os.MkdirAll(cmdDir, 0o755); err != nil {
		ciskip.Skipf(t, "cannot make cgroups here: %v", err)
	}
	t.Cleanup(func() { os.Remove(cmdDir); os.Remove(dead) })
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cmdDir, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal(err)
	}
	// The command dies, and is reaped, a moment after the new server looks.
	gone := make(chan struct{})
	time.AfterFunc(300*time.Millisecond, func() {
		cmd.Process.Kill()
		cmd.Wait()
		close(gone)
	})
	t.Cleanup(func() { <-gone; removeCgroup(cmdDir) }) // before the removals above, when New left the cgroup
	c := newOrSkip(t, Config{Instance: "test-" + tag + "-dying", PerCommand: 7,
		InstanceDead: func(label string) bool { return label == "dying-"+tag }})
	t.Cleanup(func() { removeCgroup(c.Dir()) }) // Close removes it in the background: the last test's would be left
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("the dead instance's cgroup is still there once its command was gone (%v)", err)
	}
}
