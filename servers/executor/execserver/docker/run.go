package docker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/goalbox/goalbox/servers/executor/execserver/egress"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"
)

// drainGrace bounds how long Run waits for the output stream and the exit status once the container was killed.
// They normally arrive within milliseconds; the bound only matters when the Engine misbehaves.
const drainGrace = 10 * time.Second

// run runs req.Command in a container of its own (from the warm pool, or started now), streams its output, and
// removes the container on every path out of run, panics included. net is the command's egress session (nil
// without -net-allow; Run in egress.go opens and ends it).
func (b *dockerBackend) run(ctx context.Context, req backend.Request, net *egress.Session) (res backend.Result, err error) {
	if req.Timeout <= 0 {
		return backend.Result{}, errors.New("docker backend: the request has no timeout")
	}
	workdir, err := b.workdir(req.Dir)
	if err != nil {
		return backend.Result{}, err
	}
	if ctx.Err() != nil {
		return backend.Result{ExitCode: -1}, nil
	}
	if !b.skipPathCheck {
		if err := b.checkWorkspacePath(); err != nil {
			return backend.Result{}, err
		}
	}

	// Engine calls use api, not ctx: a create interrupted by cancellation may still create the container on the
	// daemon, and then there would be no ID to remove it by. Cancellation is handled by killing (execution.kill).
	api, stopAPI := context.WithCancel(context.WithoutCancel(ctx))
	defer stopAPI()
	spec := commandSpec{command: req.Command, dir: workdir, stdin: req.Stdin,
		streamStdin: req.StdinStream != nil, terminable: req.Terminate != nil, timeout: req.Timeout,
		proxy: b.egress.proxyFor(net), queued: req.Queued}
	prot := b.checkProtected(req.Protected)
	b.lastProt.Store(&prot)
	// Whatever happens below, the workspace loses the mode bits no command may leave (sweep_unix.go) once the
	// container is gone (the deferred release below runs first), and every sweepEvery while it runs.
	sw := &runSweep{}
	defer b.sweep(sw, orDiscard(req.Stderr))
	// The disk cap's watch is armed before the container starts (diskcap.Meter.Arm). A layer is bounded by its
	// tmpfs at the write: no poll then.
	diskLimit := b.cfg.MaxWorkspaceBytes
	if b.layered {
		diskLimit = -1
	}
	disk := b.disk.Arm(diskLimit, b.diskDirs())
	p, err := b.launch(api, ctx, spec, prot)
	if errors.Is(err, errCancelledBeforeStart) {
		return backend.Result{ExitCode: -1}, nil
	}
	if err != nil {
		return backend.Result{}, err
	}
	// finished says the command ended by itself and its output is read: nothing runs in the container any more,
	// so with a pool its removal may finish after Run returns. Every other way out removes it before.
	finished := false
	finishLayer := b.watchLayer(req, p.layer)
	defer func() {
		if p.layer != nil {
			// The last apply, once nothing runs in the container any more: a killed command's container goes
			// first. Then the layer is unmounted (discard), what was not applied with it.
			if !finished {
				b.removeNow(p)
			}
			res.WorkspaceRefused = append(res.WorkspaceRefused, finishLayer()...)
			if p.layer.overCap != "" {
				_, _ = orDiscard(req.Stderr).Write([]byte(p.layer.overCap))
			}
		}
		b.release(p, finished)
	}()
	defer b.sweepWhileRunning(sw)()

	e := &execution{b: b, api: api, p: p}
	stderr := orDiscard(req.Stderr)
	e.copyOutput(orDiscard(req.Stdout), stderr)
	// The copy goroutine writes to the caller's writers: it must be finished before Run returns.
	defer e.stopCopy()
	if req.StdinStream != nil {
		e.feedStdin(req.StdinStream)
	}
	// Once, and on every way out (a writer's panic raised again by wait included), before the container goes.
	stopDisk := sync.OnceValues(disk.Watch(ctx, nil, e.kill))
	defer stopDisk()
	res, err = e.wait(ctx, req.Timeout, req.Terminate)
	if killed, used := stopDisk(); killed {
		// The copy of the output has ended (wait waits for it), so the note comes last.
		fmt.Fprintf(stderr, "\n[goalbox: the command was killed: the workspace and the cache use %d bytes, past the disk cap of %d bytes (-max-workspace-bytes)]\n", used, b.cfg.MaxWorkspaceBytes)
	}
	if err != nil || e.killed.Load() {
		return res, err
	}
	if res.ExitCode == 137 {
		b.noteOOM(api, p.id, stderr)
	}
	finished = true
	return res, nil
}

// execution is a command's container while Run waits for it to end.
type execution struct {
	b      *dockerBackend
	api    context.Context // for Engine calls
	p      *prepared
	copied chan error // the copy of the output ended (a writerPanic if a writer panicked); nil once received
	// killed is set by kill, which the disk cap's watcher calls from its own goroutine.
	killed atomic.Bool
}

