package execserver

// Confinement primitives of the local backend, applied to one OS thread (Landlock before ABI 8, capabilities and
// no_new_privs are per thread) and inherited by every process forked from it. Both the launcher thread (namespace
// mode) and the child init (fallback) use them.

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// sandboxRules is what commands may touch.
type sandboxRules struct {
	ReadDirs  []string `json:"read_dirs"`
	ReadFiles []string `json:"read_files"`
	WriteDirs []string `json:"write_dirs"`
	// NetHandled denies TCP bind and connect (used when there is no private network namespace).
	NetHandled bool `json:"net_handled"`
	// PrivateShm makes /dev/shm writable (it is a private tmpfs then).
	PrivateShm bool `json:"private_shm"`
}

// appliedConfinement is what was actually put in force, as seen from inside.
type appliedConfinement struct {
	PIDNamespace     bool              `json:"pid_namespace"`
	MountNamespace   bool              `json:"mount_namespace"`
	NetworkNamespace bool              `json:"network_namespace"`
	PrivateProc      bool              `json:"private_proc"`
	PrivateTmp       bool              `json:"private_tmp"`
	Subreaper        bool              `json:"subreaper"`
	Landlock         string            `json:"landlock"`
	LandlockABI      int               `json:"landlock_abi"`
	LandlockNet      bool              `json:"landlock_net"`
	LandlockScoped   bool              `json:"landlock_scoped"`
	NoNewPrivs       bool              `json:"no_new_privs"`
	Seccomp          bool              `json:"seccomp"`
	CapsDropped      bool              `json:"capabilities_dropped"`
	BoundingDropped  bool              `json:"bounding_set_dropped"`
	Rlimits          map[string]uint64 `json:"rlimits"`
	Warnings         []string          `json:"warnings,omitempty"`
}

type rlimitV struct {
	Name  string `json:"name"`
	Value uint64 `json:"value"`
}

var rlimitByName = map[string]int{
	"core":   unix.RLIMIT_CORE,
	"fsize":  unix.RLIMIT_FSIZE,
	"nofile": unix.RLIMIT_NOFILE,
	"data":   unix.RLIMIT_DATA,
}

// applyLandlock enforces the ruleset on the calling thread: read (and execute) the system and toolchain folders,
// write the workspace, the private temp, home and cache folders and a few device files; with NetHandled also no TCP
// bind or connect; and, where the kernel has scoping, no signals to and no abstract sockets of processes outside
// the domain. The thread must have no_new_privs set. On a kernel without Landlock it reports "unavailable" and goes
// on: the server says so loudly.
func applyLandlock(r sandboxRules, applied *appliedConfinement) error {
	abi, err := ll.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		applied.Landlock = "unavailable"
		applied.Warnings = append(applied.Warnings, "the kernel has no Landlock: commands can read and write wherever the server's user can")
		return nil
	}
	applied.LandlockABI = abi
	c := landlock.V11
	if !r.NetHandled {
		c.HandledAccessNet = 0
	}
	rules := []landlock.Rule{
		landlock.RODirs(r.ReadDirs...).IgnoreIfMissing(),
		landlock.ROFiles(r.ReadFiles...).IgnoreIfMissing(),
		landlock.RWDirs(r.WriteDirs...).WithRefer().IgnoreIfMissing(),
		landlock.RWFiles("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty").WithIoctlDev().IgnoreIfMissing(),
	}
	if r.PrivateShm {
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
	applied.LandlockNet = r.NetHandled && abi >= 4
	applied.LandlockScoped = abi >= 6
	return nil
}

// Secure bits (linux/securebits.h): root gets no capabilities from exec, and nothing can undo that.
const (
	secbitNoroot                  = 1 << 0
	secbitNorootLocked            = 1 << 1
	secbitNoSetuidFixup           = 1 << 2
	secbitNoSetuidFixupLocked     = 1 << 3
	secbitKeepCapsLocked          = 1 << 5
	secbitNoCapAmbientRaise       = 1 << 6
	secbitNoCapAmbientRaiseLocked = 1 << 7
)

