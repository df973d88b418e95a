package local

// nsFork starts one command of the namespace mode. Go's os/exec cannot do it: between fork and exec the command
// must join the sandbox's user, network and mount namespaces, get a PID namespace of its own and mount a procfs
// for it, which no SysProcAttr field does. So this file forks the way package syscall does (runtime_BeforeFork,
// a raw clone, only raw system calls in the child, no allocation, no stack growth) and does these steps itself.
//
// Two processes are made:
//
//	server ──clone──▶ keeper ──(setns user, net, mnt; unshare pid, mnt, ipc, uts, cgroup)──clone──▶ PID 1 ──execve──▶ sh
//
// The keeper stays in the server's PID namespace, so the server can wait for it, place it in cgroups and set its
// rlimits before it goes on (everything it forks inherits them); it waits for PID 1 and exits with its status, and
// when it is killed (timeout, cancellation, the server dies) PID 1 gets SIGKILL as its parent-death signal, which
// kills every process of the namespace. PID 1 mounts the fresh procfs, drops every capability, enters a Landlock
// domain of its own and a seccomp filter, and executes the shell.
//
// The child's descriptors: exactly 0, 1 and 2 survive the exec; everything else the server holds, inherited or
// not, is closed in the keeper and close-on-exec in PID 1.

import (
	"syscall"
	"unsafe" // and go:linkname

	"golang.org/x/sys/unix"
)

//go:linkname runtimeBeforeFork syscall.runtime_BeforeFork
func runtimeBeforeFork()

//go:linkname runtimeAfterFork syscall.runtime_AfterFork
func runtimeAfterFork()

//go:linkname runtimeAfterForkInChild syscall.runtime_AfterForkInChild
func runtimeAfterForkInChild()

// Where the keeper keeps the descriptors it needs (stdin, stdout and stderr at 0, 1 and 2).
const (
	fdSync    = 3 // go-ahead from the server (read end)
	fdReport  = 4 // setup failures to the server (write end, close-on-exec)
	fdUserNS  = 5
	fdNetNS   = 6
	fdMntNS   = 7
	fdRuleset = 8 // Landlock ruleset, or closed
	// fdAttach..fdAttach+layerMounts-1: the command's layer (layer_linux.go), detached mounts attached at
	// nsForkArgs.attach, or closed.
	fdAttach = 9
	fdCount  = fdAttach + layerMounts
)

// The steps of the child's setup, reported with the errno when one fails.
const (
	stepFds uint32 = iota + 1
	stepParent
	stepSync
	stepGroups
	stepSetnsUser
	stepSetnsNet
	stepSetnsMnt
	stepSetgid
	stepSetuid
	stepUnshare
	stepFork
	stepSetsid
	stepMountProc
	stepChdir
	stepNoNewPrivs
	stepBounding
	stepSecurebits
	stepLandlockProc
	stepLandlock
	stepSeccomp
	stepExec
	stepAttach
)

var stepNames = map[uint32]string{
	stepFds: "arranging descriptors", stepParent: "parent-death signal", stepSync: "waiting for the go-ahead",
	stepGroups: "clearing supplementary groups", stepSetnsUser: "joining the user namespace",
	stepSetnsNet: "joining the network namespace", stepSetnsMnt: "joining the mount namespace",
	stepSetgid: "setting the group", stepSetuid: "setting the user", stepUnshare: "creating the PID, mount, IPC, UTS and cgroup namespaces",
	stepFork: "forking PID 1", stepSetsid: "setsid", stepMountProc: "mounting /proc", stepChdir: "changing to the working folder",
	stepNoNewPrivs: "no_new_privs", stepBounding: "emptying the capability bounding set", stepSecurebits: "locking the secure bits",
	stepLandlockProc: "adding /proc to the Landlock ruleset", stepLandlock: "entering the Landlock domain",
	stepSeccomp: "installing the seccomp filter", stepExec: "executing the shell",
	stepAttach: "attaching the command's layer (the workspace's overlay, /dev/shm)",
}

// nsForkArgs is everything the child needs, prepared before the fork: the child may not allocate.
type nsForkArgs struct {
	fds          [fdCount]int // descriptors in the forking process, by their place in the child; -1 for none
	cloneFlags   uintptr      // added to the keeper's clone (CLONE_PARENT: the forker forks for the server)
	ppid         uintptr
	dropGroups   bool    // the server is root: clear supplementary groups before leaving the host's user namespace
	unshareFlags uintptr // namespaces PID 1 gets of its own
	proc         *byte   // "/proc"
	procType     *byte   // "proc"
	dir          *byte
	path         *byte
	argv, envv   []*byte // nil-terminated
	lastCap      uintptr
	securebits   uintptr
	procRule     *[12]byte // struct landlock_path_beneath_attr for /proc, parent_fd filled in by the child
	fprog        *unix.SockFprog
	attach       [layerMounts]*byte // where the layer's mounts go: the workspace, /dev/shm
	empty        *byte              // ""
}

