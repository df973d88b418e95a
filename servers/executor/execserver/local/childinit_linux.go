package local

// The child init, used where the server may not create namespaces (a container without CAP_SYS_ADMIN): every
// command runs through a copy of the server's own binary, re-executed in "init" mode (argv[0] is initArg0). The init
// confines the shell it starts — never the server — and stays behind to reap and to kill:
//
//  1. It is a child subreaper: orphans of the command (double forks, setsid) are reparented to it, and it kills
//     every descendant before it exits.
//  2. It sets the rlimits, then, on one locked OS thread, sets no_new_privs, installs a seccomp filter (no Internet
//     sockets, no signals to the server or the init, no ptrace; seccomp_linux.go), enforces the Landlock ruleset
//     (with its TCP rules, as there is no private network namespace), drops every capability and forks sh -c from
//     that thread. The init's main thread stays outside the Landlock domain, so with Landlock's signal scoping the
//     command cannot kill its own init to orphan its children.
//  3. It reads its configuration from fd 3 and then keeps reading: EOF on fd 3 (the server closed it, or the server
//     died) means kill everything now. It reports on fd 4: first what confinement it applied, then how sh ended.
//
// Where namespaces are permitted, nsFork (nsfork_linux.go) starts each command instead, forked by the holder
// (holderfork_linux.go), which is re-executed once per backend, not once per command.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/goalbox/goalbox/pkg/protocol"
	"golang.org/x/sys/unix"
)

// initTerminate, written to a running init's fd 3, asks it to send SIGTERM to every process of the command.
const initTerminate = 't'

// initArg0 marks a re-executed child init.
const initArg0 = "goalbox-exec-init"

// initConfig is what the server tells a child init, as one JSON line on fd 3.
type initConfig struct {
	Command string        `json:"command"`
	Dir     string        `json:"dir"` // absolute host path of the working folder
	Policy  commandPolicy `json:"policy"`
}

// initReport is one JSON line a child init writes on fd 4.
type initReport struct {
	// Setup is sent once sh is running: what confinement is in force.
	Setup *appliedConfinement `json:"setup,omitempty"`
	// Error means sh could not be started.
	Error string `json:"error,omitempty"`
	// Exited is sent when sh ended: its exit status, or the signal that killed it.
	Exited bool `json:"exited,omitempty"`
	Status int  `json:"status,omitempty"`
	Signal int  `json:"signal,omitempty"`
}

func init() {
	if len(os.Args) > 0 {
		switch os.Args[0] {
		case initArg0:
			os.Exit(childInit())
		case holderArg0:
			os.Exit(holderMain())
		}
	}
}

