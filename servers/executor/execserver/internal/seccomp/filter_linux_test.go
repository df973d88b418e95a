package seccomp

import (
	"encoding/binary"
	"runtime"
	"slices"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

type filterCase struct {
	name string
	nr   int
	args []uint64
	want uint32
}

// TestSeccompFilterRules runs the assembled filter in a BPF interpreter over system calls the rules name.
func TestSeccompFilterRules(t *testing.T) {
	for _, fallback := range []bool{false, true} {
		raw, err := Build(Policy{Fallback: fallback, InitPid: 100, ServerPid: 200, ServerPgid: 200})
		if err != nil {
			t.Fatal(err)
		}
		ins, ok := bpf.Disassemble(raw)
		if !ok {
			t.Fatal("the filter does not disassemble")
		}
		vm, err := bpf.NewVM(ins)
		if err != nil {
			t.Fatal(err)
		}
		arch := uint32(unix.AUDIT_ARCH_X86_64)
		if runtime.GOARCH == "arm64" {
			arch = unix.AUDIT_ARCH_AARCH64
		}
		// The interpreter loads words big-endian (network order); the kernel loads them in the machine's order.
		// Laying seccomp_data out big-endian here gives the filter the same values.
		run := func(nr int, a ...uint64) uint32 {
			data := make([]byte, 64)
			binary.BigEndian.PutUint32(data[0:], uint32(nr))
			binary.BigEndian.PutUint32(data[4:], arch)
			for i, v := range a {
				binary.BigEndian.PutUint32(data[16+8*i:], uint32(v))
			}
			v, err := vm.Run(data)
			if err != nil {
				t.Fatal(err)
			}
			return uint32(v)
		}
		cases := []filterCase{
			{"getpid", unix.SYS_GETPID, nil, retAllow},
			{"keyctl", unix.SYS_KEYCTL, nil, retENOSYS},
			{"add_key", unix.SYS_ADD_KEY, nil, retENOSYS},
			{"openat2", unix.SYS_OPENAT2, nil, retENOSYS},
			{"io_uring_setup", unix.SYS_IO_URING_SETUP, nil, retENOSYS},
			{"fchmod 0755", unix.SYS_FCHMOD, []uint64{3, 0o755}, retAllow},
			{"fchmod 04755", unix.SYS_FCHMOD, []uint64{3, 0o4755}, retEPERM},
			{"fchmodat 02755", unix.SYS_FCHMODAT, []uint64{3, 0, 0o2755}, retEPERM},
			{"fchmodat2 04000", unix.SYS_FCHMODAT2, []uint64{3, 0, 0o4000, 0}, retEPERM},
			{"openat create 0644", unix.SYS_OPENAT, []uint64{3, 0, unix.O_CREAT | unix.O_WRONLY, 0o644}, retAllow},
			{"openat create 04755", unix.SYS_OPENAT, []uint64{3, 0, unix.O_CREAT | unix.O_WRONLY, 0o4755}, retEPERM},
			{"openat tmpfile 02755", unix.SYS_OPENAT, []uint64{3, 0, unix.O_TMPFILE | unix.O_WRONLY, 0o2755}, retEPERM},
			{"openat read with stray mode", unix.SYS_OPENAT, []uint64{3, 0, unix.O_RDONLY, 0o4755}, retAllow},
			{"mknodat 04644", unix.SYS_MKNODAT, []uint64{3, 0, unix.S_IFREG | 0o4644, 0}, retEPERM},
			{"socket vsock", unix.SYS_SOCKET, []uint64{unix.AF_VSOCK}, retEACCES},
			{"socket netlink", unix.SYS_SOCKET, []uint64{unix.AF_NETLINK}, retAllow},
			{"socketpair unix", unix.SYS_SOCKETPAIR, []uint64{unix.AF_UNIX}, retAllow},
		}
		cases = append(cases, archFilterCases()...)
		if fallback {
			cases = append(cases,
				filterCase{"socket inet", unix.SYS_SOCKET, []uint64{unix.AF_INET}, retEACCES},
				filterCase{"socket unix", unix.SYS_SOCKET, []uint64{unix.AF_UNIX}, retEACCES},
				filterCase{"kill init", unix.SYS_KILL, []uint64{100, 9}, retEPERM},
				filterCase{"kill other", unix.SYS_KILL, []uint64{300, 9}, retAllow},
				filterCase{"ptrace", unix.SYS_PTRACE, nil, retEPERM},
			)
		}
		for _, c := range cases {
			if got := run(c.nr, c.args...); got != c.want {
				t.Errorf("fallback=%v %s: filter returns %#x, want %#x", fallback, c.name, got, c.want)
			}
		}
		// A foreign architecture is refused whatever the call.
		data := make([]byte, 64)
		binary.BigEndian.PutUint32(data[4:], unix.AUDIT_ARCH_I386)
		if v, _ := vm.Run(data); uint32(v) != retEPERM {
			t.Errorf("fallback=%v: a foreign architecture gets %#x", fallback, v)
		}
	}
}

// TestSharedCallsHaveNumbers: every call both backends refuse by name has a number here, so the local filter
// refuses it too (a misspelt name would be skipped in silence); only x86-64's older mode calls are absent on arm64.
func TestSharedCallsHaveNumbers(t *testing.T) {
	legacy := map[string]bool{"chmod": true, "creat": true, "mknod": true, "open": true}
	names := slices.Clone(NoSys)
	for _, m := range ModeCalls {
		names = append(names, m.Name)
	}
	for _, n := range names {
		if _, ok := syscallNumber(n); !ok && !(legacy[n] && runtime.GOARCH == "arm64") {
			t.Errorf("%s has no system call number on %s: the local filter would not refuse it", n, runtime.GOARCH)
		}
	}
	// The control: a name no architecture has is reported missing.
	if _, ok := syscallNumber("chmod2"); ok {
		t.Error("control: a made-up call has a number")
	}
}