// copyOutput copies the container's output to stdout and stderr in a goroutine of its own. A panicking writer must
// not take the process down before the container is removed: the panic is carried to Run's goroutine and raised
// again there (by wait), after the deferred clean-up ran.
func (e *execution) copyOutput(stdout, stderr io.Writer) {
	e.copied = make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				e.copied <- writerPanic{r}
			}
		}()
		_, err := stdcopy.StdCopy(stdout, stderr, e.p.att.Reader)
		e.copied <- err
	}()
}

// feedStdin copies a streamed standard input to the container in a goroutine of its own, and closes the container's
// stdin at EOF (the command then reads EOF). Run does not wait for it: a Read of the caller's reader may block for as
// long as the caller likes, and only the caller can end it (by closing its pipe). Once the container is removed, the
// next write fails and the goroutine ends; what it read is lost with the command.
func (e *execution) feedStdin(r io.Reader) {
	conn := e.p.att
	go func() {
		if _, err := io.Copy(conn.Conn, r); err != nil {
			return // the container is gone, or the reader failed: the command's stdin ends with the container
		}
		_ = conn.CloseWrite()
	}()
}

// stopCopy ends the copy of the output, if still running, and waits for it.
func (e *execution) stopCopy() {
	if e.copied != nil {
		e.p.att.Close()
		<-e.copied
	}
}

// kill sends SIGKILL to the container's init, which takes the whole PID namespace with it: background,
// double-forked and setsid'd processes alike.
func (e *execution) kill() {
	e.killed.Store(true)
	if _, err := e.b.cli.ContainerKill(e.api, e.p.id, client.ContainerKillOptions{Signal: "KILL"}); err != nil &&
		!cerrdefs.IsNotFound(err) && !cerrdefs.IsConflict(err) {
		// The forced removal that Run defers kills it as well; this only costs the grace period.
		e.b.log.Warn("docker backend: kill failed", "container", e.p.id[:12], "err", err)
	}
}

// terminate sends SIGTERM to every process of the command, through the launcher's relay (container.go).
func (e *execution) terminate() {
	if err := e.p.terminate(); err != nil {
		// Cancelling ctx still kills; the caller's grace before it is all this costs.
		e.b.log.Warn("docker backend: terminate failed", "container", e.p.id[:12], "err", err)
	}
}

// wait waits until the command has exited and its output is read, killing it when ctx is done or timeout passes,
// and sending SIGTERM to its processes when terminate is closed. A killed command's result is exit code -1; a
// terminated one's is what its shell exits with (143 when SIGTERM ended it).
func (e *execution) wait(ctx context.Context, timeout time.Duration, terminate <-chan struct{}) (backend.Result, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var (
		res      backend.Result
		exited   bool
		grace    <-chan time.Time
		cancelCh = ctx.Done()
		timedOut = timer.C
		status   = e.p.wait
	)
	kill := func() {
		cancelCh, timedOut = nil, nil
		e.kill()
		grace = time.After(drainGrace)
	}
	for !exited || e.copied != nil {
		select {
		case err := <-e.copied:
			e.copied = nil
			if wp, ok := err.(writerPanic); ok {
				panic(wp.value)
			}
			if err != nil && !e.killed.Load() {
				e.b.log.Debug("docker backend: output stream ended with an error", "container", e.p.id[:12], "err", err)
			}
		case w := <-status.Result:
			exited, status.Result, status.Error = true, nil, nil
			if w.Error != nil && w.Error.Message != "" {
				return backend.Result{}, fmt.Errorf("docker backend: wait: %s", w.Error.Message)
			}
			res.ExitCode = int(w.StatusCode)
		case err := <-status.Error:
			return backend.Result{}, fmt.Errorf("docker backend: wait: %w", err)
		case <-timedOut:
			res.TimedOut = true
			kill()
		case <-cancelCh:
			kill()
		case <-terminate:
			terminate = nil
			e.terminate()
		case <-grace:
			// Output or exit status never came after the kill; the removal Run defers cleans up.
			return backend.Result{ExitCode: -1, TimedOut: res.TimedOut}, nil
		}
	}
	if e.killed.Load() {
		return backend.Result{ExitCode: -1, TimedOut: res.TimedOut}, nil
	}
	return res, nil
}

// errCancelledBeforeStart says the request was cancelled while its container was being started: the command never
// ran.
var errCancelledBeforeStart = errors.New("cancelled before the command started")

