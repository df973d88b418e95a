// Package seccomp builds and installs the local backend's seccomp filters, written as typed classic BPF
// (golang.org/x/net/bpf) with named jump targets, so a reviewer reads rules, not jump offsets. The namespace mode's
// keeper installs the assembled program with a raw system call (Build, Prog); the fallback's child init calls
// Install.
//
// Every command, in both modes, gets the common rules:
//
//   - only the native system call ABI: a foreign architecture (32-bit entry points) and, on x86-64, the x32 ABI
//     (system call numbers with __X32_SYSCALL_BIT set, which the architecture check alone lets through) fail
//     with EPERM;
//   - no kernel keyrings: keyctl, add_key and request_key fail with ENOSYS (as in Docker's default profile), so a
//     command can neither read a host key nor leave one behind;
//   - no setuid or setgid files: chmod, fchmod, fchmodat, fchmodat2, mknod(at), and open/openat/creat that create
//     a file, fail with EPERM when the mode has S_ISUID or S_ISGID; openat2 (its mode sits behind a pointer the
//     filter cannot read) and io_uring (which opens files and sockets without these calls) fail with ENOSYS, and
//     every caller falls back to openat or plain system calls.
//
// The set-id and ENOSYS rules name their calls in one table (ModeCalls, NoSys) that the docker backend's profile
// is built from too, so both backends refuse the same calls.
//
// The fallback mode (no namespaces) adds what namespaces give the other mode: no Internet or UNIX sockets (a
// socketpair still works), no signals to the server or the command's init, no ptrace or cross-process memory access.
package seccomp
