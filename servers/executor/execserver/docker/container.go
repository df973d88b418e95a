package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
)

// A command's container is started before the command is known, so that a warm pool can start containers ahead
// of time and a cold run does exactly the same steps, just later. Its init, the launcher below, waits for one line
// on its standard input, then runs the command. The command, its folder and its standard input are files in a
// per-container control folder, mounted read-only at /run/goalbox: passing them on the attached stream would need a
// framing the shell cannot read without forking. A streamed standard input has no file: it is the rest of the
// attached stream after that line (sh's read takes one byte at a time from a pipe, so nothing of it is consumed).
//
// The launcher stays the container's init (PID 1) and runs `sh -c COMMAND` in the foreground as its child: when
// that shell exits, so does the launcher, and the kernel kills everything else in the PID namespace; the
// container's exit status is the command's. The command is not PID 1 itself because the kernel delivers to a
// namespace's init only the signals it has a handler for, whoever sends them: `python3 -m http.server` exec'd as
// init would ignore SIGTERM. For the same reason a SIGTERM for the whole command (Request.Terminate) cannot go
// through `docker kill` to init: the relay, a subshell started only for a terminable command, waits on the
// terminate FIFO, and once the server writes a line to it sends SIGTERM to every process of the namespace but
// init and itself (kill -1), which is the whole tree, setsid'd and double-forked processes included. kill -1
// fails while the command's shell is not forked yet, hence the retry. The relay reads the command before it starts,
// so its kill cannot hit a `cat` of the launcher; the command's shell is a plain foreground child (an asynchronous
// one would start with SIGINT and SIGQUIT ignored).
//
// The launcher runs the command from its file (sh /run/goalbox/command), never from its own command line: the
// processes of a container are in the host's process table, and any user of the host reads their arguments in ps.
//
// The watchdog that ends a container at its deadline whatever happens to the server is not in the container: it
// is the reaper process on the host (reaper.go).
const (
	containerControl = "/run/goalbox"
	launcher         = `read -r _ || exit 0
read -r d < ` + containerControl + `/dir && cd "$d" || exit 125
if [ -e ` + containerControl + `/stdin ]; then exec < ` + containerControl + `/stdin; fi
if [ -e ` + containerControl + `/proxy ]; then read -r p < ` + containerControl + `/proxy && export HTTP_PROXY="$p" HTTPS_PROXY="$p" ALL_PROXY="$p" http_proxy="$p" https_proxy="$p" all_proxy="$p"; unset p; fi
if [ -p ` + containerControl + `/terminate ]; then
	{ read -r _ < ` + containerControl + `/terminate && until kill -TERM -1; do :; done; } </dev/null >/dev/null 2>&1 &
fi
sh ` + containerControl + `/command
exit $?`
)

// commandSpec is what a container's launcher is given.
type commandSpec struct {
	command string
	dir     string // the folder in the container
	stdin   string // standard input, unless streamStdin
	// streamStdin leaves the attached stream open as the command's standard input; Run copies to it.
	streamStdin bool
	// terminable makes the terminate FIFO, so the launcher starts the relay (prepared.terminate).
	terminable bool
	// timeout is the command's; the reaper removes the container watchdogGrace later.
	timeout time.Duration
	// queued is the request's Queued: told whether the command waits for room under the total caps.
	queued func(bool)
	// proxy, with -net-allow, gives the command's egress proxy URL for the holder its container joined; the
	// launcher exports it from the control file "proxy" (egress.go).
	proxy func(holder string) string
}

// prepared is a started container whose launcher waits for its command.
type prepared struct {
	id      string
	network string // the network holder it joined
	ctl     string // host path of the control folder
	att     client.ContainerAttachResult
	wait    client.ContainerWaitResult
	// stop ends the attach and wait streams' context.
	stop context.CancelFunc
	// term is the server's end of the terminate FIFO once terminate wrote to it; kept open until discard so the
	// line stays in the pipe until the relay reads it.
	term *os.File
	// slot says the container holds a place under the total caps (state.go), given back by discard.
	slot bool
	// prot is the protected set it was made with (protect_unix.go).
	prot protection
	// layer is its layer of the workspace and the cache (layer_linux.go), nil when the backend has none; unmounted
	// by discard, once the container is gone.
	layer *commandLayer
	// removed says the container is gone (removeNow).
	removed bool
}

