//go:build linux

package docker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// TestDockerCommandNotInPs: a command's text is in no process's arguments on the host, where any user reads them
// (ps, /proc/<pid>/cmdline). Positive control: a plain container running the same text with sh -c shows it there.
func TestDockerCommandNotInPs(t *testing.T) {
	cli := dockerRequire(t)
	b, ws := newDockerTestBackend(t, nil)
	secret := "DB_PASSWORD=" + dockerMarker()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := runInBackground(t, ctx, b, backend.Request{Command: "export " + secret + "; touch started; sleep 20",
		Dir: ".", Timeout: time.Minute})
	dockerWaitFor(t, 30*time.Second, "the command to start", func() bool {
		_, err := os.Stat(filepath.Join(ws, "started"))
		return err == nil
	})
	if seen := processesWithArg(secret); len(seen) > 0 {
		t.Errorf("the command's text is in the host's process table: %v", seen)
	}
	cancel()
	awaitRun(t, done, time.Minute)

	ctx = context.Background()
	plain, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config:     &container.Config{Image: dockerTestImage(), Cmd: []string{"sh", "-c", "export " + secret + "; sleep 20"}},
		HostConfig: &container.HostConfig{NetworkMode: "none"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.ContainerRemove(ctx, plain.ID, client.ContainerRemoveOptions{Force: true})
	if _, err := cli.ContainerStart(ctx, plain.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	dockerWaitFor(t, 30*time.Second, "positive control: a plain container's sh -c in the host's process table", func() bool {
		return len(processesWithArg(secret)) > 0
	})
}

// processesWithArg lists the host's processes with s in their arguments, as ps shows them to any user.
func processesWithArg(s string) []string {
	var found []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		if args, err := os.ReadFile(d + "/cmdline"); err == nil && strings.Contains(string(args), s) {
			found = append(found, d+": "+strings.ReplaceAll(string(args), "\x00", " "))
		}
	}
	return found
}
