package local

// The one thing Go cannot do, fenced here (README.md says why, as runc fences nsexec): between fork and exec a
// command must join the sandbox's user, network and mount namespaces, get a PID namespace of its own and mount a
// procfs for it, which no SysProcAttr field does. So nsFork forks the way package syscall does (runtime_BeforeFork,
// a raw clone, then in the child only raw system calls: no allocation, no stack growth, no Go function call) and
// runs a program of steps that ordinary Go code built before the fork (keeper_linux.go: the sandbox's setup, in
// order, from the backend's policy). This file only interprets that program; it decides nothing.
//
// Two processes are made: the keeper (the clone here), and PID 1 of the new PID namespace (a clone the program
// asks for with opForkInit). The keeper stays in the server's PID namespace, waits for PID 1 and exits with its
// status; PID 1 goes on through the rest of the program and ends in execve.

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

// forkOp is what one step of a keeper's program does in the child.
type forkOp uint8

const (
	// opCall makes the step's system call; a failure ends the setup, reported with the step and the errno.
	opCall forkOp = iota
	// opCallQuiet makes the system call whatever it returns (closing a descriptor, an optional keyring).
	opCallQuiet
	// opPlaceFds puts each descriptor of forkState.fds at its place (close-on-exec above 2) and closes every other.
	opPlaceFds
	// opParentAlive sets SIGKILL as the parent-death signal and ends quietly when the server is gone already.
	opParentAlive
	// opGoAhead waits for the server's one byte on fdSync; end of file (the server gave up) ends quietly.
	opGoAhead
	// opForkInit forks PID 1 with a life pipe; the keeper then only waits for PID 1 and exits as it did.
	opForkInit
	// opKeeperAlive (PID 1) ends quietly when the keeper died before PID 1 set its parent-death signal.
	opKeeperAlive
	// opLandlockProc adds PID 1's own /proc, which did not exist when the ruleset was made, to the ruleset.
	opLandlockProc
)

// forkStep is one step: what it does, which step it is in a failure report, and the system call with its arguments
// (pointers into memory that outlives every fork: forkState, keeperStrings).
type forkStep struct {
	op   forkOp
	step uint32
	trap uintptr
	args [6]uintptr
}

// forkState is what one fork reads and writes, set up before it: the child may not allocate, so its scratch space
// is here too. The child works on its own copy-on-write copy.
type forkState struct {
	fds        [fdCount]int // descriptors in the forking process, by their place in the child; -1 for none
	cloneFlags uintptr      // added to the keeper's clone (CLONE_PARENT: the holder forks for the server)
	ppid       uintptr      // the server, the keeper's parent

	moved    [fdCount]int
	report   [2]uint32 // step, errno
	goAhead  [1]byte
	status   int32
	life     [2]int32
	pollfd   [2]int32  // struct pollfd: fd, events | revents<<16
	noWait   [2]int64  // struct timespec 0: do not wait
	procRule [12]byte  // struct landlock_path_beneath_attr for /proc; parent_fd filled in by the child
	proc     [6]byte   // "/proc"
	capHdr   [2]uint32 // struct __user_cap_header_struct: version 3, this process
	capData  [6]uint32 // two struct __user_cap_data_struct, all zero: no capability in any set
}

