package execserver

import (
	"errors"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// denyInetSockets installs a seccomp filter on the calling thread (inherited by everything forked from it) that
// refuses Internet sockets: socket(2) with AF_INET or AF_INET6 fails with EACCES, io_uring (which can open and
// connect sockets without socket(2)) with ENOSYS, and system calls of a foreign architecture (32-bit compat entry
// points, socketcall) with EPERM. It is the network confinement of the fallback mode: there Landlock only covers
// TCP, and not MPTCP or UDP. The thread must have no_new_privs set.
func denyInetSockets() error {
	var arch uint32
	switch runtime.GOARCH {
	case "amd64":
		arch = unix.AUDIT_ARCH_X86_64
	case "arm64":
		arch = unix.AUDIT_ARCH_AARCH64
	default:
		return errors.New("no seccomp filter for " + runtime.GOARCH)
	}
	const (
		ld      = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq     = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		ret     = unix.BPF_RET | unix.BPF_K
		nr      = 0  // offsetof(struct seccomp_data, nr)
		arg0    = 16 // offsetof(struct seccomp_data, args[0]), low half on little-endian machines
		archOff = 4
	)
	errno := func(e unix.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e) }
	prog := []unix.SockFilter{
		{Code: ld, K: archOff},
		{Code: jeq, Jt: 1, Jf: 0, K: arch},
		{Code: ret, K: errno(unix.EPERM)},
		{Code: ld, K: nr},
		{Code: jeq, Jt: 0, Jf: 1, K: unix.SYS_IO_URING_SETUP},
		{Code: ret, K: errno(unix.ENOSYS)},
		{Code: jeq, Jt: 1, Jf: 0, K: unix.SYS_SOCKET},
		{Code: ret, K: unix.SECCOMP_RET_ALLOW},
		{Code: ld, K: arg0},
		{Code: jeq, Jt: 2, Jf: 0, K: unix.AF_INET},
		{Code: jeq, Jt: 1, Jf: 0, K: unix.AF_INET6},
		{Code: ret, K: unix.SECCOMP_RET_ALLOW},
		{Code: ret, K: errno(unix.EACCES)},
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0)
	runtime.KeepAlive(prog)
	return err
}
