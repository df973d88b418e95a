package seccomp

import (
	"errors"
	"runtime"
	"strconv"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Policy selects the rules of a filter. The server decides it once (in the local backend's command policy) and
// sends it as JSON to the helpers that install it.
type Policy struct {
	// Fallback adds the fallback mode's rules; InitPid, ServerPid and ServerPgid are the processes a command must
	// not signal.
	Fallback                       bool
	InitPid, ServerPid, ServerPgid int
}

// modeArg says which argument of system call nr holds a file mode, and which its open flags (-1: the call always
// creates a file or sets the mode).
type modeArg struct{ nr, mode, flags int }

// x32SyscallBit marks a system call of the x32 ABI on x86-64.
const x32SyscallBit = 0x40000000

// Offsets into struct seccomp_data; an argument's low 32 bits come first on little-endian machines (x86-64 and
// arm64, the only ones with a filter).
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

func argOff(i int) uint32 { return uint32(offArgs + 8*i) }

var (
	retAllow  = uint32(unix.SECCOMP_RET_ALLOW)
	retEPERM  = uint32(unix.SECCOMP_RET_ERRNO) | uint32(unix.EPERM)
	retEACCES = uint32(unix.SECCOMP_RET_ERRNO) | uint32(unix.EACCES)
	retENOSYS = uint32(unix.SECCOMP_RET_ERRNO) | uint32(unix.ENOSYS)
)

// Build assembles the filter for policy p on this machine's architecture.
func Build(p Policy) ([]bpf.RawInstruction, error) {
	var arch uint32
	switch runtime.GOARCH {
	case "amd64":
		arch = unix.AUDIT_ARCH_X86_64
	case "arm64":
		arch = unix.AUDIT_ARCH_AARCH64
	default:
		return nil, errors.New("no seccomp filter for " + runtime.GOARCH)
	}
	f := &filter{}
	f.load(offArch)
	f.jumpIf(bpf.JumpNotEqual, arch, "eperm")
	f.load(offNr)
	if runtime.GOARCH == "amd64" {
		f.jumpIf(bpf.JumpGreaterOrEqual, x32SyscallBit, "eperm")
	}
	for _, nr := range []uint32{unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY} {
		f.jumpIf(bpf.JumpEqual, nr, "enosys")
	}
	for _, name := range NoSys {
		if nr, ok := syscallNumber(name); ok {
			f.jumpIf(bpf.JumpEqual, uint32(nr), "enosys")
		}
	}
	var modes []modeArg
	for _, m := range ModeCalls {
		if nr, ok := syscallNumber(m.Name); ok {
			modes = append(modes, modeArg{nr, m.Mode, m.Flags})
		}
	}
	for _, m := range modes {
		f.jumpIf(bpf.JumpEqual, uint32(m.nr), labelFor(m.nr))
	}
	// socket and socketpair in every mode: AF_VSOCK is not namespaced, and on a VM it reaches the hypervisor.
	f.jumpIf(bpf.JumpEqual, unix.SYS_SOCKET, "socket")
	f.jumpIf(bpf.JumpEqual, unix.SYS_SOCKETPAIR, "socket")
	if p.Fallback {
		f.jumpIf(bpf.JumpEqual, unix.SYS_PIDFD_SEND_SIGNAL, "enosys")
		for _, nr := range []uint32{unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV, unix.SYS_PIDFD_GETFD, unix.SYS_TKILL} {
			f.jumpIf(bpf.JumpEqual, nr, "eperm")
		}
		f.jumpIf(bpf.JumpEqual, unix.SYS_KILL, "kill")
		f.jumpIf(bpf.JumpEqual, unix.SYS_TGKILL, "tgkill")
	}
	f.ret(retAllow)

	for _, m := range modes {
		f.label(labelFor(m.nr))
		if m.flags >= 0 {
			// Only a call that creates a file uses its mode argument; otherwise the argument is whatever was in
			// the register and must not decide anything.
			f.load(argOff(m.flags))
			f.jumpIf(bpf.JumpBitsNotSet, unix.O_CREAT|OTmpfileBit, "allow")
		}
		f.load(argOff(m.mode))
		f.jumpIf(bpf.JumpBitsSet, SetidBits, "eperm")
		f.ret(retAllow)
	}
	f.label("socket")
	f.load(argOff(0))
	f.jumpIf(bpf.JumpEqual, unix.AF_VSOCK, "eacces")
	if p.Fallback {
		// socketpair makes no address anyone else can reach: only vsock is refused there.
		f.load(offNr)
		f.jumpIf(bpf.JumpEqual, unix.SYS_SOCKETPAIR, "allow")
		f.load(argOff(0))
		f.jumpIf(bpf.JumpEqual, unix.AF_INET, "eacces")
		f.jumpIf(bpf.JumpEqual, unix.AF_INET6, "eacces")
		// Without a mount namespace every pathname socket of the host can be named, and Landlock does not
		// govern connect() on one: no AF_UNIX socket at all (socketpair still works).
		f.jumpIf(bpf.JumpEqual, unix.AF_UNIX, "eacces")
	}
	f.ret(retAllow)

	if p.Fallback {
		f.label("kill")
		f.load(argOff(0))
		for _, pid := range []int{-1, p.InitPid, p.ServerPid, -p.ServerPgid} {
			f.jumpIf(bpf.JumpEqual, uint32(int32(pid)), "eperm")
		}
		f.ret(retAllow)

		f.label("tgkill")
		f.load(argOff(0))
		f.jumpIf(bpf.JumpEqual, uint32(p.InitPid), "eperm")
		f.jumpIf(bpf.JumpEqual, uint32(p.ServerPid), "eperm")
		f.ret(retAllow)
	}
	f.label("allow")
	f.ret(retAllow)
	f.label("eperm")
	f.ret(retEPERM)
	f.label("eacces")
	f.ret(retEACCES)
	f.label("enosys")
	f.ret(retENOSYS)
	return f.assemble()
}

func labelFor(nr int) string { return "mode-" + strconv.Itoa(nr) }

// Prog converts an assembled filter to the kernel's struct sock_fprog. The returned slice must stay alive
// as long as the program is in use.
func Prog(raw []bpf.RawInstruction) (*unix.SockFprog, []unix.SockFilter) {
	ins := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		ins[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	return &unix.SockFprog{Len: uint16(len(ins)), Filter: &ins[0]}, ins
}

// Install installs policy's filter on the calling thread (inherited by everything forked from it). The
// thread must have no_new_privs set.
func Install(p Policy) error {
	raw, err := Build(p)
	if err != nil {
		return err
	}
	fprog, ins := Prog(raw)
	err = unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(fprog)), 0, 0)
	runtime.KeepAlive(ins)
	return err
}

// filter builds a classic BPF program whose jumps name their targets; assemble resolves them.
type filter struct {
	ins    []bpf.Instruction
	jumps  map[int][2]string // instruction index → labels taken when true and when false ("" = next)
	labels map[string]int
}

func (f *filter) load(off uint32) { f.ins = append(f.ins, bpf.LoadAbsolute{Off: off, Size: 4}) }

func (f *filter) ret(v uint32) { f.ins = append(f.ins, bpf.RetConstant{Val: v}) }

func (f *filter) label(name string) {
	if f.labels == nil {
		f.labels = map[string]int{}
	}
	f.labels[name] = len(f.ins)
}

// jumpIf goes to label when cond holds between the accumulator and v, else on to the next instruction.
func (f *filter) jumpIf(cond bpf.JumpTest, v uint32, label string) {
	if f.jumps == nil {
		f.jumps = map[int][2]string{}
	}
	f.jumps[len(f.ins)] = [2]string{label, ""}
	f.ins = append(f.ins, bpf.JumpIf{Cond: cond, Val: v})
}

func (f *filter) assemble() ([]bpf.RawInstruction, error) {
	for i, j := range f.jumps {
		var skip [2]uint8
		for k, name := range j {
			if name == "" {
				continue
			}
			at, ok := f.labels[name]
			if !ok || at <= i || at-i-1 > 255 {
				return nil, errors.New("seccomp filter: bad jump to " + name)
			}
			skip[k] = uint8(at - i - 1)
		}
		ji := f.ins[i].(bpf.JumpIf)
		ji.SkipTrue, ji.SkipFalse = skip[0], skip[1]
		f.ins[i] = ji
	}
	return bpf.Assemble(f.ins)
}
