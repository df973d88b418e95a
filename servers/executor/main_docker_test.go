package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/goalbox/goalbox/pkg/mcpserve/mcptest"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver/docker/dockertest"
	"github.com/moby/moby/client"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// dockerForMain returns a client to the Engine and the image to run commands in, or skips the test (fails it when
// CI=true) when there is no Engine or no image.
func dockerForMain(t *testing.T) (*client.Client, string) {
	t.Helper()
	return dockertest.Require(t)
}

// TestMainDockerRestartRemovesLeftovers kills a docker-backend executor with SIGKILL while a process runs. Its
// command's container and its network holder outlive it, and so does the process (the positive control); the next
// executor over the same workspace removes both before it serves, which ends the process. That executor's own
// holder is removed when it shuts down.
func TestMainDockerRestartRemovesLeftovers(t *testing.T) {
	cli, image := dockerForMain(t)
	ws, cache := t.TempDir(), t.TempDir()
	if os.Getuid() == 0 {
		// Commands never run as root: give the workspace to a plain user, who must reach it.
		for _, d := range []string{filepath.Dir(ws), ws} {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chown(ws, 4242, 4242); err != nil {
			t.Fatal(err)
		}
	}
	start := func() *mainProc {
		t.Helper()
		// A file, not a pipe: Wait then does not wait for a copy of the log.
		logs, err := os.CreateTemp(t.TempDir(), "executor-*.log")
		if err != nil {
			t.Fatal(err)
		}
		defer logs.Close()
		cmd := executor(t, nil, "-backend", "docker", "-image", image, "-workspace", ws, "-addr", mcptest.AnyPort, "-cache-dir", cache)
		cmd.Stderr = logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		p := &mainProc{cmd: cmd, done: make(chan struct{})}
		go func() { p.err = cmd.Wait(); close(p.done) }()
		t.Cleanup(func() { _ = cmd.Process.Kill(); <-p.done })
		var health struct {
			Confinement protocol.Confinement `json:"confinement"`
		}
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			b, _ := os.ReadFile(logs.Name())
			if p.addr = mcptest.ServingAddr(string(b)); p.addr != "" {
				if resp, err := http.Get("http://" + p.addr + protocol.HealthPath); err == nil {
					err = json.NewDecoder(resp.Body).Decode(&health)
					resp.Body.Close()
					if err == nil {
						break
					}
				}
			}
			if time.Now().After(deadline) {
				b, _ := os.ReadFile(logs.Name())
				t.Fatalf("the executor did not start:\n%s", b)
			}
		}
		if health.Confinement.DockerConfinement == nil || health.Confinement.Instance == "" {
			t.Fatalf("health has no docker instance: %+v", health.Confinement)
		}
		p.instance = health.Confinement.Instance
		return p
	}
	containers := func(instance string) map[string]string { // ID → role, running or not
		t.Helper()
		list, err := cli.ContainerList(context.Background(), client.ContainerListOptions{All: true,
			Filters: make(client.Filters).Add("label", "goalbox.executor.instance="+instance)})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, c := range list.Items {
			got[c.ID] = c.Labels["goalbox.executor.role"]
		}
		return got
	}

	first := start()
	instance := first.instance
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: "http://" + first.addr + protocol.EndpointPath, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	marker := fmt.Sprintf("500.%d", time.Now().UnixNano()%1e6)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: protocol.ToolStartProcess,
		Arguments: protocol.StartProcessInput{Command: "exec sleep " + marker}})
	if err != nil || res.IsError {
		t.Fatalf("start a process: %v %+v", err, res)
	}
	for deadline := time.Now().Add(30 * time.Second); len(markedProcesses("sleep\x00"+marker)) == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the process did not start")
		}
	}
	left := containers(instance)
	roles := map[string]int{}
	for _, r := range left {
		roles[r]++
	}
	if len(left) != 2 || roles["command"] != 1 || roles["network"] != 1 {
		t.Fatalf("want the process's container and the network holder, got %v", left)
	}

	_ = first.cmd.Process.Kill()
	<-first.done
	// Positive control: nothing removed them; the process runs on in its container.
	time.Sleep(time.Second)
	if got := containers(instance); len(got) != 2 || len(markedProcesses("sleep\x00"+marker)) == 0 {
		t.Fatalf("the killed executor's containers or process did not outlive it: %v, %v", got, markedProcesses("sleep\x00"+marker))
	}

	second := start()
	if second.instance != instance {
		t.Fatalf("the second executor's instance is %q, the first's %q", second.instance, instance)
	}
	now := containers(instance)
	for id := range left {
		if _, ok := now[id]; ok {
			t.Errorf("container %.12s (%s) of the killed executor is still there", id, left[id])
		}
	}
	if len(now) != 1 {
		t.Errorf("want only the new executor's network holder, got %v", now)
	}
	for id, role := range now {
		if role != "network" {
			t.Errorf("container %.12s has role %q, want the new network holder", id, role)
		}
	}
	if p := markedProcesses("sleep\x00" + marker); len(p) != 0 {
		t.Errorf("the killed executor's process survived the restart: %v", p)
	}

	// A clean shutdown removes the holder.
	_ = second.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-second.done:
		if second.err != nil {
			t.Errorf("exit after SIGTERM: %v", second.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no exit after SIGTERM")
	}
	if got := containers(instance); len(got) != 0 {
		t.Errorf("containers left after a clean shutdown: %v", got)
	}
	for id := range now {
		if _, err := cli.ContainerInspect(context.Background(), id, client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
			t.Errorf("the network holder %.12s: %v, want it removed", id, err)
		}
	}
}

// mainProc is an executor started by a test; done is closed when it has exited, with Wait's error in err.
type mainProc struct {
	cmd      *exec.Cmd
	done     chan struct{}
	err      error
	addr     string
	instance string
}
