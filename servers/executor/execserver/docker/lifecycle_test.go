//go:build linux

package docker

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/moby/moby/client"
)

// TestDockerOneExecutorPerInstance: a second executor over the same workspace is refused, with a message
// naming -instance, and the first keeps working (the old start-up sweep removed its containers and control
// folder). Positive controls: with an instance of its own the second starts; once the first closed, so does a
// second of the same instance.
func TestDockerOneExecutorPerInstance(t *testing.T) {
	dockerRequire(t)
	ws := dockerWorkspace(t)
	state := t.TempDir()
	cfg := Config{Image: dockerTestImage(), WorkspaceHostDir: ws, CacheHostDir: "-", stateBase: state, Logger: slog.New(slog.DiscardHandler)}
	first, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	done := runInBackground(t, context.Background(), first.(*dockerBackend), backend.Request{Command: "sleep 3; echo survived", Dir: ".", Timeout: time.Minute})
	time.Sleep(time.Second)

	second, err := New(context.Background(), cfg)
	if err == nil {
		second.Close()
		t.Fatal("a second executor of the same instance started")
	}
	if !strings.Contains(err.Error(), "already serves instance") || !strings.Contains(err.Error(), "-instance NAME") ||
		!strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Errorf("refusal %q should say who holds the instance and name -instance", err)
	}
	if r := awaitRun(t, done, time.Minute); r.err != nil || r.res.ExitCode != 0 {
		t.Errorf("the first executor's command after the refused start: %+v", r)
	}
	if code, out := dockerRun(t, first.(*dockerBackend), backend.Request{Command: "echo still"}); code != 0 || out != "still\n" {
		t.Errorf("the first executor no longer works: %d %q", code, out)
	}

	own := cfg
	own.Instance = "own-" + first.(*dockerBackend).cfg.Instance
	b, err := New(context.Background(), own)
	if err != nil {
		t.Fatalf("an executor with its own instance: %v", err)
	}
	b.Close()
	first.Close()
	b, err = New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("after the first closed: %v", err)
	}
	b.Close()
}

// TestDockerWatchdog: an executor SIGKILLed while its command runs leaves no container running past the
// command's deadline, nor its network holder, although the command first sent SIGSTOP to its parent (which was the
// watchdog when that was timeout(1) in the container) and to every process it can signal. The executor is a child
// process (this test binary, running TestDockerWatchdogHelper). Positive controls: the command's signals were sent
// (kill reported success); just after its timeout the command still runs (the executor that would have killed it
// is dead), so it is the watchdog that ends it. The reaper process exits once its work is done.
func TestDockerWatchdog(t *testing.T) {
	cli := dockerRequire(t)
	ws := dockerWorkspace(t)
	instance := fmt.Sprintf("watchdog-test-%d", time.Now().UnixNano())
	ctx := context.Background()
	t.Cleanup(func() {
		list, _ := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", labelInstance+"="+instance)})
		for _, c := range list.Items {
			cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true})
		}
	})
	const timeout = 3 * time.Second
	state := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestDockerWatchdogHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), "GOALBOX_WATCHDOG_HELPER="+ws, "GOALBOX_WATCHDOG_INSTANCE="+instance,
		"GOALBOX_WATCHDOG_STATE="+state, "GOALBOX_WATCHDOG_TIMEOUT="+timeout.String())
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	dockerWaitFor(t, time.Minute, "the helper's command to start", func() bool {
		_, err := os.Stat(filepath.Join(ws, "ticks"))
		return err == nil
	})
	started := time.Now()
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	running := func(role string) int {
		list, err := cli.ContainerList(ctx, client.ContainerListOptions{Filters: make(client.Filters).Add("label",
			labelInstance+"="+instance, labelRole+"="+role)})
		if err != nil {
			t.Fatal(err)
		}
		return len(list.Items)
	}
	dockerWaitFor(t, 20*time.Second, "the dead executor's network holder to end", func() bool { return running(roleNetwork) == 0 })
	time.Sleep(time.Until(started.Add(timeout + time.Second)))
	if running(roleCommand) != 1 {
		t.Fatalf("positive control: the command should still run just past its timeout, with its executor dead")
	}
	dockerWaitFor(t, timeout+watchdogGrace+10*time.Second, "the watchdog to end the command", func() bool { return running(roleCommand) == 0 })
	if lasted := time.Since(started); lasted > timeout+watchdogGrace+5*time.Second {
		t.Errorf("the command ran %v, past its deadline of %v", lasted, timeout+watchdogGrace)
	}
	fi1, _ := os.Stat(filepath.Join(ws, "ticks"))
	time.Sleep(time.Second)
	if fi2, _ := os.Stat(filepath.Join(ws, "ticks")); fi2.Size() != fi1.Size() {
		t.Errorf("something still writes into the workspace")
	}
	if got, _ := os.ReadFile(filepath.Join(ws, "stopped")); string(got) != "0\n" {
		t.Errorf("positive control: the command's kill -STOP $PPID reported %q, want success (0)", got)
	}
	dockerWaitFor(t, 20*time.Second, "the reaper process to exit", func() bool {
		return len(processesWithEnv(t, reaperEnv+"=", "GOALBOX_WATCHDOG_INSTANCE="+instance)) == 0
	})
	// The command's layer (a root server's) went with its container: the reaper unmounted it.
	if mi, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(mi), state+"/") {
		t.Errorf("a layer of the dead executor is still mounted under its state folder %s", state)
	}
}

