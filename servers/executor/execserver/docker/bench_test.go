//go:build linux

package docker

import (
	"context"
	"io"
	"os"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/sandboxtest"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// The anchor for the docker backend is a bare Engine API cycle over the same client: create, start, wait, logs,
// remove. Run them side by side in one run:
//
//	go test -run '^$' -bench 'BenchmarkDocker' -benchtime 40x ./execserver
//
// BenchmarkDockerRunVsBare alternates the two in every iteration, so both see the same machine load, and reports
// the ratio the target is stated in, cold and with a warm pool.

func BenchmarkDockerBareCycle(b *testing.B) {
	for _, network := range []string{"default", "none"} {
		b.Run("network="+network, func(b *testing.B) {
			be, _ := newDockerTestBackend(b, nil)
			b.ResetTimer()
			for b.Loop() {
				dockerBareCycle(b, be.cli, network)
			}
		})
	}
}

// BenchmarkDockerRunTrue runs `true` on the backend and through the MCP server, cold and from the warm pool. The
// warm-pool runs measure a call that finds the pool full, as an agent's call does after a model turn: the timer
// stops while the pool refills. Back to back, a pool drains and calls run at the cold speed.
func BenchmarkDockerRunTrue(b *testing.B) {
	for _, mode := range dockerModes {
		be, ws := newDockerTestBackend(b, func(c *Config) { c.WarmPool = mode.pool })
		refilled := func(b *testing.B) {
			if be.pool == nil {
				return
			}
			b.StopTimer()
			for len(be.pool.ready) < be.cfg.WarmPool {
				time.Sleep(5 * time.Millisecond)
			}
			b.StartTimer()
		}
		b.Run("backend/"+mode.name, func(b *testing.B) {
			for b.Loop() {
				refilled(b)
				dockerRunTrue(b, be)
			}
		})
		b.Run("mcp/"+mode.name, func(b *testing.B) {
			cs := sandboxtest.StartServer(b, be, ws, execserver.Config{}, nil).Session
			for b.Loop() {
				refilled(b)
				if out := sandboxtest.MustRun(b, cs, protocol.RunCommandInput{Command: "true"}); out.ExitCode != 0 {
					b.Fatalf("true: %+v", out)
				}
			}
		})
	}
}

func BenchmarkDockerRunVsBare(b *testing.B) {
	for _, mode := range dockerModes {
		b.Run(mode.name, func(b *testing.B) {
			be, _ := newDockerTestBackend(b, func(c *Config) { c.WarmPool = mode.pool })
			var bare, run time.Duration
			for b.Loop() {
				// With a pool, a run finds it full, as after a model turn; the refill is not timed.
				for be.pool != nil && len(be.pool.ready) < be.cfg.WarmPool {
					time.Sleep(5 * time.Millisecond)
				}
				t0 := time.Now()
				dockerBareCycle(b, be.cli, "default")
				t1 := time.Now()
				dockerRunTrue(b, be)
				bare, run = bare+t1.Sub(t0), run+time.Since(t1)
			}
			n := float64(b.N)
			b.ReportMetric(bare.Seconds()*1e3/n, "bare-ms/op")
			b.ReportMetric(run.Seconds()*1e3/n, "run-ms/op")
			b.ReportMetric(run.Seconds()/bare.Seconds(), "run/bare")
		})
	}
}

func dockerRunTrue(b *testing.B, be *dockerBackend) {
	res, err := be.Run(context.Background(), backend.Request{Command: "true", Dir: ".", Timeout: time.Minute, Stdout: io.Discard, Stderr: io.Discard})
	if err != nil || res.ExitCode != 0 {
		b.Fatalf("true: %+v, %v", res, err)
	}
}

// dockerBareCycle is `docker run --rm IMAGE sh -c true` on the Engine API with nothing of the backend's: no limits, no
// mounts, the default log driver (logs needs it) and the network the Engine picks unless network is "none".
func dockerBareCycle(b *testing.B, cli *client.Client, network string) {
	ctx := context.Background()
	hc := &container.HostConfig{}
	if network == "none" {
		hc.NetworkMode = "none"
	}
	c, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config:     &container.Config{Image: dockerTestImage(), Cmd: []string{"sh", "-c", "true"}},
		HostConfig: hc,
	})
	if err != nil {
		b.Fatal(err)
	}
	defer cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true})
	wait := cli.ContainerWait(ctx, c.ID, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})
	if _, err := cli.ContainerStart(ctx, c.ID, client.ContainerStartOptions{}); err != nil {
		b.Fatal(err)
	}
	select {
	case w := <-wait.Result:
		if w.StatusCode != 0 {
			b.Fatalf("exit %d", w.StatusCode)
		}
	case err := <-wait.Error:
		b.Fatal(err)
	}
	logs, err := cli.ContainerLogs(ctx, c.ID, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, logs)
	logs.Close()
	if _, err := cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true}); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkDockerLayer is what the workspace layer costs (a root server on the Docker host): the same command on a
// backend whose containers work on layers and on one without (NoWorkspaceLayer), alternating in every iteration so
// both see the same load: `true`, 10,000 small files written (and applied through the guard), and one 500 MB file
// (the sizes the workspace guard's benchmark states its cost in). Reports each one's ms/op and the ratio layer/none.
//
//	go test -run '^$' -bench 'BenchmarkDockerLayer' -benchtime 3x ./execserver/docker
func BenchmarkDockerLayer(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root: only a root server on the Docker host gives its containers layers")
	}
	for _, c := range []struct{ name, cmd string }{
		{"true", "true"},
		{"10000-files", "mkdir -p f && cd f && i=0; while [ $i -lt 10000 ]; do echo $i > f$i; i=$((i+1)); done"},
		{"500MB-file", "head -c 500000000 /dev/zero > big"},
	} {
		b.Run(c.name, func(b *testing.B) {
			layer, _ := newDockerTestBackend(b, nil)
			none, _ := newDockerTestBackend(b, func(c *Config) { c.NoWorkspaceLayer = true })
			if !layer.layered || none.layered {
				b.Fatalf("layered %v and %v: %s", layer.layered, none.layered, layer.layerNote)
			}
			do := func(be *dockerBackend, cmd string) {
				res, err := be.Run(context.Background(), backend.Request{Command: cmd, Dir: ".", Timeout: 5 * time.Minute,
					Stdout: io.Discard, Stderr: io.Discard})
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("%s: %+v, %v", cmd, res, err)
				}
			}
			// Timed: the command, and with the layer the apply of what it wrote. Not timed: the cleanup.
			run := func(be *dockerBackend) time.Duration {
				t0 := time.Now()
				do(be, c.cmd)
				d := time.Since(t0)
				do(be, "rm -rf f big")
				return d
			}
			var withLayer, without time.Duration
			for b.Loop() {
				without += run(none)
				withLayer += run(layer)
			}
			n := float64(b.N)
			b.ReportMetric(withLayer.Seconds()*1e3/n, "layer-ms/op")
			b.ReportMetric(without.Seconds()*1e3/n, "none-ms/op")
			b.ReportMetric(withLayer.Seconds()/without.Seconds(), "layer/none")
		})
	}
}
