package execserver

// The child init: the local backend runs every command through a copy of the server's own binary, re-executed in
// "init" mode (argv[0] is initArg0). The init confines itself and the shell it starts — never the server — and stays
// behind to reap and to kill:
//
//  1. In namespace mode it is PID 1 of a fresh PID namespace (and mount, network and IPC namespaces). It mounts a
//     /proc that shows only the namespace's processes, hides /run and gives /dev/shm a private tmpfs, and brings up
//     a private loopback. When it exits, the kernel kills every process left in the namespace: nothing escapes, not a
//     double fork, not setsid.
//  2. Without namespaces (a container without CAP_SYS_ADMIN) it is a child subreaper: orphans of the command are
//     reparented to it, and it kills every descendant before it exits.
//  3. It sets the rlimits, then, on one locked OS thread, sets no_new_privs, enforces the Landlock ruleset, drops
//     every capability (bounding set, ambient, effective, permitted, inheritable, securebits locked) and forks
//     sh -c from that thread. The init's main thread stays outside the Landlock domain, so with Landlock's signal
//     scoping the command cannot kill its own init to orphan its children.
//  4. It reads its configuration from fd 3 and then keeps reading: EOF on fd 3 (the server closed it, or the server
//     died) means kill everything now. It reports on fd 4: first what confinement it applied, then how sh ended.

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

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// initArg0 marks a re-executed child init.
const initArg0 = "goalbox-exec-init"

// initConfig is what the server tells a child init, as one JSON line on fd 3.
type initConfig struct {
	Command    string    `json:"command"`
	Dir        string    `json:"dir"` // absolute host path of the working folder
	Env        []string  `json:"env"`
	Namespaces bool      `json:"namespaces"` // PID 1 of fresh PID, mount, network and IPC namespaces
	Landlock   bool      `json:"landlock"`
	ReadDirs   []string  `json:"read_dirs"`
	ReadFiles  []string  `json:"read_files"`
	WriteDirs  []string  `json:"write_dirs"`
	Rlimits    []rlimitV `json:"rlimits"`
}

