//go:build unix

package docker

import (
	"io/fs"
	"syscall"
)

// fileOwner is the uid and gid that own the file fi describes.
func fileOwner(fi fs.FileInfo) (uid, gid int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return int(st.Uid), int(st.Gid), true
}

// hasChown: the cache folder can be given to the commands' uid.
const hasChown = true

func mkfifo(p string, mode uint32) error { return syscall.Mkfifo(p, mode) }
