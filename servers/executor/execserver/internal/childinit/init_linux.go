package childinit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/confine"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/landlock"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/proctree"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/seccomp"
	"golang.org/x/sys/unix"
)

// Main runs the init (the re-executed binary calls it when argv[0] is Arg0) and returns its exit code.
func Main() int {
	// fds 3 and 4 came without close-on-exec, and so may anything the server leaked; sh gets 0, 1 and 2 only.
	_ = unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	report := os.NewFile(4, "report")
	enc := json.NewEncoder(report)
	ctl := bufio.NewReader(os.NewFile(3, "control"))
	line, err := ctl.ReadBytes('\n')
	var cfg Config
	if err == nil {
		err = json.Unmarshal(line, &cfg)
	}
	if err != nil {
		_ = enc.Encode(Report{Error: "child init: bad configuration: " + err.Error()})
		return 1
	}
	// Signals sent to the init (by the command, where Landlock's scoping does not stop it) are caught and dropped.
	// Caught, not ignored: an ignored signal would stay ignored in sh and everything it runs.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT,
		syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGPIPE, syscall.SIGALRM)

	applied := &confine.Applied{Rlimits: map[string]uint64{}}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		_ = enc.Encode(Report{Error: "child init: subreaper: " + err.Error()})
		return 1
	}
	applied.Subreaper = true
	confine.SetRlimits(cfg.Rlimits, applied)

	started := make(chan startResult, 1)
	go confineAndStart(&cfg, applied, started)
	st := <-started
	if st.err != nil {
		_ = enc.Encode(Report{Error: st.err.Error()})
		return 1
	}
	_ = enc.Encode(Report{Setup: applied})

	// Terminate on fd 3 means: SIGTERM to every descendant; EOF (or anything else) means: kill everything now.
	killNow := make(chan struct{})
	go func() {
		for {
			if b, err := ctl.ReadByte(); err != nil || b != Terminate {
				close(killNow)
				return
			}
			proctree.Signal(os.Getpid(), 0, syscall.SIGTERM)
		}
	}()
	exited := make(chan syscall.WaitStatus, 1)
	go reap(st.pid, exited)
	select {
	case ws := <-exited:
		killDescendants(st.pid)
		r := Report{Exited: true, Status: ws.ExitStatus()}
		if ws.Signaled() {
			r.Signal = int(ws.Signal())
		}
		_ = enc.Encode(r)
	case <-killNow:
		killDescendants(st.pid)
	}
	return 0
}

type startResult struct {
	pid int
	err error
}

// confineAndStart confines the calling OS thread and starts sh from it. The goroutine never unlocks its thread and
// never returns after a successful start, so the Go runtime never reuses the confined thread for anything else and
// the thread lives as long as the init.
func confineAndStart(cfg *Config, applied *confine.Applied, started chan<- startResult) {
	runtime.LockOSThread()
	fail := func(format string, a ...any) {
		started <- startResult{err: fmt.Errorf("child init: "+format, a...)}
	}
	// A session keyring of its own, away from the user's (the seccomp filter refuses keyctl from here on).
	_, _, _ = unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0)
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fail("no_new_privs: %v", err)
		return
	}
	applied.NoNewPrivs = true
	serverPid := os.Getppid()
	serverPgid, _ := unix.Getpgid(serverPid)
	if err := seccomp.Install(seccomp.Policy{Fallback: cfg.Seccomp.Fallback, InitPid: os.Getpid(), ServerPid: serverPid, ServerPgid: serverPgid}); err != nil {
		applied.Warnings = append(applied.Warnings, "no seccomp filter (Internet sockets, signals to the server): "+err.Error())
	} else {
		applied.Seccomp = true
	}
	if cfg.Landlock == protocol.LandlockEnforced {
		e, err := landlock.Enforce(cfg.Rules)
		if err != nil {
			fail("landlock: %v", err)
			return
		}
		applied.Landlock, applied.LandlockABI, applied.LandlockNet, applied.LandlockScoped = e.State, e.ABI, e.Net, e.Scoped
		if e.ABI == 0 {
			applied.Warnings = append(applied.Warnings, "the kernel has no Landlock: commands can read and write wherever the run-as user can")
		}
	} else {
		applied.Landlock = cfg.Landlock
	}
	if os.Geteuid() == 0 {
		// After Landlock, which opened its paths as the init's user: only this thread, and what it forks, becomes
		// the run-as user (raw system calls: Go's setuid would change
		// every thread); the init's main thread stays who it was, to kill what the command leaves.
		if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, 0, 0, 0); e != 0 {
			fail("clearing supplementary groups: %v", e)
			return
		}
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, uintptr(cfg.GID), uintptr(cfg.GID), uintptr(cfg.GID)); e != 0 {
			fail("setting the group %d: %v", cfg.GID, e)
			return
		}
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, uintptr(cfg.UID), uintptr(cfg.UID), uintptr(cfg.UID)); e != 0 {
			fail("setting the user %d: %v", cfg.UID, e)
			return
		}
	}
	if err := confine.DropCapabilities(applied); err != nil {
		fail("dropping capabilities: %v", err)
		return
	}
	// The same SIGTERM trap as the namespace mode's shell (nsInitScript), so a stop ends both the same way: the
	// shell waits for the program it runs to end (its own trap may run), then exits 143. On the command's first
	// line, so error messages keep their line numbers.
	pid, err := syscall.ForkExec("/bin/sh", []string{"sh", "-c", "trap 'exit 143' TERM; " + cfg.Command}, &syscall.ProcAttr{
		Dir:   cfg.Dir,
		Env:   cfg.Env,
		Files: []uintptr{0, 1, 2},
		// Its own process group, so the init can kill the group at once without killing itself.
		Sys: &syscall.SysProcAttr{Setpgid: true},
	})
	if err != nil {
		fail("starting sh: %v", err)
		return
	}
	started <- startResult{pid: pid}
	select {}
}

// reap waits for every child; it sends sh's status when sh ends. Orphans reparented to the init are reaped too.
func reap(shPid int, exited chan<- syscall.WaitStatus) {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return
		}
		if pid == shPid {
			exited <- ws
		}
	}
}

// killDescendants leaves no process behind: the init kills sh's process group and then, over and over, every child
// it has — orphans deeper down are reparented to it, the subreaper, as their parents die — until none is left.
func killDescendants(shPid int) {
	_ = syscall.Kill(-shPid, syscall.SIGKILL)
	self := os.Getpid()
	// Killed processes may take a while to die on a busy machine, and their children show up here only then
	// (reparented to the init, the subreaper, as their parents exit), so the loop is bounded by time, not by rounds,
	// and ends only when the init has no child in any state: not alive, not exiting, not a zombie. (Looking for
	// live and zombie children alone missed a child in the middle of its exit, whose own children were then
	// reparented to the host's init once this one had gone: found by TestMainServerCrashKillsCommands under load.)
	for deadline := time.Now().Add(KillGrace); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		for _, k := range proctree.Children(self) {
			_ = syscall.Kill(k, syscall.SIGKILL)
		}
		if !hasChildren() {
			return
		}
	}
}

// hasChildren reports whether the calling process has a child in any state (the reap goroutine collects them).
func hasChildren() bool {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	return err != syscall.ECHILD
}
