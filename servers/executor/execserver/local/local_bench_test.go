//go:build linux

package local

// Benchmarks of the local backend against the anchor, a bare fork/exec of `sh -c true`, in the same run:
//
//	go test ./servers/executor/execserver -run '^$' -bench 'RunTrue|ForkExecShTrue|LocalBackendTrue' -count 5
//
// Each also reports the median of its iterations (p50-ms), since the target is stated on medians.

import (
	"context"
	"io"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/sandboxtest"
)

// BenchmarkForkExecShTrue is the anchor: what running `true` costs with nothing around it.
func BenchmarkForkExecShTrue(b *testing.B) {
	timed(b, func() {
		if err := exec.Command("sh", "-c", "true").Run(); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkRunTrueMCP is `true` through the whole stack: go-sdk client, loopback HTTP, the executor, the local
// backend's child init with its namespaces, Landlock and capability drop.
func BenchmarkRunTrueMCP(b *testing.B) {
	be, ws := newLocalTestBackend(b, nil)
	srv := sandboxtest.StartServer(b, be, ws, execserver.Config{}, nil)
	in := protocol.RunCommandInput{Command: "true"}
	timed(b, func() {
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
			req := execserver.Request{Command: "true", Dir: ".", Timeout: time.Minute, Stdout: io.Discard, Stderr: io.Discard}
			timed(b, func() {
				if res, err := be.Run(context.Background(), req); err != nil || res.ExitCode != 0 {
					b.Fatalf("%+v %v", res, err)
				}
			})
		})
	}
}

// timed runs f b.N times and reports the median iteration as p50-ms.
func timed(b *testing.B, f func()) {
	d := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
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
