package docker

// The backend's own seccomp profile for every container it starts (commands, the warm pool, the network holder).
// It starts from the Engine's default profile as github.com/moby/profiles/seccomp publishes it (an allow-list kept
// by the Moby maintainers, newer than a Debian daemon's built-in one: it already refuses io_uring and AF_VSOCK,
// which Docker 20.10's allows) and tightens it to what the local backend's filter (package execserver/internal/seccomp)
// promises:
//
//   - no set-user-id or set-group-id files: chmod, fchmod, fchmodat, fchmodat2, mknod(at), creat, and open/openat
//     that create a file are allowed only when the mode has neither S_ISUID nor S_ISGID (else EPERM); openat2,
//     whose mode sits behind a pointer a filter cannot read, fails with ENOSYS and callers fall back to openat;
//   - no io_uring (it opens files and sockets without the calls above) and no AF_VSOCK sockets (on a VM, vsock
//     reaches the hypervisor): io_uring_* fail with ENOSYS, socket(AF_VSOCK) with EPERM (not on the allow-list);
//   - only the native system call ABI: the profile names no sub-architecture, so 32-bit entry points (int 0x80,
//     where socketcall would hide socket's arguments from the filter) and x32 are refused;
//   - no extended attributes set: setxattr, lsetxattr and fsetxattr fail with EOPNOTSUPP, as on a filesystem
//     without them. ACLs (system.posix_acl_access, and the default ACL that a folder hands to every file made in it)
//     and file capabilities are extended attributes: a command could otherwise grant another user of the host rwx
//     on the workspace, or on .git/hooks, past every mode bit the sweep clears. EOPNOTSUPP is what cp -a, tar
//     --xattrs and Python's shutil.copystat already take as "not kept here" and go on; removing an attribute is
//     still allowed.
//
// A system call the daemon's libseccomp does not know by name (fchmodat2 before libseccomp 2.5.5) is not allowed
// by name either: runc answers ENOSYS for calls newer than the profile knows (TestDockerSeccomp checks fchmodat2).