// dropCapabilities makes sure nothing exec'd from the calling thread has a capability: it empties the bounding
// set, sets and locks the secure bits that stop root from getting capabilities at exec, and clears the ambient set.
// With clearOwn it also clears the thread's own sets. The bounding set and the secure bits need CAP_SETPCAP,
// which a server in a container may not have; then no_new_privs (set before) and empty sets still keep exec from
// giving root its capabilities back.
func dropCapabilities(applied *appliedConfinement, clearOwn bool) error {
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
	bits := secbitNoroot | secbitNorootLocked | secbitNoSetuidFixup | secbitNoSetuidFixupLocked |
		secbitKeepCapsLocked | secbitNoCapAmbientRaise | secbitNoCapAmbientRaiseLocked
	secure := unix.Prctl(unix.PR_SET_SECUREBITS, uintptr(bits), 0, 0, 0) == nil
	_ = unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	if !clearOwn {
		if !bounding || !secure {
			return fmt.Errorf("cannot drop the capability bounding set or set the secure bits (no CAP_SETPCAP)")
		}
		applied.CapsDropped = true
		return nil
	}
	if !bounding {
		applied.Warnings = append(applied.Warnings, "capability bounding set not dropped (no CAP_SETPCAP); no_new_privs and empty sets still hold")
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return err
	}
	applied.CapsDropped = true
	return nil
}

// maskHostPaths hides what a mount namespace can hide from commands: /run holds the host's sockets (the Docker
// socket among them), and connecting to a socket is not something Landlock stops on kernels before ABI 9; /dev/shm
// gets a private, size-capped tmpfs. A folder that holds one of the needed paths is left alone.
func maskHostPaths(needed []string, applied *appliedConfinement) {
	for _, m := range []struct{ dir, opts string }{{"/run", "size=1m,mode=755"}, {"/var/run", "size=1m,mode=755"}, {"/dev/shm", "size=64m,mode=1777"}} {
		if fi, err := os.Lstat(m.dir); err != nil || !fi.IsDir() || coversAny(m.dir, needed) {
			continue
		}
		if err := unix.Mount("tmpfs", m.dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, m.opts); err != nil {
			applied.Warnings = append(applied.Warnings, fmt.Sprintf("could not mask %s: %v", m.dir, err))
		}
	}
}

func coversAny(dir string, paths []string) bool {
	for _, p := range paths {
		if p == dir || strings.HasPrefix(p, dir+"/") {
			return true
		}
	}
	return false
}

// loopbackUp brings up the loopback interface of the calling thread's network namespace.
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

// privateTmp puts the private temp folder over /tmp, for programs that write to /tmp whatever TMPDIR says (the JVM,
// for one). Paths the commands need that lie under /tmp (a workspace in /tmp, say) are bound back at their own
// paths inside the new /tmp, so they stay where they were.
func privateTmp(priv string, needed []string) error {
	var keep []string
	for _, p := range needed {
		if p == "/tmp" {
			return errors.New("a needed path is /tmp itself")
		}
		if strings.HasPrefix(p, "/tmp/") {
			keep = append(keep, p)
		}
	}
	// Only the outermost: binding a folder brings along what is inside it.
	var outer []string
	for _, p := range keep {
		inner := false
		for _, q := range keep {
			if q != p && strings.HasPrefix(p, q+"/") {
				inner = true
			}
		}
		if !inner && !slices.Contains(outer, p) {
			outer = append(outer, p)
		}
	}
	fds := make([]int, len(outer))
	for i, p := range outer {
		fd, err := unix.Open(p, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			for _, f := range fds[:i] {
				unix.Close(f)
			}
			return fmt.Errorf("open %s: %w", p, err)
		}
		fds[i] = fd
	}
	defer func() {
		for _, f := range fds {
			unix.Close(f)
		}
	}()
	if err := unix.Mount(priv, "/tmp", "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind the private temp folder on /tmp: %w", err)
	}
	for i, p := range outer {
		if err := os.MkdirAll(p, 0o700); err != nil {
			return err
		}
		src := fmt.Sprintf("/proc/thread-self/fd/%d", fds[i])
		if err := unix.Mount(src, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s back: %w", p, err)
		}
	}
	return nil
}
