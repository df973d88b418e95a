package execserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
)

// drainGrace bounds how long Run waits for the output stream and the exit status once the container was killed.
// They normally arrive within milliseconds; the bound only matters when the Engine misbehaves.
const drainGrace = 10 * time.Second

// Run runs req.Command in a fresh container: create, attach, start, stream, wait, remove. The container is removed
// on every path out of Run, panics included, with a context of its own so a cancelled request cannot leave it behind.
func (b *dockerBackend) Run(ctx context.Context, req Request) (Result, error) {
	if req.Timeout <= 0 {
		return Result{}, errors.New("docker backend: the request has no timeout")
	}
	workdir, err := b.workdir(req.Dir)
	if err != nil {
		return Result{}, err
	}
	if ctx.Err() != nil {
		return Result{ExitCode: -1}, nil
	}
	stdout, stderr := orDiscard(req.Stdout), orDiscard(req.Stderr)

	// Engine calls use api, not ctx: a create interrupted by cancellation may still create the container on the
	// daemon, and then there would be no ID to remove it by. Cancellation is handled below by killing.
	api, stopAPI := context.WithCancel(context.WithoutCancel(ctx))
	defer stopAPI()

	withStdin := req.Stdin != ""
	created, err := b.cli.ContainerCreate(api, client.ContainerCreateOptions{
		Name:       b.containerName(),
		Config:     b.containerConfig(req.Command, workdir, withStdin),
		HostConfig: b.hostConfig(),
	})
	if err != nil {
		return Result{}, fmt.Errorf("docker backend: create container: %w", err)
	}
	id := created.ID
	defer b.remove(ctx, id)

	// Attach before start, so no output is lost; with the "none" log driver attach is the only way to get it.
	att, err := b.cli.ContainerAttach(api, id, client.ContainerAttachOptions{
		Stream: true, Stdin: withStdin, Stdout: true, Stderr: true,
	})
	if err != nil {
		return Result{}, fmt.Errorf("docker backend: attach: %w", err)
	}
	defer att.Close()
	// next-exit registers the wait before the container starts; not-running would return at once for a container
	// that was only created.
	wait := b.cli.ContainerWait(api, id, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})

	if ctx.Err() != nil {
		return Result{ExitCode: -1}, nil
	}
	if _, err := b.cli.ContainerStart(api, id, client.ContainerStartOptions{}); err != nil {
		return Result{}, fmt.Errorf("docker backend: start: %w", err)
	}

	copied := make(chan error, 1)
	go func() {
		_, err := stdcopy.StdCopy(stdout, stderr, att.Reader)
		copied <- err
	}()
	// The copy goroutine writes to the caller's writers: it must be finished before Run returns.
	defer func() {
		if copied != nil {
			att.Close()
			<-copied
		}
	}()
	if withStdin {
		// In a goroutine: a command that never reads its input would block a large write forever.
		go func() {
			_, _ = io.WriteString(att.Conn, req.Stdin)
			_ = att.CloseWrite()
		}()
	}

	timer := time.NewTimer(req.Timeout)
	defer timer.Stop()
	var (
		res      Result
		killed   bool
		exited   bool
		grace    <-chan time.Time
		cancelCh = ctx.Done()
		timeout  = timer.C
	)
	kill := func() {
		killed = true
		cancelCh, timeout = nil, nil
		// SIGKILL to the container's init takes the whole PID namespace with it: background, double-forked and
		// setsid'd processes alike.
		if _, err := b.cli.ContainerKill(api, id, client.ContainerKillOptions{Signal: "KILL"}); err != nil &&
			!cerrdefs.IsNotFound(err) && !cerrdefs.IsConflict(err) {
			// The forced removal deferred above kills it as well; this only costs the grace period.
			b.log.Warn("docker backend: kill failed", "container", id[:12], "err", err)
		}
		grace = time.After(drainGrace)
	}
	for !exited || copied != nil {
		select {
		case err := <-copied:
			copied = nil
			if err != nil && !killed {
				b.log.Debug("docker backend: output stream ended with an error", "container", id[:12], "err", err)
			}
		case w := <-wait.Result:
			exited, wait.Result, wait.Error = true, nil, nil
			if w.Error != nil && w.Error.Message != "" {
				return Result{}, fmt.Errorf("docker backend: wait: %s", w.Error.Message)
			}
			res.ExitCode = int(w.StatusCode)
		case err := <-wait.Error:
			return Result{}, fmt.Errorf("docker backend: wait: %w", err)
		case <-timeout:
			res.TimedOut = true
			kill()
		case <-cancelCh:
			kill()
		case <-grace:
			// Output or exit status never came after the kill; the deferred removal cleans up.
			return Result{ExitCode: -1, TimedOut: res.TimedOut}, nil
		}
	}
	if killed {
		return Result{ExitCode: -1, TimedOut: res.TimedOut}, nil
	}
	if res.ExitCode == 137 {
		b.noteOOM(api, id, stderr)
	}
	return res, nil
}