import (
	"encoding/json"
	"slices"
	"sync"

	"github.com/goalbox/goalbox/pkg/protocol"
	goalboxseccomp "github.com/goalbox/goalbox/servers/executor/execserver/internal/seccomp"
	"github.com/moby/profiles/seccomp"
	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// xattrCalls set an extended attribute; they are answered with EOPNOTSUPP (setxattrat, Linux 6.13, is on no
// allow-list: refused as every unlisted call is).
var xattrCalls = []string{"setxattr", "lsetxattr", "fsetxattr"}

// seccompProfile is the profile as the Engine takes it in a security option ("seccomp=<JSON>"), built once.
var seccompProfile = sync.OnceValues(func() (string, error) {
	b, err := json.Marshal(tightenedProfile(goalboxseccomp.NoSys))
	return string(b), err
})

// tightenedProfile is the Engine's default profile tightened as the package comment says, with the calls in
// nosysCalls answered with ENOSYS (seccomp.NoSys: openat2 and io_uring, which a caller falls back from; socketcall is
// removed without a rule: it exists only for the 32-bit ABI, which the profile does not admit).
func tightenedProfile(nosysCalls []string) *seccomp.Seccomp {
	p := seccomp.DefaultProfile()
	// The two 64-bit architectures Docker hosts run, with none of their 32-bit or x32 sub-architectures: a call
	// through a foreign ABI matches no architecture of the filter and is refused. Both are named, not just the
	// server's, so that deploy/seccomp.json serves an arm64 Mac's compose stack as well as an x86-64 host's.
	p.ArchMap = []seccomp.Architecture{{Arch: specs.ArchX86_64}, {Arch: specs.ArchAARCH64}}
	drop := []string{"socketcall"}
	drop = append(drop, nosysCalls...)
	drop = append(drop, xattrCalls...)
	for _, m := range goalboxseccomp.ModeCalls {
		drop = append(drop, m.Name)
	}
	p.Syscalls = withoutCalls(p.Syscalls, drop)
	allow := func(name string, args ...specs.LinuxSeccompArg) {
		p.Syscalls = append(p.Syscalls, &seccomp.Syscall{LinuxSyscall: specs.LinuxSyscall{
			Names: []string{name}, Action: specs.ActAllow, Args: args}})
	}
	// (arg & mask) == 0
	clear := func(index uint, mask uint64) specs.LinuxSeccompArg {
		return specs.LinuxSeccompArg{Index: index, Value: mask, ValueTwo: 0, Op: specs.OpMaskedEqual}
	}
	for _, m := range goalboxseccomp.ModeCalls {
		// Rules are alternatives; the conditions of one rule all hold. A call that creates no file may carry any
		// junk in its mode register, so "does not create" is a rule of its own.
		allow(m.Name, clear(uint(m.Mode), goalboxseccomp.SetidBits))
		if m.Flags >= 0 {
			allow(m.Name, clear(uint(m.Flags), unix.O_CREAT|goalboxseccomp.OTmpfileBit))
		}
	}
	nosys, notsup := uint(unix.ENOSYS), uint(unix.EOPNOTSUPP)
	p.Syscalls = append(p.Syscalls, &seccomp.Syscall{LinuxSyscall: specs.LinuxSyscall{
		Names: nosysCalls, Action: specs.ActErrno, ErrnoRet: &nosys}}, &seccomp.Syscall{LinuxSyscall: specs.LinuxSyscall{
		Names: xattrCalls, Action: specs.ActErrno, ErrnoRet: &notsup}})
	return p
}

// withoutCalls takes the calls in drop out of every rule of syscalls, and the rules left naming none.
func withoutCalls(syscalls []*seccomp.Syscall, drop []string) []*seccomp.Syscall {
	return slices.DeleteFunc(syscalls, func(s *seccomp.Syscall) bool {
		s.Names = slices.DeleteFunc(s.Names, func(n string) bool { return slices.Contains(drop, n) })
		if slices.Contains(drop, s.Name) {
			s.Name = ""
		}
		return len(s.Names) == 0 && s.Name == ""
	})
}

// namespaceCalls are what an unprivileged process needs to build a sandbox of user, mount, PID, network and IPC
// namespaces, as the local backend's namespace mode does: the Engine's default profile allows them only to a
// container holding CAP_SYS_ADMIN (and pivot_root to none). Without that capability the kernel itself allows each
// only inside a user namespace the caller made, so allowing them grants nothing over the container; what it adds is
// the kernel's user-namespace code as attack surface, the price every unprivileged sandbox (bubblewrap, Chrome's)
// pays.
var namespaceCalls = []string{
	"clone", "clone3", "unshare", "setns",
	"mount", "umount2", "pivot_root", "open_tree", "move_mount", "mount_setattr",
	"fsopen", "fsconfig", "fsmount", "fspick",
}

// buildNamespacesProfile is the profile of a container that runs the executor's local backend in its namespace
// mode (deploy/seccomp-executor.json, the compose executor's): the backend's profile plus namespaceCalls, and with
// openat2, which the executor uses to resolve protected paths beneath the workspace without following links (its
// commands still get ENOSYS for it from the local backend's own filter, stacked on this one).
func buildNamespacesProfile() *seccomp.Seccomp {
	nosysCalls := slices.DeleteFunc(slices.Clone(goalboxseccomp.NoSys), func(n string) bool { return n == "openat2" })
	p := tightenedProfile(nosysCalls)
	// The default's rules for these calls are conditional on CAP_SYS_ADMIN (allowed with it; clone only without
	// namespace flags, clone3 ENOSYS without it): drop them all, and allow the calls outright.
	p.Syscalls = append(withoutCalls(p.Syscalls, namespaceCalls), &seccomp.Syscall{LinuxSyscall: specs.LinuxSyscall{
		Names: namespaceCalls, Action: specs.ActAllow}})
	return p
}

// seccompReport is what Confinement reports of the profile: the backend's own, the Engine's default allow-list
// without set-user-id/set-group-id modes, extended attributes (ACLs, file capabilities) set, openat2, io_uring, AF_VSOCK or foreign ABIs.
const seccompReport = protocol.SeccompGoalbox

// SeccompProfileJSON is the profile, indented, as deploy/seccomp.json holds it for the compose stack's filesystem
// container (TestSeccompProfileFile keeps the file current).
func SeccompProfileJSON() ([]byte, error) { return indented(tightenedProfile(goalboxseccomp.NoSys)) }

// NamespacesSeccompProfileJSON is the profile of a container running the local backend's namespace mode, indented,
// as deploy/seccomp-executor.json holds it for the compose stack's executor.
func NamespacesSeccompProfileJSON() ([]byte, error) { return indented(buildNamespacesProfile()) }

func indented(p *seccomp.Seccomp) ([]byte, error) {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