// processesWithEnv lists the host's processes whose environment holds every one of the given entries (prefixes).
func processesWithEnv(t *testing.T, entries ...string) []string {
	t.Helper()
	var found []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		env, err := os.ReadFile(d + "/environ")
		if err != nil {
			continue
		}
		all := true
		for _, e := range entries {
			if !strings.Contains("\x00"+string(env), "\x00"+e) {
				all = false
			}
		}
		if all {
			found = append(found, d)
		}
	}
	return found
}

// TestDockerWatchdogHelper is the executor TestDockerWatchdog kills; it does nothing unless started by it.
func TestDockerWatchdogHelper(t *testing.T) {
	ws := os.Getenv("GOALBOX_WATCHDOG_HELPER")
	if ws == "" {
		t.Skip("run by TestDockerWatchdog")
	}
	timeout, _ := time.ParseDuration(os.Getenv("GOALBOX_WATCHDOG_TIMEOUT"))
	b, err := New(context.Background(), Config{Image: dockerTestImage(), WorkspaceHostDir: ws, CacheHostDir: "-",
		Instance: os.Getenv("GOALBOX_WATCHDOG_INSTANCE"), stateBase: os.Getenv("GOALBOX_WATCHDOG_STATE"),
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	b.Run(context.Background(), backend.Request{Command: "kill -STOP $PPID; echo $? > stopped; kill -STOP -1; while :; do date >> ticks; sleep 0.2; done",
		Dir: ".", Timeout: timeout})
	t.Fatal("the helper should have been killed before its command's timeout")
}

// TestDockerDiskCap (items 3 and 4): without the workspace layer (a server that cannot mount what the Engine binds:
// NoWorkspaceLayer plays one), a command that takes the workspace, or the cache, past the disk cap is killed and
// told why. Positive control: without the cap the same command runs to its end. With the layer the cap holds at the
// write: TestDockerLayerGuard.
func TestDockerDiskCap(t *testing.T) {
	const capBytes = 64 << 20
	const fill = `fallocate -l 200M %s/big && sleep 8 && echo survived` // 16 checks: a loaded machine still makes one
	for _, where := range []string{".", "/cache"} {
		t.Run(where, func(t *testing.T) {
			b, _ := newDockerTestBackend(t, func(c *Config) {
				c.MaxWorkspaceBytes, c.CacheHostDir, c.NoWorkspaceLayer = capBytes, t.TempDir(), true
			})
			code, out := dockerRun(t, b, backend.Request{Command: fmt.Sprintf(fill, where)})
			if code != -1 || strings.Contains(out, "survived") || !strings.Contains(out, "past the disk cap of 67108864 bytes (-max-workspace-bytes)") {
				t.Errorf("past the cap: %d %q", code, out)
			}
			// A command that cleans up may run although the workspace is over the cap.
			if code, out := dockerRun(t, b, backend.Request{Command: "rm -f " + where + "/big && echo cleaned"}); code != 0 || out != "cleaned\n" {
				t.Errorf("clean-up: %d %q", code, out)
			}
			ctl, _ := newDockerTestBackend(t, func(c *Config) {
				c.MaxWorkspaceBytes, c.CacheHostDir, c.NoWorkspaceLayer = -1, t.TempDir(), true
			})
			if code, out := dockerRun(t, ctl, backend.Request{Command: fmt.Sprintf(fill, where) + "; rm -f " + where + "/big"}); code != 0 || !strings.Contains(out, "survived") {
				t.Errorf("positive control without a cap: %d %q", code, out)
			}
		})
	}
}

// TestDockerTotalCaps: containers are started only while their limits add up to no more than the total
// caps; past that a command waits, then is refused with a message naming the caps. Positive control: once a
// container ends, the next command runs.
func TestDockerTotalCaps(t *testing.T) {
	old := slotWait
	slotWait = 2 * time.Second
	t.Cleanup(func() { slotWait = old })
	const mem = 64 << 20
	b, _ := newDockerTestBackend(t, func(c *Config) { c.Memory = mem; c.TotalMemory = 2 * mem })
	if cap(b.slots) != 2 {
		t.Fatalf("%d slots, want 2", cap(b.slots))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var running []<-chan runResult
	for range 2 {
		running = append(running, runInBackground(t, ctx, b, backend.Request{Command: "sleep 30", Dir: ".", Timeout: time.Minute}))
	}
	dockerWaitFor(t, 30*time.Second, "two containers to run", func() bool { return len(dockerInstanceContainers(t, b)) == 2 })
	_, err := b.Run(context.Background(), backend.Request{Command: "true", Dir: ".", Timeout: time.Minute})
	if err == nil || !strings.Contains(err.Error(), "all 2 containers this executor may run at once are busy") ||
		!strings.Contains(err.Error(), "-total-memory-limit-mb") {
		t.Fatalf("a third container: %v, want a refusal naming the caps", err)
	}
	cancel()
	for _, r := range running {
		awaitRun(t, r, time.Minute)
	}
	if code, out := dockerRun(t, b, backend.Request{Command: "echo room"}); code != 0 || out != "room\n" {
		t.Errorf("positive control: %d %q", code, out)
	}
}