type rlimitV struct {
	Name  string `json:"name"`
	Value uint64 `json:"value"`
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

// appliedConfinement is what a child init actually put in force, as seen from inside.
type appliedConfinement struct {
	PIDNamespace     bool              `json:"pid_namespace"`
	MountNamespace   bool              `json:"mount_namespace"`
	NetworkNamespace bool              `json:"network_namespace"`
	Subreaper        bool              `json:"subreaper"`
	Landlock         string            `json:"landlock"`
	LandlockABI      int               `json:"landlock_abi"`
	LandlockNet      bool              `json:"landlock_net"`
	LandlockScoped   bool              `json:"landlock_scoped"`
	NoNewPrivs       bool              `json:"no_new_privs"`
	CapsDropped      bool              `json:"capabilities_dropped"`
	BoundingDropped  bool              `json:"bounding_set_dropped"`
	Rlimits          map[string]uint64 `json:"rlimits"`
	Warnings         []string          `json:"warnings,omitempty"`
}

var rlimitByName = map[string]int{
	"core":   unix.RLIMIT_CORE,
	"fsize":  unix.RLIMIT_FSIZE,
	"nofile": unix.RLIMIT_NOFILE,
	"data":   unix.RLIMIT_DATA,
	"stack":  unix.RLIMIT_STACK,
}

func init() {
	if len(os.Args) > 0 && os.Args[0] == initArg0 {
		os.Exit(childInit())
	}
}

func childInit() int {
	// fds 3 and 4 came without close-on-exec; sh must not inherit them.
	unix.CloseOnExec(3)
	unix.CloseOnExec(4)
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
	// Signals the command sends to its init (in a PID namespace: kill 1) are caught and dropped. Caught, not
	// ignored: an ignored signal would stay ignored in sh and everything it runs.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT,
		syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGPIPE, syscall.SIGALRM)

	applied := &appliedConfinement{Rlimits: map[string]uint64{}}
	if cfg.Namespaces {
		if err := setupNamespaces(&cfg, applied); err != nil {
			_ = enc.Encode(initReport{Error: "child init: namespaces: " + err.Error()})
			return 1
		}
	} else {
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			_ = enc.Encode(initReport{Error: "child init: subreaper: " + err.Error()})
			return 1
		}
		applied.Subreaper = true
	}
	for _, r := range cfg.Rlimits {
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

	// EOF (or anything) on fd 3 means: kill everything now.
	killNow := make(chan struct{})
	go func() {
		_, _ = ctl.ReadByte()
		close(killNow)
	}()
	exited := make(chan syscall.WaitStatus, 1)
	go reap(st.pid, exited)
	select {
	case ws := <-exited:
		killDescendants(cfg.Namespaces, st.pid)
		r := initReport{Exited: true, Status: ws.ExitStatus()}
		if ws.Signaled() {
			r.Signal = int(ws.Signal())
		}
		_ = enc.Encode(r)
	case <-killNow:
		killDescendants(cfg.Namespaces, st.pid)
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
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fail("no_new_privs: %v", err)
		return
	}
	applied.NoNewPrivs = true
	if cfg.Landlock {
		if err := applyLandlock(cfg, applied); err != nil {
			fail("landlock: %v", err)
			return
		}
	} else {
		applied.Landlock = "off"
	}
	if err := dropCapabilities(applied); err != nil {
		fail("dropping capabilities: %v", err)
		return
	}
	pid, err := syscall.ForkExec("/bin/sh", []string{"sh", "-c", cfg.Command}, &syscall.ProcAttr{
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

// applyLandlock enforces the ruleset on this thread: read (and execute) the system and toolchain folders, write the
// workspace, the private temp, home and cache folders and a few device files; with no network namespace also no
// TCP bind or connect; and, where the kernel has scoping, no signals to and no abstract sockets of processes outside
// the domain. On a kernel without Landlock it reports "unavailable" and goes on: the server says so loudly.
func applyLandlock(cfg *initConfig, applied *appliedConfinement) error {
	abi, err := ll.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		applied.Landlock = "unavailable"
		applied.Warnings = append(applied.Warnings, "the kernel has no Landlock: commands can read and write wherever the server's user can")
		return nil
	}
	applied.LandlockABI = abi
	c := landlock.V11
	if cfg.Namespaces {
		// The private network namespace has only a loopback of its own; TCP there harms nobody, and test suites
		// that start a local server need it.
		c.HandledAccessNet = 0
	}
	rules := []landlock.Rule{
		landlock.RODirs(cfg.ReadDirs...).IgnoreIfMissing(),
		landlock.ROFiles(cfg.ReadFiles...).IgnoreIfMissing(),
		landlock.RWDirs(cfg.WriteDirs...).WithRefer().IgnoreIfMissing(),
		landlock.RWFiles("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty").WithIoctlDev().IgnoreIfMissing(),
	}
	if cfg.Namespaces {
		rules = append(rules, landlock.RWDirs("/dev/shm").IgnoreIfMissing())
	}
	fd, flags, err := c.BestEffort().NewRulesetFD(rules...)
	if err != nil {
		return err
	}
	if fd < 0 {
		applied.Landlock = "unavailable"
		return nil
	}
	defer unix.Close(fd)
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return err
	}
	applied.Landlock = "enforced"
	applied.LandlockNet = !cfg.Namespaces && abi >= 4
	applied.LandlockScoped = abi >= 6
	return nil
}

// Secure bits (linux/securebits.h): root gets no capabilities from exec, and nothing can undo that.
const (
	secbitNoroot                 = 1 << 0
	secbitNorootLocked           = 1 << 1
	secbitNoSetuidFixup          = 1 << 2
	secbitNoSetuidFixupLocked    = 1 << 3
	secbitKeepCapsLocked         = 1 << 5
	secbitNoCapAmbientRaise      = 1 << 6
	secbitNoCapAmbientRaiseLockd = 1 << 7
)

// dropCapabilities drops every capability of this thread for good. The bounding set and the secure bits need
// CAP_SETPCAP, which an init in a container may not have; then clearing the sets is enough, because no_new_privs
// keeps exec from giving root its capabilities back.
func dropCapabilities(applied *appliedConfinement) error {
	last := 63
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			last = n
		}
	}
	bounding := true
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			bounding = false
			break
		}
	}
	applied.BoundingDropped = bounding
	if bounding {
		bits := secbitNoroot | secbitNorootLocked | secbitNoSetuidFixup | secbitNoSetuidFixupLocked |
			secbitKeepCapsLocked | secbitNoCapAmbientRaise | secbitNoCapAmbientRaiseLockd
		if err := unix.Prctl(unix.PR_SET_SECUREBITS, uintptr(bits), 0, 0, 0); err != nil {
			applied.Warnings = append(applied.Warnings, "secure bits not set: "+err.Error())
		}
	} else {
		applied.Warnings = append(applied.Warnings, "capability bounding set not dropped (no CAP_SETPCAP); no_new_privs and empty sets still hold")
	}
	_ = unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return err
	}
	applied.CapsDropped = true
	return nil
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

