package docker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
)

// A command's container is started before the command is known, so that a warm pool can start containers ahead
// of time and a cold run does exactly the same steps, just later. Its init, the launcher below, waits for one line
// on its standard input, then runs the command. The command, its folder and its standard input are files in a
// per-container control folder, mounted read-only at /run/goalbox: passing them on the attached stream would need a
// framing the shell cannot read without forking.
//
// The launcher execs the command's shell, so `sh -c COMMAND` becomes the container's init: when it exits, the
// kernel kills everything else in the PID namespace, and the container's exit status is the command's.
const (
	containerControl = "/run/goalbox"
	launcher         = `read -r _ || exit 0
read -r d < ` + containerControl + `/dir && cd "$d" || exit 125
exec sh -c "$(cat ` + containerControl + `/command)" < ` + containerControl + `/stdin`
)

// prepared is a started container whose launcher waits for its command.
type prepared struct {
	id   string
	ctl  string // host path of the control folder
	att  client.ContainerAttachResult
	wait client.ContainerWaitResult
	// stop ends the attach and wait streams' context.
	stop context.CancelFunc
}

// prepare creates, attaches and starts a container for one command. ctx bounds only the preparation; the
// streams live until discard.
func (b *dockerBackend) prepare(ctx context.Context) (_ *prepared, err error) {
	ctl, err := os.MkdirTemp(b.ctlRoot, "c-")
	if err != nil {
		return nil, fmt.Errorf("docker backend: control folder: %w", err)
	}
	// The container reads the folder through its mount, whoever it runs as; on the host, nobody but the server
	// gets through ctlRoot (0700) to it.
	if err := os.Chmod(ctl, 0o755); err != nil {
		os.RemoveAll(ctl)
		return nil, fmt.Errorf("docker backend: control folder: %w", err)
	}
	streams, stop := context.WithCancel(context.WithoutCancel(ctx))
	p := &prepared{ctl: ctl, stop: stop}
	defer func() {
		if err != nil {
			b.discard(p)
		}
	}()
	created, err := b.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name:       b.containerName(),
		Config:     b.containerConfig(),
		HostConfig: b.hostConfig(ctl),
	})
	if err != nil {
		return nil, fmt.Errorf("docker backend: create container: %w", err)
	}
	p.id = created.ID
	// Attach before start, so no output is lost; with the "none" log driver attach is the only way to get it.
	p.att, err = b.cli.ContainerAttach(streams, p.id, client.ContainerAttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		return nil, fmt.Errorf("docker backend: attach: %w", err)
	}
	// next-exit registers the wait before the container starts; not-running would return at once for a container
	// that was only created.
	p.wait = b.cli.ContainerWait(streams, p.id, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})
	if _, err := b.cli.ContainerStart(ctx, p.id, client.ContainerStartOptions{}); err != nil {
		return nil, fmt.Errorf("docker backend: start: %w", err)
	}
	return p, nil
}

// give writes the command's files and releases the launcher.
func (p *prepared) give(command, dir, stdin string) error {
	for name, content := range map[string]string{"command": command, "dir": dir + "\n", "stdin": stdin} {
		if err := os.WriteFile(filepath.Join(p.ctl, name), []byte(content), 0o644); err != nil {
			return fmt.Errorf("docker backend: control file: %w", err)
		}
	}
	if _, err := p.att.Conn.Write([]byte("\n")); err != nil {
		return fmt.Errorf("docker backend: start the command: %w", err)
	}
	// With StdinOnce the container's stdin closes with ours; the command reads its input from the stdin file.
	return p.att.CloseWrite()
}

// discard closes the streams and force-removes the container and its control folder, with a fresh context: the
// request's may be cancelled already. Removing kills whatever still runs in it.
func (b *dockerBackend) discard(p *prepared) {
	p.att.Close()
	p.stop()
	if p.id != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := b.cli.ContainerRemove(ctx, p.id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !cerrdefs.IsNotFound(err) {
			// The next start removes it by label; say so now, since it may still be running.
			b.log.Error("docker backend: remove container failed", "container", p.id[:12], "err", err)
		}
	}
	if err := os.RemoveAll(p.ctl); err != nil {
		b.log.Warn("docker backend: remove control folder", "err", err)
	}
}

func (b *dockerBackend) containerConfig() *container.Config {
	env := []string{"HOME=/tmp", "TMPDIR=/tmp"}
	if b.cfg.CacheHostDir != "-" {
		env = append(env,
			"XDG_CACHE_HOME="+containerCache,
			"GOCACHE="+containerCache+"/go-build",
			"npm_config_cache="+containerCache+"/npm",
			"PIP_CACHE_DIR="+containerCache+"/pip",
		)
	}
	return &container.Config{
		Image:        b.cfg.Image,
		Entrypoint:   []string{"sh", "-c", launcher},
		Cmd:          []string{},
		User:         fmt.Sprintf("%d:%d", b.uid, b.gid),
		WorkingDir:   containerWorkspace,
		Env:          env,
		Labels:       b.labels,
		Hostname:     "sandbox",
		AttachStdin:  true,
		OpenStdin:    true,
		StdinOnce:    true,
		AttachStdout: true,
		AttachStderr: true,
	}
}

func (b *dockerBackend) hostConfig(ctl string) *container.HostConfig {
	pids := b.cfg.PIDs
	bind := func(src, dst string, ro bool) mount.Mount {
		return mount.Mount{Type: mount.TypeBind, Source: src, Target: dst, ReadOnly: ro,
			BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate}}
	}
	mounts := []mount.Mount{bind(b.cfg.WorkspaceHostDir, containerWorkspace, false), bind(ctl, containerControl, true)}
	if b.cfg.CacheHostDir != "-" {
		mounts = append(mounts, bind(b.cfg.CacheHostDir, containerCache, false))
	}
	return &container.HostConfig{
		Mounts:         mounts,
		NetworkMode:    "none",
		ReadonlyRootfs: true,
		Tmpfs:          map[string]string{"/tmp": b.tmpfsOpts},
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges"},
		// Output goes through attach only: a log driver would also copy gigabytes of output to the daemon's disk.
		LogConfig: container.LogConfig{Type: "none"},
		Resources: container.Resources{
			Memory:     b.cfg.Memory,
			MemorySwap: b.cfg.Memory, // equal to Memory: no swap on top
			NanoCPUs:   int64(b.cfg.CPUs * 1e9),
			PidsLimit:  &pids,
		},
	}
}
