//go:build unix

package execserver

import (
	"time"

	"golang.org/x/sys/unix"
)

// dirStamp is a folder's inode and change time, without following a final symlink; ok is false for anything that
// is not a folder.
func dirStamp(p string) (ino uint64, ctime time.Time, ok bool) {
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return 0, time.Time{}, false
	}
	return uint64(st.Ino), time.Unix(int64(st.Ctim.Sec), int64(st.Ctim.Nsec)), true
}