// killDescendants leaves no process behind. In a PID namespace the init's own exit does it: the kernel kills every
// process in the namespace. Otherwise the init kills sh's process group and then, over and over, every child it has
// — orphans deeper down are reparented to it, the subreaper, as their parents die — until none is left.
func killDescendants(namespaces bool, shPid int) {
	if namespaces {
		return
	}
	_ = syscall.Kill(-shPid, syscall.SIGKILL)
	self := os.Getpid()
	for range 10000 {
		kids := childrenOf(self)
		if len(kids) == 0 {
			return
		}
		for _, k := range kids {
			_ = syscall.Kill(k, syscall.SIGKILL)
		}
		// The reap goroutine collects the dead; give it a moment so reparented grandchildren show up.
		runtime.Gosched()
	}
}

// childrenOf lists the processes whose parent is pid, from /proc.
func childrenOf(pid int) []int {
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
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The command name in parentheses may hold spaces and parentheses; the fields after the last ")" are fixed.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 || f[0] == "Z" {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); ppid == pid {
			kids = append(kids, p)
		}
	}
	return kids
}

// setupNamespaces prepares the fresh namespaces, while the init still has its capabilities.
func setupNamespaces(cfg *initConfig, applied *appliedConfinement) error {
	applied.PIDNamespace = os.Getpid() == 1
	// Nothing mounted here may propagate back to the host.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	applied.MountNamespace = true
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	// /run holds the host's sockets (the Docker socket among them); connecting to a socket is not something
	// Landlock stops on this kernel, so hide them. /dev/shm gets a private, size-capped tmpfs.
	needed := append(append([]string{cfg.Dir}, cfg.WriteDirs...), cfg.ReadDirs...)
	for _, m := range []struct{ dir, opts string }{{"/run", "size=1m,mode=755"}, {"/var/run", "size=1m,mode=755"}, {"/dev/shm", "size=64m,mode=1777"}} {
		if fi, err := os.Lstat(m.dir); err != nil || !fi.IsDir() || coversAny(m.dir, needed) {
			continue
		}
		if err := unix.Mount("tmpfs", m.dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, m.opts); err != nil {
			applied.Warnings = append(applied.Warnings, fmt.Sprintf("could not mask %s: %v", m.dir, err))
		}
	}
	if err := loopbackUp(); err != nil {
		applied.Warnings = append(applied.Warnings, "loopback not up in the network namespace: "+err.Error())
	}
	applied.NetworkNamespace = true
	return nil
}

func coversAny(dir string, paths []string) bool {
	for _, p := range paths {
		if p == dir || strings.HasPrefix(p, dir+"/") {
			return true
		}
	}
	return false
}

func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}