// noteOOM tells the command's reader why it died when the kernel's OOM killer ended it: the exit code stays 137 as
// Docker reports it, and stderr gets a line naming the limit.
func (b *dockerBackend) noteOOM(ctx context.Context, id string, stderr io.Writer) {
	insp, err := b.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil || insp.Container.State == nil || !insp.Container.State.OOMKilled {
		return
	}
	fmt.Fprintf(stderr, "\n[sandbox: killed by the out-of-memory killer: the memory limit is %d MiB]\n", b.cfg.Memory>>20)
}

// remove force-removes the container with a fresh context: the request's may be cancelled already.
func (b *dockerBackend) remove(ctx context.Context, id string) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if _, err := b.cli.ContainerRemove(rctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !cerrdefs.IsNotFound(err) {
		// The next start removes it by label; say so now, since it may still be running.
		b.log.Error("docker backend: remove container failed", "container", id[:12], "err", err)
	}
}

// workdir maps a workspace-relative folder to its path in the container. The folder must exist: Docker would
// create a missing working directory as root, leaving a folder in the workspace the filesystem server's user may
// not be able to change.
func (b *dockerBackend) workdir(dir string) (string, error) {
	if dir == "" {
		dir = "."
	}
	clean := path.Clean(dir)
	if path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") || strings.ContainsRune(clean, 0) {
		return "", fmt.Errorf("docker backend: folder %q is not inside the workspace", dir)
	}
	fi, err := b.ws.Stat(clean)
	if err != nil || !fi.IsDir() {
		return "", fmt.Errorf("docker backend: folder %q is not a folder in the workspace", dir)
	}
	return path.Join(containerWorkspace, clean), nil
}

func (b *dockerBackend) containerConfig(command, workdir string, withStdin bool) *container.Config {
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
		Entrypoint:   []string{"sh", "-c"},
		Cmd:          []string{command},
		User:         fmt.Sprintf("%d:%d", b.uid, b.gid),
		WorkingDir:   workdir,
		Env:          env,
		Labels:       b.labels,
		Hostname:     "sandbox",
		AttachStdin:  withStdin,
		OpenStdin:    withStdin,
		StdinOnce:    withStdin,
		AttachStdout: true,
		AttachStderr: true,
	}
}

func (b *dockerBackend) hostConfig() *container.HostConfig {
	pids := b.cfg.PIDs
	mounts := []mount.Mount{{
		Type: mount.TypeBind, Source: b.cfg.WorkspaceHostDir, Target: containerWorkspace,
		BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate},
	}}
	if b.cfg.CacheHostDir != "-" {
		mounts = append(mounts, mount.Mount{
			Type: mount.TypeBind, Source: b.cfg.CacheHostDir, Target: containerCache,
			BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate},
		})
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

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}
