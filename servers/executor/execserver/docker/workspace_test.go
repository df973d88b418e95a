//go:build linux

package docker

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
)

// TestDockerWorkspaceSwapped: the workspace's owner replaces the folder by a symlink to a root-only folder once a
// root server has started. The command is refused with a message (the path check); with that check left out, the
// container the Engine mounted the link's target into is refused before it gets the command (the mount
// verification); the mode sweep goes through the handle and leaves root's set-user-id file alone while it still
// clears the original folder. Positive control: a plain container given the workspace's path, as the Engine is
// given it, reads root's secret.
func TestDockerWorkspaceSwapped(t *testing.T) {
	requireRoot(t)
	cli := dockerRequire(t)
	// With the layer (the default here) and without it (the binds of a server whose Engine runs elsewhere, here by
	// NoWorkspaceLayer).
	for _, noLayer := range []bool{false, true} {
		t.Run(map[bool]string{false: "layer", true: "no-layer"}[noLayer], func(t *testing.T) { testDockerWorkspaceSwapped(t, cli, noLayer) })
	}
}

func testDockerWorkspaceSwapped(t *testing.T, cli *client.Client, noLayer bool) {
	parent := userFolder(t) // the owner's: they may rename what is in it
	ws := filepath.Join(parent, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws, dockerSentinelName), []byte(dockerSentinelText), 0o644)
	for _, p := range []string{ws, filepath.Join(ws, dockerSentinelName)} {
		os.Lchown(p, dockerTestUID, dockerTestUID)
	}
	target := filepath.Join(t.TempDir(), "root-only")
	os.Mkdir(target, 0o711)
	os.WriteFile(filepath.Join(target, "secret"), []byte("root's"), 0o644)
	suid := filepath.Join(target, "suid")
	os.WriteFile(suid, []byte("#!/bin/sh\n"), 0o755)
	if err := syscall.Chmod(suid, 0o4755); err != nil {
		t.Fatal(err)
	}
	rootUnchanged := func() {
		t.Helper()
		names, _ := os.ReadDir(target)
		if len(names) != 2 {
			t.Errorf("the root-only folder holds %d entries, want its secret and its set-user-id file", len(names))
		}
		if fi, err := os.Stat(suid); err != nil || fi.Mode()&os.ModeSetuid == 0 {
			t.Errorf("root's set-user-id file lost its bit: %v %v", fi.Mode(), err)
		}
	}

	b, err := New(context.Background(), Config{Image: dockerTestImage(), WorkspaceHostDir: ws, CacheHostDir: "-",
		stateBase: t.TempDir(), Logger: slog.New(slog.DiscardHandler), NoWorkspaceLayer: noLayer})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	db := b.(*dockerBackend)
	if !db.mountVerify {
		t.Fatal("a root server on the Docker host should verify its containers' mounts")
	}
	if code, out := dockerRun(t, db, backend.Request{Command: "cat " + dockerSentinelName}); code != 0 || out != dockerSentinelText {
		t.Fatalf("before the swap: %d %q", code, out)
	}

	// The swap.
	if err := os.Rename(ws, ws+".orig"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, ws); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws+".orig", "open"), nil, 0o644)
	os.Chmod(filepath.Join(ws+".orig", "open"), 0o666)
	attack := backend.Request{Command: "cat /workspace/secret; echo x > /workspace/pwned; ls -la /workspace", Dir: ".", Timeout: time.Minute}
	var out syncBuffer
	attack.Stdout, attack.Stderr = &out, &out
	_, err = db.Run(context.Background(), attack)
	if err == nil || !strings.Contains(err.Error(), "no longer the folder this executor started with") ||
		!strings.Contains(err.Error(), "a symlink to "+target) {
		t.Errorf("a command after the swap: %v, output %q; want a refusal naming the symlink", err, out.String())
	}
	if strings.Contains(out.String(), "root's") {
		t.Errorf("the command read root's secret: %q", out.String())
	}
	rootUnchanged()

	// The mount verification alone; with the layer, whose lower is the descriptor, the path plays no part: the
	// command runs in the folder opened at start.
	db.skipPathCheck = true
	out = syncBuffer{}
	_, err = db.Run(context.Background(), attack)
	switch {
	case strings.Contains(out.String(), "root's"):
		t.Errorf("without the path check the command read root's secret: %q", out.String())
	case !db.layered && err == nil:
		t.Errorf("without the path check: output %q; want the container refused before the command", out.String())
	case db.layered && err != nil:
		t.Errorf("without the path check, on the layer: %v; want the command run in the folder opened at start", err)
	case db.layered:
		if got, _ := os.ReadFile(filepath.Join(ws+".orig", "pwned")); string(got) != "x\n" {
			t.Errorf("on the layer the command's write should land in the folder opened at start: %q", got)
		}
	}
	if n := len(dockerInstanceContainers(t, db)); n != 0 {
		t.Errorf("%d command containers left", n)
	}
	rootUnchanged()
	// The sweep went through the handle: the original folder's world-writable file was cleared.
	if fi, _ := os.Stat(filepath.Join(ws+".orig", "open")); fi.Mode().Perm() != 0o664 {
		t.Errorf("the sweep did not reach the folder opened at start: open is %v", fi.Mode())
	}

	// Positive control: the Engine, given the path, mounts the link's target.
	ctx := context.Background()
	plain, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config:     &container.Config{Image: dockerTestImage(), Cmd: []string{"cat", "/w/secret"}},
		HostConfig: &container.HostConfig{NetworkMode: "none", Mounts: []mount.Mount{{Type: mount.TypeBind, Source: ws, Target: "/w", ReadOnly: true}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.ContainerRemove(ctx, plain.ID, client.ContainerRemoveOptions{Force: true})
	if got := plainOutput(t, cli, plain.ID); got != "root's" {
		t.Errorf("positive control: a plain container given the workspace's path read %q, want root's secret", got)
	}
}

// plainOutput starts a created container and returns what it wrote, stdout and stderr together, once it ends.
func plainOutput(t *testing.T, cli *client.Client, id string) string {
	t.Helper()
	ctx := context.Background()
	att, err := cli.ContainerAttach(ctx, id, client.ContainerAttachOptions{Stream: true, Stdout: true, Stderr: true})
	if err != nil {
		t.Fatal(err)
	}
	defer att.Close()
	if _, err := cli.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	var got syncBuffer
	stdcopy.StdCopy(&got, &got, att.Reader)
	return got.String()
}
