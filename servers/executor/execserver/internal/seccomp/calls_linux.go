package seccomp

import "golang.org/x/sys/unix"

// What both backends refuse by name: the local backend's filter (Build) by this machine's system call numbers, the
// docker backend's profile by the names the Engine's profile takes. A call added here is refused by both.

// ModeCall is a system call that sets a file's mode or creates a file with one: the index of its mode argument,
// and of its open flags (-1: the call always creates a file or sets the mode).
type ModeCall struct {
	Name        string
	Mode, Flags int
}

// ModeCalls are the calls whose mode may not carry SetidBits; chmod, creat, mknod and open are x86-64's only.
var ModeCalls = []ModeCall{
	{"chmod", 1, -1}, {"fchmod", 1, -1}, {"fchmodat", 2, -1}, {"fchmodat2", 2, -1},
	{"creat", 1, -1}, {"mknod", 1, -1}, {"mknodat", 2, -1},
	{"open", 2, 1}, {"openat", 3, 2},
}

// SetidBits are the mode bits no command may set.
const SetidBits = unix.S_ISUID | unix.S_ISGID

// OTmpfileBit is __O_TMPFILE: O_TMPFILE is this bit with O_DIRECTORY, and it creates a file as O_CREAT does.
const OTmpfileBit = 0o20000000

// NoSys are answered with ENOSYS: openat2, whose mode sits behind a pointer a filter cannot read, and io_uring,
// which opens files and sockets without the calls above. Every caller falls back (to openat, to plain calls).
var NoSys = []string{"openat2", "io_uring_setup", "io_uring_enter", "io_uring_register"}

// syscallNumbers are the numbers of the calls named above on both architectures; legacySyscallNumbers adds
// x86-64's older ones.
var syscallNumbers = map[string]int{
	"fchmod": unix.SYS_FCHMOD, "fchmodat": unix.SYS_FCHMODAT, "fchmodat2": unix.SYS_FCHMODAT2,
	"mknodat": unix.SYS_MKNODAT, "openat": unix.SYS_OPENAT, "openat2": unix.SYS_OPENAT2,
	"io_uring_setup": unix.SYS_IO_URING_SETUP, "io_uring_enter": unix.SYS_IO_URING_ENTER,
	"io_uring_register": unix.SYS_IO_URING_REGISTER,
}

// syscallNumber is the number of the call name on this machine, and whether it has one.
func syscallNumber(name string) (int, bool) {
	if nr, ok := syscallNumbers[name]; ok {
		return nr, true
	}
	nr, ok := legacySyscallNumbers[name]
	return nr, ok
}