func childInit() int {
	// fds 3 and 4 came without close-on-exec, and so may anything the server leaked; sh gets 0, 1 and 2 only.
	_ = unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	report := os.NewFile(4, "report")
	enc := json.NewEncoder(report)
	ctl := bufio.NewReader(os.NewFile(3, "control"))
	line, err := ctl.ReadBytes('\n')
	var cfg initConfig
	if err == nil {
		err = json.Unmarshal(line, &cfg)
	}
	if err != nil {
		_ = enc.Encode(initReport{Error: "child init: bad configuration: " + err.Error()})
		return 1
	}
	// Signals sent to the init (by the command, where Landlock's scoping does not stop it) are caught and dropped.
	// Caught, not ignored: an ignored signal would stay ignored in sh and everything it runs.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT,
		syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGPIPE, syscall.SIGALRM)

	applied := &appliedConfinement{Rlimits: map[string]uint64{}}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		_ = enc.Encode(initReport{Error: "child init: subreaper: " + err.Error()})
		return 1
	}
	applied.Subreaper = true
	for _, r := range cfg.Policy.Rlimits {
		res, ok := rlimitByName[r.Name]
		if !ok {
			continue
		}
		lim := syscall.Rlimit{Cur: r.Value, Max: r.Value}
		var old syscall.Rlimit
		if syscall.Getrlimit(res, &old) == nil && old.Max < lim.Max {
			lim = syscall.Rlimit{Cur: old.Max, Max: old.Max}
		}
		// syscall.Setrlimit, not unix: it also stops the Go runtime from restoring its own NOFILE limit in children.
		if err := syscall.Setrlimit(res, &lim); err != nil {
			applied.Warnings = append(applied.Warnings, fmt.Sprintf("rlimit %s not set: %v", r.Name, err))
			continue
		}
		applied.Rlimits[r.Name] = lim.Cur
	}

	started := make(chan startResult, 1)
	go confineAndStart(&cfg, applied, started)
	st := <-started
	if st.err != nil {
		_ = enc.Encode(initReport{Error: st.err.Error()})
		return 1
	}
	_ = enc.Encode(initReport{Setup: applied})

	// initTerminate on fd 3 means: SIGTERM to every descendant; EOF (or anything else) means: kill everything now.
	killNow := make(chan struct{})
	go func() {
		for {
			if b, err := ctl.ReadByte(); err != nil || b != initTerminate {
				close(killNow)
				return
			}
			signalTree(os.Getpid(), 0, syscall.SIGTERM)
		}
	}()
	exited := make(chan syscall.WaitStatus, 1)
	go reap(st.pid, exited)
	select {
	case ws := <-exited:
		killDescendants(st.pid)
		r := initReport{Exited: true, Status: ws.ExitStatus()}
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
func confineAndStart(cfg *initConfig, applied *appliedConfinement, started chan<- startResult) {
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
	if err := installSeccomp(seccompPolicy{Fallback: cfg.Policy.Seccomp.Fallback, InitPid: os.Getpid(), ServerPid: serverPid, ServerPgid: serverPgid}); err != nil {
		applied.Warnings = append(applied.Warnings, "no seccomp filter (Internet sockets, signals to the server): "+err.Error())
	} else {
		applied.Seccomp = true
	}
	if cfg.Policy.Landlock == protocol.LandlockEnforced {
		if err := applyLandlock(cfg.Policy.Rules, applied); err != nil {
			fail("landlock: %v", err)
			return
		}
	} else {
		applied.Landlock = cfg.Policy.Landlock
	}
	if os.Geteuid() == 0 {
		// After Landlock, which opened its paths as the init's user: only this thread, and what it forks, becomes
		// the run-as user (raw system calls: Go's setuid would change
		// every thread); the init's main thread stays who it was, to kill what the command leaves.
		if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, 0, 0, 0); e != 0 {
			fail("clearing supplementary groups: %v", e)
			return
		}
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, uintptr(cfg.Policy.GID), uintptr(cfg.Policy.GID), uintptr(cfg.Policy.GID)); e != 0 {
			fail("setting the group %d: %v", cfg.Policy.GID, e)
			return
		}
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, uintptr(cfg.Policy.UID), uintptr(cfg.Policy.UID), uintptr(cfg.Policy.UID)); e != 0 {
			fail("setting the user %d: %v", cfg.Policy.UID, e)
			return
		}
	}
	if err := dropCapabilities(applied, true); err != nil {
		fail("dropping capabilities: %v", err)
		return
	}
	// The same SIGTERM trap as the namespace mode's shell (nsInitScript), so a stop ends both the same way: the
	// shell waits for the program it runs to end (its own trap may run), then exits 143. On the command's first
	// line, so error messages keep their line numbers.
	pid, err := syscall.ForkExec("/bin/sh", []string{"sh", "-c", "trap 'exit 143' TERM; " + cfg.Command}, &syscall.ProcAttr{
		Dir:   cfg.Dir,
		Env:   cfg.Policy.Env,
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
	for deadline := time.Now().Add(initKillGrace); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		for _, k := range childrenOf(self) {
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

// childrenOf lists the live children of process pid, from /proc/<pid>/task/<tid>/children (orphans are
// reparented to one of the subreaper's threads), falling back to a scan of /proc where that file is missing.
func childrenOf(pid int) []int {
	base := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(base)
	if err != nil {
		return scanChildrenOf(pid)
	}
	var kids []int
	for _, t := range tasks {
		b, err := os.ReadFile(base + "/" + t.Name() + "/children")
		if err != nil {
			return scanChildrenOf(pid)
		}
		for _, f := range strings.Fields(string(b)) {
			if k, err := strconv.Atoi(f); err == nil && !isZombie(k) {
				kids = append(kids, k)
			}
		}
	}
	return kids
}

func isZombie(pid int) bool {
	_, state, ok := statFields(pid)
	return !ok || state == "Z"
}

// statFields reads the parent pid and the state of a process from /proc/<pid>/stat.
func statFields(pid int) (ppid int, state string, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, "", false
	}
	// The command name in parentheses may hold spaces and parentheses; the fields after the last ")" are fixed.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, "", false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, "", false
	}
	ppid, _ = strconv.Atoi(f[1])
	return ppid, f[0], true
}

// scanChildrenOf lists the live processes whose parent is pid by reading every /proc/<pid>/stat.
func scanChildrenOf(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var kids []int
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, state, ok := statFields(p); ok && ppid == pid && state != "Z" {
			kids = append(kids, p)
		}
	}
	return kids
}
