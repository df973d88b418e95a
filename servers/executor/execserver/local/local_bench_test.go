//go:build linux

package local

// Benchmarks of the local backend against the anchor, a bare fork/exec of `sh -c true`, in the same run:
//
//	cd servers/executor && go test ./execserver/local -run '^$' -bench 'RunTrueMCP|ForkExecShTrue|BwrapTrue|LocalBackendTrue' -count 5
//
// Each also reports the median of its iterations (p50-ms), since the target is stated on medians. The backend makes
// each command's sandbox ahead of it (package readypool), so each is measured two ways: "ready", a command that finds its
// sandbox made, as an agent's commands, seconds apart, do (the wait for the pool is outside the timer); and
// "back-to-back", commands with no pause, where making the next sandbox competes with running this command.

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/sandboxtest"
)

// BenchmarkForkExecShTrue is the anchor: what running `true` costs with nothing around it.
func BenchmarkForkExecShTrue(b *testing.B) {
	timed(b, nil, func() {
		if err := exec.Command("sh", "-c", "true").Run(); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkBwrapTrue is the other anchor: `true` in bubblewrap with every namespace unshared, a read-only /usr and
// /etc, the merged-/usr links, a /dev, a /proc and a /tmp of its own — what sandbox-runtime and Codex spawn for
// each command, in the shape of the local backend's minimal root. (They bind all of / read-only; on a machine with
// Docker's overlay mounts under /var/lib/docker bwrap cannot remount those, so the benchmark binds what a command
// needs, which is also the fairer comparison.)
func BenchmarkBwrapTrue(b *testing.B) {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		b.Skip("bubblewrap is not installed (apt-get install bubblewrap; scripts/setup-toolchains.sh installs it)")
	}
	args := []string{"--unshare-all", "--die-with-parent", "--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"}
	for _, l := range []string{"bin", "sbin", "lib", "lib64"} {
		if t, err := os.Readlink("/" + l); err == nil {
			args = append(args, "--symlink", t, "/"+l)
		}
	}
	args = append(args, "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "sh", "-c", "true")
	timed(b, nil, func() {
		if out, err := exec.Command(bwrap, args...).CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
	})
}

// BenchmarkRunTrueMCP is `true` through the whole stack: go-sdk client, loopback HTTP, the executor, the local
// backend's child init with its namespaces, Landlock and capability drop.
func BenchmarkRunTrueMCP(b *testing.B) {
	be, ws := newLocalTestBackend(b, nil)
	srv := sandboxtest.StartServer(b, be, ws, execserver.Config{}, nil)
	in := protocol.RunCommandInput{Command: "true"}
	paced(b, be, func() {
		out, res := sandboxtest.CallRun(b, context.Background(), srv.Session, in)
		if res.IsError || out.ExitCode != 0 {
			b.Fatalf("%+v", out)
		}
	})
}

// BenchmarkRunTrueMCPInRepository is BenchmarkRunTrueMCP in a workspace that is a git repository of 5,000 files in
// 250 folders: what the protected-files scan before and sweep after each command cost in a real project.
func BenchmarkRunTrueMCPInRepository(b *testing.B) {
	be, ws := newLocalTestBackend(b, nil)
	for d := range 250 {
		dir := filepath.Join(ws, "pkg", strconv.Itoa(d))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 20 {
			if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(f)+".go"), []byte("package p\n"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	if out, err := exec.Command("git", "-C", ws, "init", "-q").CombinedOutput(); err != nil {
		b.Fatalf("git init: %v %s", err, out)
	}
	srv := sandboxtest.StartServer(b, be, ws, execserver.Config{}, nil)
	in := protocol.RunCommandInput{Command: "true"}
	paced(b, be, func() {
		out, res := sandboxtest.CallRun(b, context.Background(), srv.Session, in)
		if res.IsError || out.ExitCode != 0 {
			b.Fatalf("%+v", out)
		}
	})
}

// BenchmarkLocalBackendTrue is the backend alone, without MCP, in both modes: what the confinement costs.
func BenchmarkLocalBackendTrue(b *testing.B) {
	for _, mode := range []struct {
		name string
		cfg  func(*Config)
	}{
		{"namespaces", nil},
		{"no-namespaces", func(c *Config) { c.NoNamespaces = true }},
	} {
		b.Run(mode.name, func(b *testing.B) {
			be, _ := newLocalTestBackend(b, mode.cfg)
			req := backend.Request{Command: "true", Dir: ".", Timeout: time.Minute, Stdout: io.Discard, Stderr: io.Discard}
			paced(b, be, func() {
				if res, err := be.Run(context.Background(), req); err != nil || res.ExitCode != 0 {
					b.Fatalf("%+v %v", res, err)
				}
			})
		})
	}
}

// paced runs f as two sub-benchmarks: "ready" waits, off the timer, until be's sandbox pool is full before each
// call; "back-to-back" does not wait.
func paced(b *testing.B, be backend.Backend, f func()) {
	lb := be.(*localBackend)
	ready := func() {
		if lb.nsPool != nil {
			lb.nsPool.WaitReady()
		} else {
			lb.inits.WaitReady()
		}
	}
	b.Run("ready", func(b *testing.B) { timed(b, ready, f) })
	b.Run("back-to-back", func(b *testing.B) { timed(b, nil, f) })
}

// timed runs f b.N times, each after wait (off the timer) when wait is not nil, and reports the median iteration
// as p50-ms.
func timed(b *testing.B, wait func(), f func()) {
	d := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		if wait != nil {
			b.StopTimer()
			wait()
			b.StartTimer()
		}
		t := time.Now()
		f()
		d = append(d, time.Since(t))
	}
	b.StopTimer()
	if len(d) > 0 {
		slices.Sort(d)
		b.ReportMetric(float64(d[len(d)/2].Microseconds())/1000, "p50-ms")
	}
}
