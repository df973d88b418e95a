package execserver

// The launcher: in namespace mode every command is forked from one dedicated OS thread of the server, confined once
// at start, so a command costs one fork/exec more than a bare `sh -c` and no re-exec of the server binary.
//
// The launcher thread, locked and never given back to the Go scheduler:
//
//   - unshares a mount, a network and an IPC namespace of its own (other server threads keep the host's). In its
//     mount namespace /proc is a fresh procfs with hidepid=invisible — a command sees only processes it may ptrace,
//     that is its own —, /run is an empty tmpfs (no host sockets, no Docker socket), /dev/shm a private tmpfs and
//     /tmp the backend's private temp folder. Its network namespace has only a loopback, up, so test suites may
//     listen on 127.0.0.1 while nothing outside is reachable;
//   - sets no_new_privs, enforces the Landlock ruleset, empties the capability bounding set and locks the secure bits
//     so that nothing it executes has a capability. It keeps its own effective capabilities: creating a PID
//     namespace for each command needs CAP_SYS_ADMIN;
//   - then forks each command into a fresh PID namespace, where the shell running the command is PID 1
//     (nsInitScript); when it exits or is killed, the kernel kills every process in the namespace, so nothing
//     survives the call. A command cannot signal or ptrace anything outside its namespace: PIDs outside do not
//     exist for it.

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// nsInitScript is PID 1 of each command's PID namespace: the shell that runs the command. It waits for the go-ahead
// on fd 3 (the server sets the rlimits on it and puts it in its cgroups first), then evaluates the command as sh -c would: $0 is "sh", there
// are no positional parameters. The trailing exit keeps sh from exec'ing the command's last program in its own
// place, so every program the command runs is a child of this shell, with normal signal handling, and the shell
// reaps orphans while it waits. The one difference from a plain sh -c: the shell itself is PID 1, which the kernel
// shields from signals sent from inside the namespace that it does not trap (as in a container without an init),
// so `kill $$` at the top level of a command does nothing.
const nsInitScript = `read -r _ <&3 || exit 125; exec 3<&-; __goalbox_command=$1; shift; eval "$__goalbox_command"; exit $?`

type nsLauncher struct {
	reqs    chan nsLaunchReq
	done    chan struct{}
	once    sync.Once
	applied *appliedConfinement
}

type nsLaunchReq struct {
	cmd *exec.Cmd
	err chan error
}

// newNSLauncher starts the launcher thread; it fails when the namespaces cannot be created here.
func newNSLauncher(rules sandboxRules, withLandlock bool, tmp string, needed []string) (*nsLauncher, error) {
	l := &nsLauncher{reqs: make(chan nsLaunchReq), done: make(chan struct{}), applied: &appliedConfinement{Rlimits: map[string]uint64{}}}
	ready := make(chan error)
	go func() {
		// Never unlocked: when this goroutine returns (setup failed) the thread is destroyed with it, so no other
		// goroutine ever runs in the confined thread.
		runtime.LockOSThread()
		if err := l.setup(rules, withLandlock, tmp, needed); err != nil {
			ready <- err
			return
		}
		ready <- nil
		for {
			select {
			case r := <-l.reqs:
				r.err <- r.cmd.Start()
			case <-l.done:
				return
			}
		}
	}()
	if err := <-ready; err != nil {
		return nil, err
	}
	return l, nil
}

func (l *nsLauncher) setup(rules sandboxRules, withLandlock bool, tmp string, needed []string) error {
	a := l.applied
	if err := unix.Unshare(unix.CLONE_NEWNS | unix.CLONE_NEWNET | unix.CLONE_NEWIPC); err != nil {
		return fmt.Errorf("unshare mount, network and IPC namespaces: %w", err)
	}
	// Nothing mounted here may propagate back to the host.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	a.MountNamespace, a.NetworkNamespace = true, true
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "hidepid=invisible"); err != nil {
		a.Warnings = append(a.Warnings, "no private /proc (hidepid): "+err.Error())
	} else {
		a.PrivateProc = true
	}
	maskHostPaths(needed, a)
	if err := privateTmp(tmp, needed); err != nil {
		a.Warnings = append(a.Warnings, "/tmp is the host's (not writable): "+err.Error())
	} else {
		a.PrivateTmp = true
	}
	if err := loopbackUp(); err != nil {
		a.Warnings = append(a.Warnings, "loopback not up in the network namespace: "+err.Error())
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	a.NoNewPrivs = true
	if withLandlock {
		if err := applyLandlock(rules, a); err != nil {
			return fmt.Errorf("landlock: %w", err)
		}
	} else {
		a.Landlock = "off"
	}
	if err := dropCapabilities(a, false); err != nil {
		return err
	}
	a.PIDNamespace = true
	return nil
}

// close ends the launcher thread; commands still running get SIGKILL (their parent-death signal).
func (l *nsLauncher) close() { l.once.Do(func() { close(l.done) }) }

// start starts cmd from the launcher thread.
func (l *nsLauncher) start(cmd *exec.Cmd) error {
	r := nsLaunchReq{cmd: cmd, err: make(chan error, 1)}
	select {
	case l.reqs <- r:
		return <-r.err
	case <-l.done:
		return errors.New("the backend is closed")
	}
}
