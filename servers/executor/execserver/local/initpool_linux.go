package local

// The fallback mode's child inits (childinit_linux.go), started ahead of need (readyPool): starting one is a
// re-exec of the server binary (the Go runtime and every package's initialisation, several milliseconds), while an
// init that waits for its configuration costs nothing.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
)

// initPoolSize is how many child inits wait ready.
const initPoolSize = 1

// initProc is a started child init, waiting for its configuration on ctlW, already in its cgroups.
type initProc struct {
	cmd                      *exec.Cmd
	ctlW, repR               *os.File
	stdinW, stdoutR, stderrR *os.File
	release                  func() // removes its cgroups
}

// discard ends an init that never got a command: EOF on its control pipe makes it exit.
func (ip *initProc) discard() {
	ip.ctlW.Close()
	_ = ip.cmd.Wait()
	ip.closePipes()
	ip.release()
}

func (ip *initProc) closePipes() {
	for _, f := range []*os.File{ip.repR, ip.stdinW, ip.stdoutR, ip.stderrR} {
		f.Close()
	}
}

// spawnInit starts a child init that waits for its configuration.
func (b *localBackend) spawnInit() (*initProc, error) {
	var files []*os.File // every pipe end, closed on failure
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	fail := func(err error) (*initProc, error) {
		for _, f := range files {
			f.Close()
		}
		return nil, err
	}
	ctlR, ctlW, err := pipe()
	if err != nil {
		return fail(err)
	}
	repR, repW, err := pipe()
	if err != nil {
		return fail(err)
	}
	inR, inW, err := pipe()
	if err != nil {
		return fail(err)
	}
	outR, outW, err := pipe()
	if err != nil {
		return fail(err)
	}
	errR, errW, err := pipe()
	if err != nil {
		return fail(err)
	}
	cmd := &exec.Cmd{
		// The server's own binary, whatever its name; the init in it takes over when argv[0] is initArg0.
		Path:       "/proc/self/exe",
		Args:       []string{initArg0},
		Env:        b.policy.Env,
		Dir:        b.workspace,
		Stdin:      inR,
		Stdout:     outW,
		Stderr:     errW,
		ExtraFiles: []*os.File{ctlR, repW},
		// No parent-death signal: if the server dies, the init must live on long enough to kill its descendants,
		// which it does when its control pipe reports EOF.
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}

	if err := cmd.Start(); err != nil {
		return fail(fmt.Errorf("start the sandbox: %w", err))
	}
	for _, f := range []*os.File{ctlR, repW, inR, outW, errW} {
		f.Close()
	}
	ip := &initProc{cmd: cmd, ctlW: ctlW, repR: repR, stdinW: inW, stdoutR: outR, stderrR: errR, release: func() {}}
	// The init waits for its configuration: it is in its cgroups before it can start anything. Moving a
	// multi-threaded process into a cgroup takes milliseconds (an RCU grace period), so it happens here, ahead of
	// the command, not when the command comes.
	release, err := b.placeInCgroups(cmd.Process.Pid)
	if err != nil {
		ip.discard()
		return nil, fmt.Errorf("cgroup limits: %w", err)
	}
	ip.release = release
	return ip, nil
}

// runWithInit runs req through a child init (fallback mode, no namespaces).
func (b *localBackend) runWithInit(ctx context.Context, req backend.Request, applied **appliedConfinement) (backend.Result, error) {
	defer b.inits.refill() // the next command's init is started after this one ends
	ip, err := b.inits.take()
	if err != nil {
		return backend.Result{}, err
	}
	defer ip.closePipes()
	defer ip.release()

	finishOutput := copyOutput(ip.stdoutR, ip.stderrR, req.Stdout, req.Stderr)
	feedStdin(ip.stdinW, "", req)
	reports := readReports(ip.repR)
	b.sendConfig(ip, req)
	defer onTerminate(req.Terminate, func() { _, _ = ip.ctlW.Write([]byte{initTerminate}) })()
	// Closing the control pipe tells the init to kill everything; it gets initKillGrace to do so.
	killTree := func() {
		ip.ctlW.Close()
		time.AfterFunc(initKillGrace, func() { _ = ip.cmd.Process.Kill() })
	}
	stopDisk := b.watchDisk(ctx, ip.cmd.Process.Pid, killTree)
	waitErr, killed, timedOut := waitOrKill(ctx, req.Timeout, ip.cmd.Wait, killTree)
	diskKill, diskUsed := stopDisk()
	ip.ctlW.Close()
	// The init killed every descendant before it exited, so the pipes are at EOF.
	finishOutput()

	exited, setupErr := collectReports(reports, applied)
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

// sendConfig gives a waiting init its command.
func (b *localBackend) sendConfig(ip *initProc, req backend.Request) {
	dir := filepath.Join(b.workspace, filepath.FromSlash(req.Dir))
	cfg := initConfig{Command: req.Command, Dir: dir, Policy: b.policy}
	line, _ := json.Marshal(cfg)
	_, _ = ip.ctlW.Write(append(line, '\n'))
}

// readReports decodes an init's reports as they come; the channel closes at EOF.
func readReports(r io.Reader) <-chan initReport {
	reports := make(chan initReport, 4)
	go func() {
		defer close(reports)
		dec := json.NewDecoder(r)
		for {
			var rep initReport
			if dec.Decode(&rep) != nil {
				return
			}
			reports <- rep
		}
	}()
	return reports
}

// collectReports reads an init's reports to the end: how sh ended (nil if the init never said), or why it could
// not start; what confinement the init applied goes to applied, when asked for.
func collectReports(reports <-chan initReport, applied **appliedConfinement) (exited *initReport, setupErr string) {
	for r := range reports {
		switch {
		case r.Setup != nil:
			if applied != nil {
				*applied = r.Setup
			}
		case r.Error != "":
			setupErr = r.Error
		case r.Exited:
			exited = &r
		}
	}
	return exited, setupErr
}
