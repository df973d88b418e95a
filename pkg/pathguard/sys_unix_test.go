//go:build unix

package pathguard

import (
	"io/fs"
	"syscall"
)

// The tests' platform helpers: FIFOs, device nodes and link counts exist on Unix. sys_windows_test.go says they do
// not on Windows, where the tests that need them skip.

func mkfifoAt(p string, mode uint32) error { return syscall.Mkfifo(p, mode) }

// mknodNull makes a character device like /dev/null at p (needs root with CAP_MKNOD).
func mknodNull(p string) error { return syscall.Mknod(p, syscall.S_IFCHR|0o666, 1<<8|3) }

func linkCount(fi fs.FileInfo) uint64 { return uint64(fi.Sys().(*syscall.Stat_t).Nlink) }