// prepare creates, attaches and starts a container for one command, joined to the network holder, with the
// protected paths prot read-only. A holder that died makes the start fail: then a new holder is started and the
// container prepared once more. ctx bounds only the preparation; the streams live until discard. The container
// first takes a place under the total caps, waiting until wait is done (errSlotsFull).
func (b *dockerBackend) prepare(ctx, wait context.Context, prot protection, queued func(bool)) (*prepared, error) {
	network := b.net.current()
	if network == "" {
		return nil, errors.New("docker backend: closed")
	}
	p, err := b.prepareOn(ctx, wait, network, prot, queued)
	if err == nil || errors.Is(err, errSlotsFull) {
		return p, err
	}
	renewed, rerr := b.renewNetwork(ctx, network)
	if rerr != nil || renewed == network || renewed == "" {
		return nil, err
	}
	return b.prepareOn(ctx, wait, renewed, prot, nil)
}

// prepareOn prepares a container joined to the network namespace of holder network.
func (b *dockerBackend) prepareOn(ctx, wait context.Context, network string, prot protection, queued func(bool)) (_ *prepared, err error) {
	if err := b.takeSlot(wait, queued); err != nil {
		return nil, err
	}
	ctl, err := os.MkdirTemp(b.ctlRoot, "c-")
	if err != nil {
		b.giveSlot()
		return nil, fmt.Errorf("docker backend: control folder: %w", err)
	}
	// The container reads the folder through its mount, whoever it runs as; on the host, nobody but the server
	// gets through ctlRoot (0700) to it.
	if err := os.Chmod(ctl, 0o755); err != nil {
		os.RemoveAll(ctl)
		b.giveSlot()
		return nil, fmt.Errorf("docker backend: control folder: %w", err)
	}
	streams, stop := context.WithCancel(context.WithoutCancel(ctx))
	p := &prepared{ctl: ctl, stop: stop, network: network, slot: true, prot: prot}
	defer func() {
		if err != nil {
			b.discard(p)
		}
	}()
	if p.layer, err = b.newLayer(); err != nil {
		return nil, err
	}
	created, err := b.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name:       b.containerName(),
		Config:     b.containerConfig(),
		HostConfig: b.hostConfig(ctl, network, prot, p.layer),
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
	if err := b.verifyMounts(ctx, p.id, prot, p.layer); err != nil {
		return nil, err
	}
	return p, nil
}

// give writes the command's files and releases the launcher.
func (p *prepared) give(spec commandSpec) error {
	files := map[string]string{"command": spec.command, "dir": spec.dir + "\n"}
	if !spec.streamStdin {
		files["stdin"] = spec.stdin
	}
	if spec.proxy != nil {
		if u := spec.proxy(p.network); u != "" {
			files["proxy"] = u + "\n"
		}
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(p.ctl, name), []byte(content), 0o644); err != nil {
			return fmt.Errorf("docker backend: control file: %w", err)
		}
	}
	if spec.terminable {
		fifo := filepath.Join(p.ctl, "terminate")
		// Readable by the command's user, writable by the server only; Chmod because Mkfifo is subject to umask.
		switch err := mkfifo(fifo, 0o644); {
		case errors.Is(err, errors.ErrUnsupported):
			// No FIFOs on this host (Windows): the launcher starts no relay, and a stop kills the command without a
			// SIGTERM first (terminate reports that it could not send one).
		case err != nil:
			return fmt.Errorf("docker backend: terminate FIFO: %w", err)
		default:
			if err := os.Chmod(fifo, 0o644); err != nil {
				return fmt.Errorf("docker backend: terminate FIFO: %w", err)
			}
		}
	}
	if _, err := p.att.Conn.Write([]byte("\n")); err != nil {
		return fmt.Errorf("docker backend: start the command: %w", err)
	}
	if spec.streamStdin {
		return nil
	}
	// With StdinOnce the container's stdin closes with ours; the command reads its input from the stdin file.
	return p.att.CloseWrite()
}

// terminate asks the relay of a terminable command to send SIGTERM to all of the command's processes. The FIFO is
// opened read-write, which on Linux never blocks: the line waits in the pipe for a relay not reading yet.
func (p *prepared) terminate() error {
	if p.term != nil {
		return nil
	}
	f, err := os.OpenFile(filepath.Join(p.ctl, "terminate"), os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("docker backend: terminate: %w", err)
	}
	p.term = f
	if _, err := f.Write([]byte("\n")); err != nil {
		return fmt.Errorf("docker backend: terminate: %w", err)
	}
	return nil
}

// discard closes the streams and force-removes the container and its control folder, with a fresh context: the
// request's may be cancelled already. Removing kills whatever still runs in it.
func (b *dockerBackend) discard(p *prepared) {
	p.att.Close()
	p.stop()
	b.removeNow(p)
	if err := p.layer.close(); err != nil {
		b.log.Error("docker backend: unmount a command's layer", "err", err)
	}
	if p.term != nil {
		p.term.Close()
	}
	if err := os.RemoveAll(p.ctl); err != nil {
		b.log.Warn("docker backend: remove control folder", "err", err)
	}
	if p.slot {
		p.slot = false
		b.giveSlot()
	}
}

