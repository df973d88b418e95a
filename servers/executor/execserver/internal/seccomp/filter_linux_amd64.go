package seccomp

import "golang.org/x/sys/unix"

// legacySyscallNumbers are x86-64's older system calls that take a mode (arm64 has only the *at forms).
var legacySyscallNumbers = map[string]int{
	"chmod": unix.SYS_CHMOD, "mknod": unix.SYS_MKNOD, "creat": unix.SYS_CREAT, "open": unix.SYS_OPEN,
}
