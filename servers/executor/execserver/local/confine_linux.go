package local

// Confinement primitives of the local backend. The child init of the fallback applies them to one OS thread
// (Landlock before ABI 8, capabilities and no_new_privs are per thread), and every process forked from it inherits
// them. The namespace mode builds its Landlock ruleset with the same rules (nsrun_linux.go) and its PID 1 applies
// it with raw system calls (nsfork_linux.go); its holder brings up loopback with loopbackUp.

import (
	"cmp"
	"fmt"

	"github.com/goalbox/goalbox/pkg/protocol"
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
	// ShmDir is a private /dev/shm commands may write (as the server finds it), or "".
	ShmDir string `json:"shm_dir,omitempty"`
	// DevDir is the /dev commands see, which they may list (as the server finds it: the minimal root's own in the
	// namespace mode, the host's in the fallback).
	DevDir string `json:"dev_dir,omitempty"`
	// PtsDir is the devpts commands open terminals in (the minimal root's own instance in the namespace mode).
	PtsDir string `json:"pts_dir,omitempty"`
}

// appliedConfinement is what was actually put in force, as seen from inside.
type appliedConfinement struct {
	PIDNamespace     bool                   `json:"pid_namespace"`
	MountNamespace   bool                   `json:"mount_namespace"`
	NetworkNamespace bool                   `json:"network_namespace"`
	PrivateProc      bool                   `json:"private_proc"`
	PrivateTmp       bool                   `json:"private_tmp"`
	Subreaper        bool                   `json:"subreaper"`
	Landlock         protocol.LandlockState `json:"landlock"`
	LandlockABI      int                    `json:"landlock_abi"`
	LandlockNet      bool                   `json:"landlock_net"`
	LandlockScoped   bool                   `json:"landlock_scoped"`
	NoNewPrivs       bool                   `json:"no_new_privs"`
	Seccomp          bool                   `json:"seccomp"`
	CapsDropped      bool                   `json:"capabilities_dropped"`
	BoundingDropped  bool                   `json:"bounding_set_dropped"`
	Rlimits          map[string]uint64      `json:"rlimits"`
	Warnings         []string               `json:"warnings,omitempty"`
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
	"nproc":  unix.RLIMIT_NPROC,
}

// landlockConfig is the Landlock configuration for rules r on this kernel, or ok false where there is no Landlock.
func landlockConfig(r sandboxRules) (c landlock.Config, abi int, ok bool) {
	abi, err := ll.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		return c, 0, false
	}
	c = landlock.V11
	if !r.NetHandled {
		c.HandledAccessNet = 0
	}
	return c.BestEffort(), abi, true
}

// sandboxDevices are the device files a command may open, read and write: nothing else under /dev (no disk, no
// console, no other terminal), though it may list /dev.
var sandboxDevices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx"}

// landlockRules are the rules for r: read (and execute) the system and toolchain folders, write the workspace, the
// private temp, home and cache folders, a few device files and the private /dev/shm.
func landlockRules(r sandboxRules) []landlock.Rule {
	rules := []landlock.Rule{
		landlock.RODirs(r.ReadDirs...).IgnoreIfMissing(),
		landlock.ROFiles(r.ReadFiles...).IgnoreIfMissing(),
		landlock.RWDirs(r.WriteDirs...).WithRefer().IgnoreIfMissing(),
		landlock.PathAccess(ll.AccessFSReadDir, cmp.Or(r.DevDir, "/dev")).IgnoreIfMissing(),
		landlock.RWFiles(sandboxDevices...).WithIoctlDev().IgnoreIfMissing(),
		landlock.RWDirs(cmp.Or(r.PtsDir, "/dev/pts")).WithIoctlDev().IgnoreIfMissing(),
	}
	if r.ShmDir != "" {
		rules = append(rules, landlock.RWDirs(r.ShmDir).IgnoreIfMissing())
	}
	return rules
}

// applyLandlock enforces the rules on the calling thread; with NetHandled also no TCP bind or connect; and, where
// the kernel has scoping, no signals to and no abstract sockets of processes outside the domain. The thread must
// have no_new_privs set. On a kernel without Landlock it reports "unavailable" and goes on: the server says so
// loudly.
func applyLandlock(r sandboxRules, applied *appliedConfinement) error {
	c, abi, ok := landlockConfig(r)
	if !ok {
		applied.Landlock = protocol.LandlockUnavailable
		applied.Warnings = append(applied.Warnings, "the kernel has no Landlock: commands can read and write wherever the run-as user can")
		return nil
	}
	applied.LandlockABI = abi
	fd, flags, err := c.NewRulesetFD(landlockRules(r)...)
	if err != nil {
		return err
	}
	if fd < 0 {
		applied.Landlock = protocol.LandlockUnavailable
		return nil
	}
	defer unix.Close(fd)
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return err
	}
	applied.Landlock = protocol.LandlockEnforced
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
	bounding := true
	for c := range lastCap() + 1 {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			bounding = false
			break
		}
	}
	applied.BoundingDropped = bounding
	secure := unix.Prctl(unix.PR_SET_SECUREBITS, capSecurebits, 0, 0, 0) == nil
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
