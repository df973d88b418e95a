//go:build unix

package execserver

import (
	"syscall"
	"time"
)

// dirStamp is a folder's inode and change time, without following a final symlink; ok is false for anything that
// is not a folder.
func dirStamp(p string) (ino uint64, ctime time.Time, ok bool) {
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return 0, time.Time{}, false
	}
	return uint64(st.Ino), time.Unix(int64(st.Ctim.Sec), int64(st.Ctim.Nsec)), true
}