// atFdcwd is AT_FDCWD as a system call argument.
const atFdcwd = ^uintptr(99) // -100

// landlockRulePathBeneath is LANDLOCK_RULE_PATH_BENEATH.
const landlockRulePathBeneath = 1

// nsFork forks the keeper and returns its pid. It must run on a locked OS thread that outlives the command (the
// keeper's parent-death signal is tied to the thread). Failures in the child are written to args.fds[fdReport].
//
//go:norace
//go:nocheckptr
//go:noinline
func nsFork(a *nsForkArgs) (pid int, err syscall.Errno) {
	// All variables up front: nothing may be allocated after the fork.
	var (
		r1     uintptr
		e1     syscall.Errno
		moved  [fdCount]int
		i      int
		step   uint32
		report [2]uint32
		b      [1]byte
		status int32
		procfd uintptr
		life   [2]int32
		pfd    [2]int32 // struct pollfd: fd, events | revents<<16
		zero   [2]int64 // struct timespec: do not wait
	)
	runtimeBeforeFork()
	r1, _, e1 = syscall.RawSyscall6(syscall.SYS_CLONE, a.cloneFlags|uintptr(syscall.SIGCHLD), 0, 0, 0, 0, 0)
	if e1 != 0 || r1 != 0 {
		runtimeAfterFork()
		return int(r1), e1
	}

	// The keeper. Signal handlers back to their defaults, the signal mask restored.
	runtimeAfterForkInChild()

	// Descriptors: first move every one we need above the places they go to, then put each in its place, then
	// close everything else. F_DUPFD never overwrites an open descriptor.
	step = stepFds
	for i = 0; i < fdCount; i++ {
		moved[i] = -1
		if a.fds[i] < 0 {
			continue
		}
		r1, _, e1 = syscall.RawSyscall(syscall.SYS_FCNTL, uintptr(a.fds[i]), syscall.F_DUPFD_CLOEXEC, fdCount)
		if e1 != 0 {
			goto exit253
		}
		moved[i] = int(r1)
	}
	for i = 0; i < fdCount; i++ {
		if moved[i] < 0 {
			syscall.RawSyscall(syscall.SYS_CLOSE, uintptr(i), 0, 0)
			continue
		}
		r1 = 0
		if i > 2 {
			r1 = syscall.O_CLOEXEC
		}
		_, _, e1 = syscall.RawSyscall(syscall.SYS_DUP3, uintptr(moved[i]), uintptr(i), r1)
		if e1 != 0 {
			goto exit253
		}
	}
	_, _, e1 = syscall.RawSyscall(unix.SYS_CLOSE_RANGE, fdCount, ^uintptr(0), 0)
	if e1 != 0 {
		goto fail
	}

	step = stepParent
	_, _, e1 = syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0)
	if e1 != 0 {
		goto fail
	}
	r1, _, _ = syscall.RawSyscall(syscall.SYS_GETPPID, 0, 0, 0)
	if r1 != a.ppid {
		goto exit253 // the server is gone already
	}

	// Wait until the server has set our rlimits and cgroups: PID 1 and everything it starts inherit them.
	step = stepSync
	for {
		r1, _, e1 = syscall.RawSyscall(syscall.SYS_READ, fdSync, uintptr(unsafe.Pointer(&b[0])), 1)
		if e1 != syscall.EINTR {
			break
		}
	}
	if e1 != 0 || r1 != 1 {
		goto exit253 // the server gave up on this command
	}
	syscall.RawSyscall(syscall.SYS_CLOSE, fdSync, 0, 0)

	if a.dropGroups {
		step = stepGroups
		_, _, e1 = syscall.RawSyscall(syscall.SYS_SETGROUPS, 0, 0, 0)
		if e1 != 0 {
			goto fail
		}
	}
	step = stepSetnsUser
	_, _, e1 = syscall.RawSyscall(unix.SYS_SETNS, fdUserNS, syscall.CLONE_NEWUSER, 0)
	if e1 != 0 {
		goto fail
	}
	step = stepSetnsNet
	_, _, e1 = syscall.RawSyscall(unix.SYS_SETNS, fdNetNS, syscall.CLONE_NEWNET, 0)
	if e1 != 0 {
		goto fail
	}
	step = stepSetnsMnt
	_, _, e1 = syscall.RawSyscall(unix.SYS_SETNS, fdMntNS, syscall.CLONE_NEWNS, 0)
	if e1 != 0 {
		goto fail
	}
	syscall.RawSyscall(syscall.SYS_CLOSE, fdUserNS, 0, 0)
	syscall.RawSyscall(syscall.SYS_CLOSE, fdNetNS, 0, 0)
	syscall.RawSyscall(syscall.SYS_CLOSE, fdMntNS, 0, 0)
	// Root of the sandbox's user namespace, which is the unprivileged run-as user outside.
	step = stepSetgid
	_, _, e1 = syscall.RawSyscall(syscall.SYS_SETRESGID, 0, 0, 0)
	if e1 != 0 {
		goto fail
	}
	step = stepSetuid
	_, _, e1 = syscall.RawSyscall(syscall.SYS_SETRESUID, 0, 0, 0)
	if e1 != 0 {
		goto fail
	}
	// Changing credentials cleared the parent-death signal: set it again, and make sure the server is still there.
	step = stepParent
	_, _, e1 = syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0)
	if e1 != 0 {
		goto fail
	}
	r1, _, _ = syscall.RawSyscall(syscall.SYS_GETPPID, 0, 0, 0)
	if r1 != a.ppid {
		goto exit253
	}
	step = stepUnshare
	_, _, e1 = syscall.RawSyscall(syscall.SYS_UNSHARE, a.unshareFlags, 0, 0)
	if e1 != 0 {
		goto fail
	}
	// The command's layer, in the mount namespace just made (a copy of the holder's, for this command alone): the
	// overlay over the workspace and the layer's shm over /dev/shm (layer_linux.go). Both or neither come: a
	// sandbox without them (no layer) keeps the holder's view.
	step = stepAttach
	for i = 0; i < layerMounts; i++ {
		if a.fds[fdAttach+i] < 0 {
			continue
		}
		_, _, e1 = syscall.RawSyscall6(unix.SYS_MOVE_MOUNT, uintptr(fdAttach+i), uintptr(unsafe.Pointer(a.empty)),
			atFdcwd, uintptr(unsafe.Pointer(a.attach[i])), unix.MOVE_MOUNT_F_EMPTY_PATH, 0)
		if e1 != 0 {
			goto fail
		}
		syscall.RawSyscall(syscall.SYS_CLOSE, uintptr(fdAttach+i), 0, 0)
	}
	// The life pipe: the keeper holds its write end until it exits; PID 1 sees it close if the keeper died before
	// PID 1 could set its parent-death signal.
	step = stepFork
	_, _, e1 = syscall.RawSyscall(syscall.SYS_PIPE2, uintptr(unsafe.Pointer(&life[0])), syscall.O_CLOEXEC, 0)
	if e1 != 0 {
		goto fail
	}
	r1, _, e1 = syscall.RawSyscall6(syscall.SYS_CLONE, uintptr(syscall.SIGCHLD), 0, 0, 0, 0, 0)
	if e1 != 0 {
		goto fail
	}
	if r1 != 0 {
		// Still the keeper: PID 1 runs. Let go of the report pipe (the server reads it to EOF, which comes when
		// PID 1 has executed the shell) and wait.
		syscall.RawSyscall(syscall.SYS_CLOSE, fdReport, 0, 0)
		syscall.RawSyscall(syscall.SYS_CLOSE, fdRuleset, 0, 0)
		for {
			_, _, e1 = syscall.RawSyscall6(syscall.SYS_WAIT4, r1, uintptr(unsafe.Pointer(&status)), 0, 0, 0, 0)
			if e1 != syscall.EINTR {
				break
			}
		}
		if e1 == 0 && status&0x7f == 0 {
			for {
				syscall.RawSyscall(syscall.SYS_EXIT_GROUP, uintptr((status>>8)&0xff), 0, 0)
			}
		}
		// PID 1 was killed: die the same way, so the server sees a kill.
		r1, _, _ = syscall.RawSyscall(syscall.SYS_GETPID, 0, 0, 0)
		syscall.RawSyscall(syscall.SYS_KILL, r1, uintptr(syscall.SIGKILL), 0)
		for {
			syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 137, 0, 0)
		}
	}

	// PID 1 of the new PID namespace.
	step = stepParent
	_, _, e1 = syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0)
	if e1 != 0 {
		goto fail
	}
	syscall.RawSyscall(syscall.SYS_CLOSE, uintptr(life[1]), 0, 0)
	pfd[0] = life[0]
	pfd[1] = 1 // POLLIN; a closed write end shows as POLLHUP
	r1, _, _ = syscall.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd[0])), 1, uintptr(unsafe.Pointer(&zero[0])), 0, 0, 0)
	if r1 == 1 && pfd[1]>>16&0x10 != 0 {
		goto exit253 // the keeper is gone already
	}
	step = stepSetsid
	_, _, e1 = syscall.RawSyscall(syscall.SYS_SETSID, 0, 0, 0)
	if e1 != 0 {
		goto fail
	}
	step = stepMountProc
	_, _, e1 = syscall.RawSyscall6(syscall.SYS_MOUNT, uintptr(unsafe.Pointer(a.procType)), uintptr(unsafe.Pointer(a.proc)),
		uintptr(unsafe.Pointer(a.procType)), syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, 0, 0)
	if e1 != 0 {
		goto fail
	}
	step = stepChdir
	_, _, e1 = syscall.RawSyscall(syscall.SYS_CHDIR, uintptr(unsafe.Pointer(a.dir)), 0, 0)
	if e1 != 0 {
		goto fail
	}
	// A session keyring of its own (keyctl is refused by the seccomp filter below anyway). Kernels without keys
	// fail here, which is fine.
	syscall.RawSyscall(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0)

	step = stepNoNewPrivs
	_, _, e1 = syscall.RawSyscall6(syscall.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0, 0)
	if e1 != 0 {
		goto fail
	}
	step = stepBounding
	for r1 = 0; r1 <= a.lastCap; r1++ {
		_, _, e1 = syscall.RawSyscall6(syscall.SYS_PRCTL, unix.PR_CAPBSET_DROP, r1, 0, 0, 0, 0)
		if e1 != 0 {
			goto fail
		}
	}
	step = stepSecurebits
	_, _, e1 = syscall.RawSyscall6(syscall.SYS_PRCTL, unix.PR_SET_SECUREBITS, a.securebits, 0, 0, 0, 0)
	if e1 != 0 {
		goto fail
	}
	syscall.RawSyscall6(syscall.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0, 0)

	if a.fds[fdRuleset] >= 0 && a.procRule != nil {
		// This PID namespace's procfs is new, so the ruleset made before the fork cannot name it: add it here.
		step = stepLandlockProc
		r1, _, e1 = syscall.RawSyscall6(syscall.SYS_OPENAT, atFdcwd, uintptr(unsafe.Pointer(a.proc)),
			unix.O_PATH|unix.O_CLOEXEC|unix.O_DIRECTORY, 0, 0, 0)
		if e1 != 0 {
			goto fail
		}
		procfd = r1
		a.procRule[8] = byte(procfd)
		a.procRule[9] = byte(procfd >> 8)
		a.procRule[10] = byte(procfd >> 16)
		a.procRule[11] = byte(procfd >> 24)
		_, _, e1 = syscall.RawSyscall6(unix.SYS_LANDLOCK_ADD_RULE, fdRuleset, landlockRulePathBeneath,
			uintptr(unsafe.Pointer(&a.procRule[0])), 0, 0, 0)
		if e1 != 0 {
			goto fail
		}
		syscall.RawSyscall(syscall.SYS_CLOSE, procfd, 0, 0)
	}
	if a.fds[fdRuleset] >= 0 {
		step = stepLandlock
		_, _, e1 = syscall.RawSyscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fdRuleset, 0, 0)
		if e1 != 0 {
			goto fail
		}
		syscall.RawSyscall(syscall.SYS_CLOSE, fdRuleset, 0, 0)
	}
	if a.fprog != nil {
		step = stepSeccomp
		_, _, e1 = syscall.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(a.fprog)))
		if e1 != 0 {
			goto fail
		}
	}
	// Dropping capabilities may have cleared the parent-death signal too; it survives the exec.
	step = stepParent
	_, _, e1 = syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0)
	if e1 != 0 {
		goto fail
	}
	step = stepExec
	_, _, e1 = syscall.RawSyscall(syscall.SYS_EXECVE, uintptr(unsafe.Pointer(a.path)),
		uintptr(unsafe.Pointer(&a.argv[0])), uintptr(unsafe.Pointer(&a.envv[0])))

fail:
	report[0] = step
	report[1] = uint32(e1)
	syscall.RawSyscall(syscall.SYS_WRITE, fdReport, uintptr(unsafe.Pointer(&report[0])), unsafe.Sizeof(report))
exit253:
	for {
		syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 253, 0, 0)
	}
}
