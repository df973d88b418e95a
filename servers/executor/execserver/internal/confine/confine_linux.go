package confine

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/goalbox/goalbox/pkg/protocol"
	"golang.org/x/sys/unix"
)

// Applied is what was actually put in force, as seen from inside.
type Applied struct {
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

// Rlimit is one resource limit by its name in RlimitByName.
type Rlimit struct {
	Name  string `json:"name"`
	Value uint64 `json:"value"`
}

// RlimitByName are the resources a policy may limit.
var RlimitByName = map[string]int{
	"core":   unix.RLIMIT_CORE,
	"fsize":  unix.RLIMIT_FSIZE,
	"nofile": unix.RLIMIT_NOFILE,
	"data":   unix.RLIMIT_DATA,
	"nproc":  unix.RLIMIT_NPROC,
}

// SetRlimits sets each of limits on the calling process, never above the hard limit it already has (an
// unprivileged process cannot raise it), and records in applied what was set and, as a warning, what was not.
func SetRlimits(limits []Rlimit, applied *Applied) {
	for _, r := range limits {
		res, ok := RlimitByName[r.Name]
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

// Securebits are the secure bits every command runs under: root gets no capabilities from exec, and nothing can
// undo that.
const Securebits = secbitNoroot | secbitNorootLocked | secbitNoSetuidFixup | secbitNoSetuidFixupLocked |
	secbitKeepCapsLocked | secbitNoCapAmbientRaise | secbitNoCapAmbientRaiseLocked

// LastCap is the highest capability number this kernel knows.
func LastCap() int {
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			return n
		}
	}
	return 63
}

// DropCapabilities makes sure nothing exec'd from the calling thread has a capability: it empties the bounding
// set, sets and locks the secure bits that stop root from getting capabilities at exec, clears the ambient set and
// the thread's own sets. The bounding set and the secure bits need CAP_SETPCAP, which a server in a container may
// not have; then no_new_privs (set before) and empty sets still keep exec from giving root its capabilities back,
// and applied carries a warning.
func DropCapabilities(applied *Applied) error {
	bounding := true
	for c := range LastCap() + 1 {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			bounding = false
			break
		}
	}
	applied.BoundingDropped = bounding
	_ = unix.Prctl(unix.PR_SET_SECUREBITS, Securebits, 0, 0, 0)
	_ = unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
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