// nsFork forks the keeper, which runs prog, and returns its pid. It must run on a locked OS thread that outlives
// the command (the keeper's parent-death signal is tied to the thread). Failures in the child are written to
// fdReport as the failing step and its errno.
//
//go:norace
//go:nocheckptr
//go:noinline
func nsFork(prog []forkStep, st *forkState) (pid int, err syscall.Errno) {
	// All variables up front: nothing may be allocated after the fork.
	var (
		r1    uintptr
		e1    syscall.Errno
		i, j  int
		s     *forkStep
		quiet bool
	)
	runtimeBeforeFork()
	r1, _, e1 = syscall.RawSyscall6(syscall.SYS_CLONE, st.cloneFlags|uintptr(syscall.SIGCHLD), 0, 0, 0, 0, 0)
	if e1 != 0 || r1 != 0 {
		runtimeAfterFork()
		return int(r1), e1
	}
	// The keeper. Signal handlers back to their defaults, the signal mask restored.
	runtimeAfterForkInChild()

	for i = 0; i < len(prog) && e1 == 0 && !quiet; i++ {
		s = &prog[i]
		switch s.op {
		case opCall:
			_, _, e1 = syscall.RawSyscall6(s.trap, s.args[0], s.args[1], s.args[2], s.args[3], s.args[4], s.args[5])
		case opCallQuiet:
			syscall.RawSyscall6(s.trap, s.args[0], s.args[1], s.args[2], s.args[3], s.args[4], s.args[5])
		case opPlaceFds:
			// First move every descriptor above the places they go to (F_DUPFD never overwrites an open one), then
			// put each in its place, then close everything else.
			for j = 0; j < fdCount && e1 == 0; j++ {
				st.moved[j] = -1
				if st.fds[j] >= 0 {
					r1, _, e1 = syscall.RawSyscall(syscall.SYS_FCNTL, uintptr(st.fds[j]), syscall.F_DUPFD_CLOEXEC, fdCount)
					st.moved[j] = int(r1)
				}
			}
			for j = 0; j < fdCount && e1 == 0; j++ {
				if st.moved[j] < 0 {
					syscall.RawSyscall(syscall.SYS_CLOSE, uintptr(j), 0, 0)
					continue
				}
				r1 = 0
				if j > 2 {
					r1 = syscall.O_CLOEXEC
				}
				_, _, e1 = syscall.RawSyscall(syscall.SYS_DUP3, uintptr(st.moved[j]), uintptr(j), r1)
			}
			if e1 == 0 {
				_, _, e1 = syscall.RawSyscall(unix.SYS_CLOSE_RANGE, fdCount, ^uintptr(0), 0)
			}
		case opParentAlive:
			_, _, e1 = syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0)
			r1, _, _ = syscall.RawSyscall(syscall.SYS_GETPPID, 0, 0, 0)
			quiet = e1 == 0 && r1 != st.ppid
		case opGoAhead:
			for {
				r1, _, e1 = syscall.RawSyscall(syscall.SYS_READ, fdSync, uintptr(unsafe.Pointer(&st.goAhead[0])), 1)
				if e1 != syscall.EINTR {
					break
				}
			}
			quiet, e1 = e1 != 0 || r1 != 1, 0
		case opForkInit:
			_, _, e1 = syscall.RawSyscall(syscall.SYS_PIPE2, uintptr(unsafe.Pointer(&st.life[0])), syscall.O_CLOEXEC, 0)
			if e1 != 0 {
				break
			}
			r1, _, e1 = syscall.RawSyscall6(syscall.SYS_CLONE, uintptr(syscall.SIGCHLD), 0, 0, 0, 0, 0)
			if e1 != 0 || r1 == 0 {
				break // PID 1 goes on with the next step
			}
			// Still the keeper: let go of the report pipe (the server reads it to EOF, which comes when PID 1 has
			// executed the shell) and of the ruleset, and wait.
			syscall.RawSyscall(syscall.SYS_CLOSE, fdReport, 0, 0)
			syscall.RawSyscall(syscall.SYS_CLOSE, fdRuleset, 0, 0)
			for {
				_, _, e1 = syscall.RawSyscall6(syscall.SYS_WAIT4, r1, uintptr(unsafe.Pointer(&st.status)), 0, 0, 0, 0)
				if e1 != syscall.EINTR {
					break
				}
			}
			if e1 == 0 && st.status&0x7f == 0 {
				for {
					syscall.RawSyscall(syscall.SYS_EXIT_GROUP, uintptr((st.status>>8)&0xff), 0, 0)
				}
			}
			// PID 1 was killed: die the same way, so the server sees a kill.
			r1, _, _ = syscall.RawSyscall(syscall.SYS_GETPID, 0, 0, 0)
			syscall.RawSyscall(syscall.SYS_KILL, r1, uintptr(syscall.SIGKILL), 0)
			for {
				syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 137, 0, 0)
			}
		case opKeeperAlive:
			// The keeper holds the life pipe's write end until it exits: a closed one shows as POLLHUP.
			syscall.RawSyscall(syscall.SYS_CLOSE, uintptr(st.life[1]), 0, 0)
			st.pollfd[0], st.pollfd[1] = st.life[0], 1 // POLLIN
			r1, _, _ = syscall.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&st.pollfd[0])), 1, uintptr(unsafe.Pointer(&st.noWait[0])), 0, 0, 0)
			quiet = r1 == 1 && st.pollfd[1]>>16&0x10 != 0
		case opLandlockProc:
			r1, _, e1 = syscall.RawSyscall6(syscall.SYS_OPENAT, atFdcwd, uintptr(unsafe.Pointer(&st.proc[0])),
				unix.O_PATH|unix.O_CLOEXEC|unix.O_DIRECTORY, 0, 0, 0)
			if e1 != 0 {
				break
			}
			st.procRule[8], st.procRule[9], st.procRule[10], st.procRule[11] = byte(r1), byte(r1>>8), byte(r1>>16), byte(r1>>24)
			_, _, e1 = syscall.RawSyscall6(unix.SYS_LANDLOCK_ADD_RULE, fdRuleset, landlockRulePathBeneath,
				uintptr(unsafe.Pointer(&st.procRule[0])), 0, 0, 0)
			syscall.RawSyscall(syscall.SYS_CLOSE, r1, 0, 0)
		}
	}
	// Here only when a step failed, when execve returned, or quietly: the server is gone, gave up, or the keeper died.
	if !quiet && s != nil {
		st.report[0], st.report[1] = s.step, uint32(e1)
		syscall.RawSyscall(syscall.SYS_WRITE, fdReport, uintptr(unsafe.Pointer(&st.report[0])), unsafe.Sizeof(st.report))
	}
	for {
		syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 253, 0, 0)
	}
}
