//go:build unix

package docker

import (
	"io/fs"
	"syscall"
)

// fileOwner is the numeric owner of a file, where the platform has one.
func fileOwner(fi fs.FileInfo) (uid, gid int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return int(st.Uid), int(st.Gid), true
}

// defaultUserWithoutOwner is the command user where files have no numeric owner: none on Unix.
const defaultUserWithoutOwner = ""

// mkfifo makes the terminate relay's FIFO. (errNoFIFO, where there is none, is Windows'.)
func mkfifo(path string, mode uint32) error { return syscall.Mkfifo(path, mode) }