// launch gives the command to a container from the pool or to one started now. A pooled container can die while
// it waits (the Engine restarted, say); then a container started now is the fallback. api carries the Engine calls;
// a cancelled req (checked once the container is ready) means the command is not started at all. A container
// started now first waits, up to slotWait, for room under the total caps.
func (b *dockerBackend) launch(api, req context.Context, spec commandSpec, prot protection) (*prepared, error) {
	if p := b.takePooled(prot); p != nil {
		if spec.queued != nil {
			spec.queued(false) // a pooled container holds its place already
		}
		if req.Err() != nil {
			b.discard(p)
			return nil, errCancelledBeforeStart
		}
		b.reaper.add(p.id, time.Now().Add(spec.timeout+watchdogGrace), p.layer.folder())
		err := p.give(spec)
		if err == nil {
			return p, nil
		}
		b.discard(p)
		b.log.Warn("docker backend: a pooled container could not take its command; starting one", "err", err)
	}
	wait, cancel := context.WithTimeout(req, slotWait)
	defer cancel()
	p, err := b.prepare(api, wait, prot, spec.queued)
	if errors.Is(err, errSlotsFull) {
		if req.Err() != nil {
			return nil, errCancelledBeforeStart
		}
		return nil, b.errNoSlot()
	}
	if err != nil {
		return nil, err
	}
	if req.Err() != nil {
		b.discard(p)
		return nil, errCancelledBeforeStart
	}
	b.reaper.add(p.id, time.Now().Add(spec.timeout+watchdogGrace), p.layer.folder())
	if err = p.give(spec); err != nil {
		b.discard(p)
		return nil, err
	}
	return p, nil
}

// diskDirs are the folders the disk cap counts: the workspace and the cache. /tmp is a tmpfs of a fixed size,
// counted against the memory limit.
func (b *dockerBackend) diskDirs() []string {
	if b.cacheDir == "" {
		return []string{b.hostWorkspace()}
	}
	return []string{b.hostWorkspace(), b.cacheDir}
}

// sweepEvery is how often the workspace is swept while a command runs: a long process (a dev server) that made
// the workspace world-writable would otherwise leave it so for as long as it runs.
var sweepEvery = 5 * time.Second

// runSweep counts what the sweeps during one command cleared.
type runSweep struct{ fixed atomic.Int64 }

// sweepOnce sweeps the workspace; with wait false it skips when another sweep is under way (one of another
// command's: they would walk the same tree at the same time).
func (b *dockerBackend) sweepOnce(sw *runSweep, wait bool) {
	asked := time.Now()
	if wait {
		b.sweepMu.Lock()
		// A sweep that began after this one was asked for saw everything this command left: commands ending
		// together share one walk instead of queueing for one each.
		if b.lastSweep.After(asked) {
			b.sweepMu.Unlock()
			return
		}
	} else if !b.sweepMu.TryLock() {
		return
	}
	defer b.sweepMu.Unlock()
	b.lastSweep = time.Now()
	r, err := b.sweepWorkspace()
	if err != nil {
		b.log.Warn("docker backend: mode sweep failed", "err", err)
		return
	}
	if r.fixed > 0 || r.failed > 0 || r.tooDeep {
		b.log.Warn("docker backend: cleared set-user-id, set-group-id or world-write bits in the workspace",
			"fixed", r.fixed, "failed", r.failed, "too_deep", r.tooDeep)
	}
	sw.fixed.Add(int64(r.fixed))
}

// sweepWhileRunning sweeps every sweepEvery until the returned function is called.
func (b *dockerBackend) sweepWhileRunning(sw *runSweep) (stop func()) {
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		t := time.NewTicker(sweepEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				b.sweepOnce(sw, false)
			}
		}
	}()
	return func() { close(done); <-ended }
}

// sweep is the last sweep of a command, once its container is gone; it tells the command's reader what the
// command's sweeps cleared.
func (b *dockerBackend) sweep(sw *runSweep, stderr io.Writer) {
	b.sweepOnce(sw, true)
	if n := sw.fixed.Load(); n > 0 {
		fmt.Fprintf(stderr, "\n[goalbox: cleared set-user-id, set-group-id and world-write bits on %d files or folders in the workspace: another user of the host could use them; they are not allowed]\n", n)
	}
}

// writerPanic carries a panic of the output writers out of the copy goroutine.
type writerPanic struct{ value any }

func (writerPanic) Error() string { return "output writer panicked" }

// noteOOM tells the command's reader why it died when the kernel's OOM killer ended it: the exit code stays 137 as
// Docker reports it, and stderr gets a line naming the limit.
func (b *dockerBackend) noteOOM(ctx context.Context, id string, stderr io.Writer) {
	insp, err := b.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil || insp.Container.State == nil || !insp.Container.State.OOMKilled {
		return
	}
	fmt.Fprintf(stderr, "\n[sandbox: killed by the out-of-memory killer: the memory limit is %d MiB]\n", b.cfg.Memory>>20)
}

// workdir maps a workspace-relative folder to its path in the container. The folder must exist: the command would
// otherwise fail in the launcher with a message naming the container path.
func (b *dockerBackend) workdir(dir string) (string, error) {
	dir = cmp.Or(dir, ".")
	clean := path.Clean(dir)
	if path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") || strings.ContainsAny(clean, "\x00") {
		return "", fmt.Errorf("docker backend: folder %q is not inside the workspace", dir)
	}
	if strings.ContainsAny(clean, "\n\r") {
		// The launcher reads the folder as one line.
		return "", fmt.Errorf("docker backend: folder %q has a line break in its name, which the docker backend cannot run in", dir)
	}
	fi, err := b.ws.Stat(clean)
	if err != nil || !fi.IsDir() {
		return "", fmt.Errorf("docker backend: folder %q is not a folder in the workspace", dir)
	}
	return path.Join(containerWorkspace, clean), nil
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}
