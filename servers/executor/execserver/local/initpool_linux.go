package local

// The fallback mode's child inits (package childinit), started ahead of need (package readypool): starting one is a
// re-exec of the server binary (the Go runtime and every package's initialisation, several milliseconds), while an
// init that waits for its configuration costs nothing.

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/childinit"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/confine"
)

// initPoolSize is how many child inits wait ready.
const initPoolSize = 1

// initProc is a started child init, waiting for its configuration, already in its cgroups.
type initProc struct {
	*childinit.Proc
	release func() // removes its cgroups
}

// discard ends an init that never got a command.
func (ip *initProc) discard() {
	ip.Discard()
	ip.release()
}

// spawnInit starts a child init that waits for its configuration.
func (b *localBackend) spawnInit() (*initProc, error) {
	p, err := childinit.Start(b.policy.Env, b.workspace)
	if err != nil {
		return nil, err
	}
	ip := &initProc{Proc: p, release: func() {}}
	// The init waits for its configuration: it is in its cgroups before it can start anything. Moving a
	// multi-threaded process into a cgroup takes milliseconds (an RCU grace period), so it happens here, ahead of
	// the command, not when the command comes.
	release, err := b.placeInCgroups(p.Cmd.Process.Pid)
	if err != nil {
		ip.discard()
		return nil, fmt.Errorf("cgroup limits: %w", err)
	}
	ip.release = release
	return ip, nil
}

// runWithInit runs req through a child init (fallback mode, no namespaces).
func (b *localBackend) runWithInit(ctx context.Context, req backend.Request, applied **confine.Applied) (backend.Result, error) {
	defer b.inits.Refill() // the next command's init is started after this one ends
	ip, err := b.inits.Take()
	if err != nil {
		return backend.Result{}, err
	}
	defer ip.ClosePipes()
	defer ip.release()

	finishOutput := copyOutput(ip.Stdout, ip.Stderr, req.Stdout, req.Stderr)
	feedStdin(ip.Stdin, "", req)
	reports := childinit.Reports(ip.Reports)
	disk := b.armDisk() // the configuration starts the command
	b.sendConfig(ip, req)
	defer onTerminate(req.Terminate, func() { _, _ = ip.Ctl.Write([]byte{childinit.Terminate}) })()
	// Closing the control pipe tells the init to kill everything; it gets childinit.KillGrace to do so.
	killTree := func() {
		ip.Ctl.Close()
		time.AfterFunc(childinit.KillGrace, func() { _ = ip.Cmd.Process.Kill() })
	}
	stopDisk := b.watchDisk(ctx, disk, ip.Cmd.Process.Pid, killTree)
	waitErr, killed, timedOut := waitOrKill(ctx, req.Timeout, ip.Cmd.Wait, killTree)
	diskKill, diskUsed := stopDisk()
	ip.Ctl.Close()
	// The init killed every descendant before it exited, so the pipes are at EOF.
	finishOutput()

	exited, setupErr := childinit.Collect(reports, applied)
	switch {
	case diskKill:
		return diskKilled(req, diskUsed, b.maxDisk), nil
	case killed:
		return backend.Result{ExitCode: -1, TimedOut: timedOut}, nil
	case setupErr != "":
		return backend.Result{}, errors.New(setupErr)
	case exited == nil:
		// The init died without saying how sh ended: something killed it (the OOM killer, an operator).
		var ee *exec.ExitError
		if waitErr != nil && !errors.As(waitErr, &ee) {
			return backend.Result{}, waitErr
		}
		return backend.Result{ExitCode: -1}, nil
	case exited.Signal == int(syscall.SIGTERM):
		// Ended by a stop's SIGTERM: 143, as the namespace mode's shell reports it (its trap), not -1 (killed).
		return backend.Result{ExitCode: 128 + int(syscall.SIGTERM)}, nil
	case exited.Signal != 0:
		return backend.Result{ExitCode: -1}, nil
	}
	return backend.Result{ExitCode: exited.Status}, nil
}

// sendConfig gives a waiting init its command, with what the policy has it apply.
func (b *localBackend) sendConfig(ip *initProc, req backend.Request) {
	p := &b.policy
	_ = childinit.Send(ip.Ctl, childinit.Config{Command: req.Command, Dir: filepath.Join(b.workspace, filepath.FromSlash(req.Dir)),
		Env: p.Env, Rlimits: p.Rlimits, Seccomp: p.Seccomp, Rules: p.Rules, Landlock: p.Landlock, UID: p.UID, GID: p.GID})
}
