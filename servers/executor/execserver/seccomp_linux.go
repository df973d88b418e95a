package execserver

import (
	"errors"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// fallbackSeccomp installs the seccomp filter of the fallback mode on the calling thread (inherited by everything
// forked from it). There Landlock may be missing (Docker's default seccomp profile hides it from containers on
// older engines) or too old, and the command shares its user with the server, so the filter keeps to itself what
// namespaces keep in the other mode:
//
//   - no Internet sockets: socket(2) with AF_INET or AF_INET6 fails with EACCES (Landlock, where present, covers only
//     TCP, not UDP nor MPTCP), and io_uring, which can open and connect sockets without socket(2), with ENOSYS;
//   - no signals to the server or to the command's own init: kill(2) of -1 (everything of the user), of the server,
//     of the server's process group and of the init, and tgkill(2) to their threads fail with EPERM; tkill(2),
//     which names a thread of any process, is refused, and pidfd_send_signal(2) fails with ENOSYS (Go and
//     others fall back to kill(2));
//   - no reaching into other processes: ptrace(2), process_vm_readv/writev(2) and pidfd_getfd(2) fail with EPERM;
//   - system calls of a foreign architecture (32-bit compat entry points, socketcall) fail with EPERM.
//
// The thread must have no_new_privs set.
func fallbackSeccomp(initPid, serverPid, serverPgid int) error {
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
		offNr   = 0  // offsetof(struct seccomp_data, nr)
		offArch = 4  // offsetof(struct seccomp_data, arch)
		offArg0 = 16 // offsetof(struct seccomp_data, args[0]), its low half on little-endian machines
	)
	f := &bpf{}
	f.load(offArch)
	f.jumpUnless(arch, "eperm")
	f.load(offNr)
	f.jumpIf(unix.SYS_IO_URING_SETUP, "enosys")
	f.jumpIf(unix.SYS_PIDFD_SEND_SIGNAL, "enosys")
	for _, nr := range []uint32{unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV, unix.SYS_PIDFD_GETFD, unix.SYS_TKILL} {
		f.jumpIf(nr, "eperm")
	}
	f.jumpIf(unix.SYS_SOCKET, "socket")
	f.jumpIf(unix.SYS_KILL, "kill")
	f.jumpIf(unix.SYS_TGKILL, "tgkill")
	f.ret(unix.SECCOMP_RET_ALLOW)

	f.label("socket")
	f.load(offArg0)
	f.jumpIf(unix.AF_INET, "eacces")
	f.jumpIf(unix.AF_INET6, "eacces")
	f.ret(unix.SECCOMP_RET_ALLOW)

	f.label("kill")
	f.load(offArg0)
	for _, pid := range []int{-1, initPid, serverPid, -serverPgid} {
		f.jumpIf(uint32(int32(pid)), "eperm")
	}
	f.ret(unix.SECCOMP_RET_ALLOW)

	f.label("tgkill")
	f.load(offArg0)
	f.jumpIf(uint32(initPid), "eperm")
	f.jumpIf(uint32(serverPid), "eperm")
	f.ret(unix.SECCOMP_RET_ALLOW)

	f.label("eperm")
	f.ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	f.label("eacces")
	f.ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES))
	f.label("enosys")
	f.ret(unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS))

	prog, err := f.assemble()
	if err != nil {
		return err
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	err = unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0)
	runtime.KeepAlive(prog)
	return err
}

// bpf assembles a classic BPF program with forward jumps to labels.
type bpf struct {
	ins    []unix.SockFilter
	jumps  map[int][2]string // instruction index → labels for true and false ("" = next)
	labels map[string]int
}

func (f *bpf) load(off uint32) {
	f.ins = append(f.ins, unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: off})
}

func (f *bpf) ret(v uint32) {
	f.ins = append(f.ins, unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: v})
}

func (f *bpf) label(name string) {
	if f.labels == nil {
		f.labels = map[string]int{}
	}
	f.labels[name] = len(f.ins)
}

// jumpIf goes to label when the accumulator equals v, else on.
func (f *bpf) jumpIf(v uint32, label string) { f.jeq(v, label, "") }

// jumpUnless goes to label when the accumulator differs from v, else on.
func (f *bpf) jumpUnless(v uint32, label string) { f.jeq(v, "", label) }

func (f *bpf) jeq(v uint32, yes, no string) {
	if f.jumps == nil {
		f.jumps = map[int][2]string{}
	}
	f.jumps[len(f.ins)] = [2]string{yes, no}
	f.ins = append(f.ins, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: v})
}

func (f *bpf) assemble() ([]unix.SockFilter, error) {
	for i, j := range f.jumps {
		for k, name := range j {
			off := 0
			if name != "" {
				at, ok := f.labels[name]
				if !ok || at <= i || at-i-1 > 255 {
					return nil, errors.New("bpf: bad jump to " + name)
				}
				off = at - i - 1
			}
			if k == 0 {
				f.ins[i].Jt = uint8(off)
			} else {
				f.ins[i].Jf = uint8(off)
			}
		}
	}
	return f.ins, nil
}
