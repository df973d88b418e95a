//go:build linux

package local

import (
	"runtime"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/cgroup"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/sandboxtest"
)

// TestLocalContainment attacks the local backend in its normal mode: PID, mount and network namespaces, Landlock,
// no capabilities.
func TestLocalContainment(t *testing.T) {
	sandboxtest.RequireNamespaceMode(t)
	sandboxtest.RequireLandlock(t)
	sandboxtest.RunContainment(t, sandboxtest.Target{
		NewBackend: func(t *testing.T) (backend.Backend, string) {
			return newLocalTestBackend(t, func(c *Config) { c.MemoryLimit = 512 << 20; c.PidsLimit = 256 })
		},
		MemoryBomb: 1 << 30,
		// A pids cgroup where one can be made, RLIMIT_NPROC (per user namespace) where not.
		ForkBomb: true,
	})
}

// TestLocalContainmentWithoutNamespaces attacks the fallback used where namespaces are not permitted: a subreaper
// init, Landlock (with its network rules) and no capabilities.
func TestLocalContainmentWithoutNamespaces(t *testing.T) {
	sandboxtest.RequireLandlock(t)
	sandboxtest.RunContainment(t, sandboxtest.Target{
		NewBackend: func(t *testing.T) (backend.Backend, string) {
			return newLocalTestBackend(t, func(c *Config) { c.NoNamespaces = true; c.MemoryLimit = 512 << 20; c.PidsLimit = 256 })
		},
		MemoryBomb: 1 << 30,
		ForkBomb:   true,
		KnownGaps: map[string]string{
			"docker_socket":        "without a mount namespace /run cannot be masked, and Landlock ABI < 9 does not restrict connecting to UNIX sockets",
			"proc_other_processes": "without a PID namespace /proc is the host's: command lines of other processes are visible (not their environments or memory)",
			// Shown to work here when the server runs as the terminal's user (TestLocalContainmentAsOrdinaryUser):
			// the namespace mode's devpts of its own is the fix, and the fallback has no mount namespace for one.
			"host_terminal": "without a mount namespace the host's devpts is the only one: a user-started fallback's commands can open that user's terminals (Landlock cannot tell a command's own pseudo-terminal from another)",
		},
	})
}

// TestHugeOutputKeepsServerResponsive streams gigabytes while another call must be answered quickly, and the
// server's heap must not grow with the output.
func TestHugeOutputKeepsServerResponsive(t *testing.T) {
	srv, _ := localServer(t, execserver.Config{}, nil)
	var base runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&base)
	done := make(chan protocol.RunCommandOutput, 1)
	go func() {
		done <- sandboxtest.MustRun(t, srv.Session, protocol.RunCommandInput{Command: "head -c 1500000000 /dev/zero", TimeoutSeconds: 120})
	}()
	var peak uint64
	deadline := time.After(2 * time.Second)
	sample := time.NewTicker(20 * time.Millisecond)
	defer sample.Stop()
	pinged := false
	for {
		select {
		case out := <-done:
			if !out.StdoutTruncated || len(out.Stdout) > execserver.DefaultOutputCap+100 {
				t.Errorf("1.5 GB of output: truncated %v, %d bytes kept", out.StdoutTruncated, len(out.Stdout))
			}
			if !pinged {
				t.Logf("the huge command ended before the ping")
			}
			if grow := int64(peak) - int64(base.HeapInuse); grow > 64<<20 {
				t.Errorf("heap grew by %d MiB while 1.5 GB streamed", grow>>20)
			}
			t.Logf("heap in use: base %d MiB, peak %d MiB", base.HeapInuse>>20, peak>>20)
			return
		case <-sample.C:
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapInuse)
		case <-deadline:
			if pinged {
				continue
			}
			pinged = true
			start := time.Now()
			if out := sandboxtest.MustRun(t, srv.Session, protocol.RunCommandInput{Command: "echo ping"}); out.Stdout != "ping\n" {
				t.Errorf("ping: %+v", out)
			}
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("a call during the huge output took %v", took)
			}
		}
	}
}

// pidsCgroupAvailable says whether this machine lets the local backend limit processes; without that the fork
// bomb would only be stopped by the timeout, with the whole machine's CPU, so it is not run.
func pidsCgroupAvailable(t *testing.T) bool {
	c, err := cgroup.New(cgroup.Config{Controller: "pids", Instance: "probe-" + sandboxtest.RandomHex(4), PerCommand: 10})
	if err != nil {
		t.Logf("no pids cgroup here (%v): the fork bomb is not run", err)
		return false
	}
	c.Close()
	return true
}
