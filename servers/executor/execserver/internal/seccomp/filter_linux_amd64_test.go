package seccomp

import "golang.org/x/sys/unix"

// archFilterCases are the filter cases of x86-64 alone: the x32 ABI and the older mode-taking system calls.
func archFilterCases() []filterCase {
	return []filterCase{
		{"x32 getpid", x32SyscallBit | 39, nil, retEPERM},
		{"x32 socket", x32SyscallBit | unix.SYS_SOCKET, []uint64{unix.AF_INET}, retEPERM},
		{"chmod 04755", unix.SYS_CHMOD, []uint64{0, 0o4755}, retEPERM},
		{"open create 06755", unix.SYS_OPEN, []uint64{0, unix.O_CREAT, 0o6755}, retEPERM},
		{"open read with stray mode", unix.SYS_OPEN, []uint64{0, unix.O_RDONLY, 0o6755}, retAllow},
	}
}
