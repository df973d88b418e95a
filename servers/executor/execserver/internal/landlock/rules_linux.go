package landlock

import (
	"cmp"

	golandlock "github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/goalbox/goalbox/pkg/protocol"
)

// Rules is what commands may touch.
type Rules struct {
	ReadDirs  []string `json:"read_dirs"`
	ReadFiles []string `json:"read_files"`
	WriteDirs []string `json:"write_dirs"`
	// Devices are the device files commands may open, read and write (with their ioctls); nothing else under /dev,
	// though they may list it.
	Devices []string `json:"devices"`
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

// ABI is this kernel's Landlock ABI version; ok is false where there is no Landlock.
func ABI() (abi int, ok bool) {
	abi, err := ll.LandlockGetABIVersion()
	return abi, err == nil && abi >= 1
}

// config is the Landlock configuration for r on this kernel, or ok false where there is no Landlock.
func config(r Rules) (c golandlock.Config, abi int, ok bool) {
	abi, ok = ABI()
	if !ok {
		return c, 0, false
	}
	c = golandlock.V11
	if !r.NetHandled {
		c.HandledAccessNet = 0
	}
	return c.BestEffort(), abi, true
}

// pathRules are the rules for r: read (and execute) the read folders and files, write the write folders, list
// /dev, use the devices and the terminals, and write the private /dev/shm.
func pathRules(r Rules) []golandlock.Rule {
	rules := []golandlock.Rule{
		golandlock.RODirs(r.ReadDirs...).IgnoreIfMissing(),
		golandlock.ROFiles(r.ReadFiles...).IgnoreIfMissing(),
		golandlock.RWDirs(r.WriteDirs...).WithRefer().IgnoreIfMissing(),
		golandlock.PathAccess(ll.AccessFSReadDir, cmp.Or(r.DevDir, "/dev")).IgnoreIfMissing(),
		golandlock.RWFiles(r.Devices...).WithIoctlDev().IgnoreIfMissing(),
		golandlock.RWDirs(cmp.Or(r.PtsDir, "/dev/pts")).WithIoctlDev().IgnoreIfMissing(),
	}
	if r.ShmDir != "" {
		rules = append(rules, golandlock.RWDirs(r.ShmDir).IgnoreIfMissing())
	}
	return rules
}

// RulesetFD makes the ruleset for r (its descriptor, which the caller closes) without entering it, and the flags
// to enter it with; fd is -1 where the kernel has no Landlock.
func RulesetFD(r Rules) (fd int, flags uint32, err error) {
	c, _, ok := config(r)
	if !ok {
		return -1, 0, nil
	}
	return c.NewRulesetFD(pathRules(r)...)
}

// Enforced is what Enforce put in force.
type Enforced struct {
	State protocol.LandlockState
	ABI   int
	// Net: TCP bind and connect are denied. Scoped: signals to, and abstract sockets of, processes outside the
	// domain are denied.
	Net, Scoped bool
}

// Enforce enforces r on the calling thread; with NetHandled also no TCP bind or connect; and, where the kernel has
// scoping, no signals to and no abstract sockets of processes outside the domain. The thread must have
// no_new_privs set. On a kernel without Landlock it reports LandlockUnavailable with ABI 0 and no error: the caller
// says so loudly.
func Enforce(r Rules) (Enforced, error) {
	abi, _ := ABI()
	fd, flags, err := RulesetFD(r)
	if err != nil || fd < 0 {
		return Enforced{State: protocol.LandlockUnavailable, ABI: abi}, err
	}
	defer unix.Close(fd)
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return Enforced{State: protocol.LandlockUnavailable, ABI: abi}, err
	}
	return Enforced{State: protocol.LandlockEnforced, ABI: abi, Net: r.NetHandled && abi >= 4, Scoped: abi >= 6}, nil
}
