package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/agent/loop"
	"github.com/goalbox/goalbox/agent/loop/looptest"
	"github.com/goalbox/goalbox/servers/executor/assemble"
	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/goalbox/goalbox/servers/executor/execserver/docker"
	"github.com/goalbox/goalbox/servers/executor/execserver/docker/dockertest"
	"github.com/goalbox/goalbox/servers/executor/execserver/local"
	"github.com/moby/moby/client"
)

// TestGoalOnDockerAsOnAMac runs the README's first command as a Mac with Docker Desktop does: no -backend, the
// local backend unusable (as it is off Linux), so the in-process executor's automatic choice takes the docker
// backend. The scripted model writes a file and runs a command that reads it and writes another; -verify checks
// both in the sandbox; exit 0. Every command ran in a container (its host name is the network holder's), and none
// of the backend's containers is left once the agent has exited.
func TestGoalOnDockerAsOnAMac(t *testing.T) {
	cli, image := dockertest.Require(t)
	goalExecutorBuild = []assemble.Option{assemble.WithLocalStarter(func(local.Config, *slog.Logger) (backend.Backend, error) {
		return nil, errors.New("local backend: needs Linux (made unusable by the test, as on macOS)")
	})}
	t.Cleanup(func() { goalExecutorBuild = nil })

	var ws string
	model := looptest.New(t,
		looptest.Step{Calls: []looptest.Call{write("add.sh", addScript), write("test.sh", testScript)}},
		looptest.Step{Calls: []looptest.Call{command("sh test.sh > result.txt && echo ran on $(hostname) as $(id -u) >> result.txt && cat result.txt")}},
		looptest.Step{Content: "Done: add.sh passes its test."},
	)
	r := runAgent(t, model, "", func(dir string) {
		ws = dir
		if os.Getuid() == 0 {
			// Commands never run as root: the docker backend runs them as the workspace's owner, a plain user here
			// as on a Mac, who must reach the workspace.
			if err := os.Chmod(filepath.Dir(dir), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(dir, 4242, 4242); err != nil {
				t.Fatal(err)
			}
		}
	}, "-goal", "Write an add function in add.sh with a test", "-image", image,
		"-verify", "sh test.sh && grep -qx PASS result.txt && grep -q 'ran on sandbox as 4242' result.txt")
	r.want(t, exitMet, loop.OutcomeMet, loop.StopDone)
	if !strings.Contains(r.stderr, "commands: backend docker (auto: the local backend cannot run here (needs Linux (made unusable by the test") ||
		!strings.Contains(r.stderr, "a Docker Engine answers at ") || !strings.Contains(r.stderr, "image="+image) {
		t.Errorf("the sandbox line does not show the automatic choice of docker:\n%s", r.stderr)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "result.txt")); err != nil || !strings.Contains(string(b), "PASS\nran on sandbox as 4242") {
		t.Errorf("result.txt = %q, %v: the command did not run in a container", b, err)
	}
	instance, err := docker.DefaultInstance(ws)
	if err != nil {
		t.Fatal(err)
	}
	list, err := cli.ContainerList(context.Background(), client.ContainerListOptions{All: true,
		Filters: make(client.Filters).Add("label", "goalbox.executor.instance="+instance)})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list.Items {
		t.Errorf("container left after the agent exited: %s %v %s", c.ID[:12], c.Names, c.State)
	}
}

// TestBackendOptions: -backend and -image, and their environment twins (the executor's names), reach the options;
// an unknown backend is a usage error naming the choices.
func TestBackendOptions(t *testing.T) {
	o, err := parseGoalOptions([]string{"-goal", "g"}, map[string]string{}, os.Stderr)
	if err != nil || o.Backend != "auto" || o.Image != "" {
		t.Errorf("defaults: backend %q image %q, %v", o.Backend, o.Image, err)
	}
	o, err = parseGoalOptions([]string{"-goal", "g"}, map[string]string{"GOALBOX_EXEC_BACKEND": "docker", "GOALBOX_EXEC_IMAGE": "busybox:latest"}, os.Stderr)
	if err != nil || o.Backend != "docker" || o.Image != "busybox:latest" {
		t.Errorf("environment: backend %q image %q, %v", o.Backend, o.Image, err)
	}
	o, err = parseGoalOptions([]string{"-goal", "g", "-backend", "local", "-image", "x:y"}, map[string]string{"GOALBOX_EXEC_BACKEND": "docker"}, os.Stderr)
	if err != nil || o.Backend != "local" || o.Image != "x:y" {
		t.Errorf("flags win: backend %q image %q, %v", o.Backend, o.Image, err)
	}
	if _, err := parseGoalOptions([]string{"-goal", "g", "-backend", "chroot"}, map[string]string{}, os.Stderr); !errors.Is(err, errUsage) ||
		!strings.Contains(err.Error(), `unknown backend "chroot": use auto, local or docker`) {
		t.Errorf("bad backend: %v", err)
	}
}
