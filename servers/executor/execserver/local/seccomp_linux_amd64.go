package local

import "golang.org/x/sys/unix"

// legacyModeSyscalls are x86-64's older system calls that take a mode (arm64 has only the *at forms).
func legacyModeSyscalls() []modeArg {
	return []modeArg{
		{unix.SYS_CHMOD, 1, -1}, {unix.SYS_MKNOD, 1, -1}, {unix.SYS_CREAT, 1, -1}, {unix.SYS_OPEN, 2, 1},
	}
}