// removeNow force-removes p's container, if it has not been. A failure is logged at ERROR: the container may still be
// running (the reaper, told only of a removal that worked, still removes it at its deadline).
func (b *dockerBackend) removeNow(p *prepared) {
	if p.id != "" && !p.removed {
		if b.removeContainer(p.id) {
			p.removed = true
			b.reaper.del(p.id)
		}
	}
}

func (b *dockerBackend) containerConfig() *container.Config {
	env := append([]string{"HOME=/tmp", "TMPDIR=/tmp"}, b.egress.staticEnv()...)
	if b.cacheDir != "" {
		env = append(env,
			"XDG_CACHE_HOME="+containerCache,
			"GOCACHE="+containerCache+"/go-build",
			"npm_config_cache="+containerCache+"/npm",
			"PIP_CACHE_DIR="+containerCache+"/pip",
		)
	}
	// No Hostname: Docker refuses one with a joined network namespace; the network holder's ("sandbox") is used.
	return &container.Config{
		Image:      b.cfg.Image,
		Entrypoint: []string{"sh", "-c", launcher},
		Cmd:        []string{},
		User:       fmt.Sprintf("%d:%d", b.uid, b.gid),
		WorkingDir: containerWorkspace,
		Env:        env,
		Labels:     b.labels,
		// The image's HEALTHCHECK (the executor image has one) would run a foreign process in the command's PID
		// namespace every few seconds, which the command could see and answer.
		Healthcheck:  noHealthcheck,
		AttachStdin:  true,
		OpenStdin:    true,
		StdinOnce:    true,
		AttachStdout: true,
		AttachStderr: true,
	}
}

func (b *dockerBackend) hostConfig(ctl, network string, prot protection, l *commandLayer) *container.HostConfig {
	pids := b.cfg.PIDs
	bind := func(src, dst string, ro bool) mount.Mount {
		return mount.Mount{Type: mount.TypeBind, Source: src, Target: dst, ReadOnly: ro,
			BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate}}
	}
	ws, cache := b.cfg.WorkspaceHostDir, b.cacheDir
	if l != nil {
		// The layer's merged views: the command writes only the layer (layer_linux.go).
		ws, cache = l.merged(), l.mergedCache()
	}
	mounts := []mount.Mount{bind(ws, containerWorkspace, false), bind(ctl, containerControl, true)}
	if b.cacheDir != "" {
		mounts = append(mounts, bind(cache, containerCache, false))
	}
	if l != nil {
		// /dev/shm in the layer's tmpfs, counted in the caps, instead of the Engine's own (layer_linux.go).
		mounts = append(mounts, bind(l.shm(), containerShm, false))
	}
	// On top of the workspace's bind (the Engine mounts parents first): each protected path, checked to lead
	// through no symlink (protect_unix.go).
	for _, rel := range prot.paths {
		mounts = append(mounts, bind(filepath.Join(b.cfg.WorkspaceHostDir, filepath.FromSlash(rel)), path.Join(containerWorkspace, rel), true))
	}
	mounts = append(mounts, b.egress.mounts()...)
	return &container.HostConfig{
		Mounts:         mounts,
		NetworkMode:    container.NetworkMode("container:" + network), // only a loopback, shared (network.go)
		ReadonlyRootfs: true,
		Tmpfs:          map[string]string{"/tmp": b.tmpfsOpts},
		CapDrop:        []string{"ALL"},
		SecurityOpt:    b.securityOpt(),
		// Output goes through attach only: a log driver would also copy gigabytes of output to the daemon's disk.
		LogConfig: container.LogConfig{Type: "none"},
		Resources: container.Resources{
			CgroupParent: b.cgroupParent, // the totals, enforced by the kernel over all containers (cgroup_linux.go)
			Memory:       b.cfg.Memory,
			MemorySwap:   b.cfg.Memory, // equal to Memory: no swap on top
			NanoCPUs:     int64(b.cfg.CPUs * 1e9),
			PidsLimit:    &pids,
		},
	}
}

// noHealthcheck turns off the image's HEALTHCHECK for the backend's containers.
var noHealthcheck = &container.HealthConfig{Test: []string{"NONE"}}

// securityOpt is what every container of the backend runs with: no new privileges, and the backend's own seccomp
// profile (seccomp_linux.go).
func (b *dockerBackend) securityOpt() []string {
	opts := []string{"no-new-privileges"}
	if b.seccomp != "" {
		opts = append(opts, b.seccomp)
	}
	return opts
}
