package local

// The namespace mode's sandbox setup, in the order it happens, as a program of steps built from the backend's
// policy (policy_linux.go) once per holder, and run by nsFork in each new keeper and its PID 1 (nsfork_linux.go):
//
//	holder ──clone(CLONE_PARENT)──▶ keeper ──(unshare pid, mnt, ipc, uts, cgroup; attach the layer)──clone──▶ PID 1
//	PID 1: setsid, mount /proc, chdir, no_new_privs, drop capabilities, Landlock, seccomp, execve sh
//
// The holder forks the keeper (holderfork_linux.go), so the keeper is born in the holder's user, network and mount
// namespaces, as their root (the unprivileged run-as user outside), and the server's child (CLONE_PARENT). It stays
// in the server's PID namespace, so the server can wait for it, place it in cgroups and set its rlimits before it
// goes on (everything it forks inherits them); when it is killed (timeout, cancellation, the server dies) PID 1
// gets SIGKILL as its parent-death signal, which kills every process of the namespace.
//
// The child's descriptors: exactly 0, 1 and 2 survive the exec; everything else the holder holds is closed in the
// keeper, and what the program still needs is close-on-exec in PID 1.

import (
	"encoding/binary"
	"fmt"
	"os"
	"syscall"
	"unsafe"

	"github.com/goalbox/goalbox/servers/executor/execserver/internal/confine"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/layer"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/seccomp"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// Where the keeper keeps the descriptors it needs (stdin, stdout and stderr at 0, 1 and 2).
const (
	fdSync    = 3 // go-ahead from the server (read end)
	fdReport  = 4 // setup failures to the server (write end, close-on-exec)
	fdRuleset = 5 // Landlock ruleset, or closed
	// fdAttach..fdAttach+layer.MaxMounts-1: the command's layer (package layer), detached mounts to attach, or
	// closed.
	fdAttach = 6
	fdCount  = fdAttach + layer.MaxMounts
)

// The steps of the setup, reported with the errno when one fails.
const (
	stepFds uint32 = iota + 1
	stepParent
	stepSync
	stepUnshare
	stepAttach
	stepFork
	stepSetsid
	stepMountProc
	stepChdir
	stepNoNewPrivs
	stepBounding
	stepSecurebits
	stepCapset
	stepLandlockProc
	stepLandlock
	stepSeccomp
	stepExec
)

var stepNames = map[uint32]string{
	stepFds: "arranging descriptors", stepParent: "parent-death signal", stepSync: "waiting for the go-ahead",
	stepUnshare: "creating the PID, mount, IPC, UTS and cgroup namespaces",
	stepAttach:  "attaching the command's layer (the overlays of the workspace, home, temp and cache, /dev/shm)",
	stepFork:    "forking PID 1", stepSetsid: "setsid", stepMountProc: "mounting /proc", stepChdir: "changing to the working folder",
	stepNoNewPrivs: "no_new_privs", stepBounding: "emptying the capability bounding set", stepSecurebits: "locking the secure bits",
	stepCapset:       "clearing its own capabilities",
	stepLandlockProc: "adding /proc to the Landlock ruleset", stepLandlock: "entering the Landlock domain",
	stepSeccomp: "installing the seccomp filter", stepExec: "executing the shell",
}

// nsUnshare are the namespaces each command gets of its own (the user, network and mount namespaces it is born in
// are the holder's, shared by the backend's commands).
const nsUnshare = syscall.CLONE_NEWPID | syscall.CLONE_NEWNS | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS | syscall.CLONE_NEWCGROUP

// atFdcwd is AT_FDCWD as a system call argument.
const atFdcwd = ^uintptr(99) // -100

// landlockRulePathBeneath is LANDLOCK_RULE_PATH_BENEATH.
const landlockRulePathBeneath = 1

// The flags of a fork request: which optional descriptors follow the five pipe ends.
const (
	forkRuleset byte = 1 << iota // the Landlock ruleset
	forkLayer                    // the command's layer: layer.MountCount detached mounts (package layer)
)

// keeper is the holder's prepared setup: one program per kind of request (by its flags), the state a fork reads and
// writes, and the memory the programs' steps point into.
type keeper struct {
	state       forkState
	programs    [forkRuleset | forkLayer + 1][]forkStep
	layerMounts int   // the mounts of a layer (layer.MountCount)
	keep        []any // the strings and the seccomp program the steps point to, alive as long as the keeper
}

// newKeeper prepares the setup of policy p's sandboxes.
func newKeeper(p *commandPolicy) (*keeper, error) {
	k := &keeper{layerMounts: layer.MountCount(len(p.PrivateLayers))}
	var bad error // a string with a NUL byte (validate refuses such a policy before it gets here)
	ptr := func(s string) uintptr {
		b, err := syscall.BytePtrFromString(s)
		if err != nil {
			bad = err
			return 0
		}
		k.keep = append(k.keep, b)
		return uintptr(unsafe.Pointer(b))
	}
	strs := func(ss []string) uintptr {
		v, err := syscall.SlicePtrFromStrings(ss)
		if err != nil {
			bad = err
			return 0
		}
		k.keep = append(k.keep, v)
		return uintptr(unsafe.Pointer(&v[0]))
	}
	raw, err := seccomp.Build(p.Seccomp)
	if err != nil {
		return nil, err
	}
	fprog, ins := seccomp.Prog(raw)
	k.keep = append(k.keep, fprog, ins)
	copy(k.state.proc[:], "/proc\x00")
	k.state.capHdr[0] = unix.LINUX_CAPABILITY_VERSION_3
	binary.LittleEndian.PutUint64(k.state.procRule[:8], ll.AccessFSReadFile|ll.AccessFSReadDir)
	k.state.ppid = uintptr(os.Getppid())      // the holder's parent, the server
	k.state.cloneFlags = syscall.CLONE_PARENT // the keeper is the server's child
	for i := range fdCount {
		k.state.fds[i] = -1
	}

	s := setupStrings{dir: ptr(p.Dir), shm: ptr("/dev/shm"), empty: ptr(""), proc: ptr("/proc"), procType: ptr("proc"),
		shell: ptr("/bin/sh"), argv: strs([]string{"sh", "-c", nsInitScript, "sh"}), envv: strs(p.Env),
		fprog: uintptr(unsafe.Pointer(fprog))}
	for _, a := range layer.AttachOrder(p.Dir, p.PrivateLayers, p.LayerKeeps) {
		s.attach = append(s.attach, attachStep{at: ptr(a.At), fd: a.FD, from: ptr(a.From)})
	}
	if bad != nil {
		return nil, fmt.Errorf("the sandbox policy: %w", bad)
	}
	for flags := range k.programs {
		k.programs[flags] = setupProgram(p, s, byte(flags), &k.state)
	}
	return k, nil
}

// setupStrings are the addresses of what the steps name (NUL-terminated strings, argv and envp, the seccomp
// program), kept alive by their keeper.
type setupStrings struct {
	dir, shm, empty, proc, procType, shell, argv, envv, fprog uintptr
	attach                                                    []attachStep // the layer's mounts, in layer.AttachOrder
}

// attachStep attaches one of a layer's mounts: the descriptor at fdAttach+fd at at; with fd -1, a bind of the
// mount at from (attached by an earlier step) at at; with fd -2, a mount parked at from, moved back to at.
type attachStep struct {
	at, from uintptr
	fd       int
}

// setupProgram is the setup of one sandbox, in order, for a request with these flags.
func setupProgram(p *commandPolicy, s setupStrings, flags byte, st *forkState) []forkStep {
	var prog []forkStep
	do := func(op forkOp, step uint32, trap uintptr, args ...uintptr) {
		f := forkStep{op: op, step: step, trap: trap}
		copy(f.args[:], args)
		prog = append(prog, f)
	}
	call := func(step uint32, trap uintptr, args ...uintptr) { do(opCall, step, trap, args...) }
	closeFd := func(fd uintptr) { do(opCallQuiet, 0, syscall.SYS_CLOSE, fd) }

	// The keeper: its descriptors in place, tied to the server, waiting until the server has set its rlimits and
	// cgroups (PID 1 and everything it starts inherit them).
	do(opPlaceFds, stepFds, 0)
	do(opParentAlive, stepParent, 0)
	do(opGoAhead, stepSync, 0)
	closeFd(fdSync)

	// Namespaces of its own, inside the holder's.
	call(stepUnshare, syscall.SYS_UNSHARE, nsUnshare)

	// Mounts: the command's layer, in the mount namespace just made (a copy of the holder's, for this command
	// alone): the overlay over the workspace, the layer's shm over /dev/shm and the private folders' overlays over
	// them, temp's at /tmp too (package layer), in layer.AttachOrder.
	if flags&forkLayer != 0 {
		// First the mounts the layer would cover are parked (layerKeeps), to be moved back in their turn.
		for _, a := range s.attach {
			if a.fd == -2 {
				call(stepAttach, syscall.SYS_MOUNT, a.at, a.from, 0, syscall.MS_BIND|syscall.MS_REC, 0)
			}
		}
		for _, a := range s.attach {
			switch a.fd {
			case -2:
				call(stepAttach, syscall.SYS_MOUNT, a.from, a.at, 0, syscall.MS_MOVE, 0)
				continue
			case -1:
				call(stepAttach, syscall.SYS_MOUNT, a.from, a.at, 0, syscall.MS_BIND, 0)
				continue
			}
			call(stepAttach, unix.SYS_MOVE_MOUNT, uintptr(fdAttach+a.fd), s.empty, atFdcwd, a.at, unix.MOVE_MOUNT_F_EMPTY_PATH)
			closeFd(uintptr(fdAttach + a.fd))
		}
	}

	// PID 1 of the new PID namespace, with a procfs of its own.
	do(opForkInit, stepFork, 0)
	call(stepParent, syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL))
	do(opKeeperAlive, stepParent, 0)
	call(stepSetsid, syscall.SYS_SETSID)
	call(stepMountProc, syscall.SYS_MOUNT, s.procType, s.proc, s.procType, syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC)
	call(stepChdir, syscall.SYS_CHDIR, s.dir)
	// A session keyring of its own (keyctl is refused by the seccomp filter below anyway); kernels without keys
	// fail here, which is fine.
	do(opCallQuiet, 0, unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING)

	// No privilege: no_new_privs, an empty capability bounding set, locked secure bits, no capability left.
	call(stepNoNewPrivs, syscall.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1)
	for c := range uintptr(confine.LastCap() + 1) {
		call(stepBounding, syscall.SYS_PRCTL, unix.PR_CAPBSET_DROP, c)
	}
	call(stepSecurebits, syscall.SYS_PRCTL, unix.PR_SET_SECUREBITS, confine.Securebits)
	do(opCallQuiet, 0, syscall.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL)
	// Its own sets last: the keeper inherited the holder's capabilities, inheritable ones included, which a file's
	// inheritable capabilities would otherwise turn into permitted ones at exec, past the empty bounding set.
	call(stepCapset, unix.SYS_CAPSET, uintptr(unsafe.Pointer(&st.capHdr[0])), uintptr(unsafe.Pointer(&st.capData[0])))

	// Landlock: the ruleset the server made for this command, with this PID namespace's own /proc added.
	if flags&forkRuleset != 0 {
		do(opLandlockProc, stepLandlockProc, 0)
		call(stepLandlock, unix.SYS_LANDLOCK_RESTRICT_SELF, fdRuleset)
		closeFd(fdRuleset)
	}
	// Seccomp, then the parent-death signal once more (dropping capabilities may have cleared it; it survives the
	// exec), and the shell.
	call(stepSeccomp, unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, s.fprog)
	call(stepParent, syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL))
	call(stepExec, syscall.SYS_EXECVE, s.shell, s.argv, s.envv)
	return prog
}

// fork forks a keeper for a request: its descriptors (the five pipe ends, then the Landlock ruleset when flags
// have forkRuleset, then the layer's mounts when they have forkLayer).
func (k *keeper) fork(flags byte, fds []int) (int, syscall.Errno) {
	want := 5
	if flags&forkRuleset != 0 {
		want++
	}
	if flags&forkLayer != 0 {
		want += k.layerMounts
	}
	if flags > forkRuleset|forkLayer || len(fds) != want {
		return 0, syscall.EINVAL
	}
	st := &k.state
	copy(st.fds[:5], fds[:5])
	rest := fds[5:]
	st.fds[fdRuleset] = -1
	if flags&forkRuleset != 0 {
		st.fds[fdRuleset], rest = rest[0], rest[1:]
	}
	for i := range layer.MaxMounts {
		st.fds[fdAttach+i] = -1
		if flags&forkLayer != 0 && i < k.layerMounts {
			st.fds[fdAttach+i] = rest[i]
		}
	}
	syscall.ForkLock.Lock()
	defer syscall.ForkLock.Unlock()
	return nsFork(k.programs[flags], st)
}
