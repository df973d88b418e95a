package docker

import (
	"strconv"

	"golang.org/x/sys/unix"
)

// chmodNoFollow clears sweepBits on the entry name of the folder dirfd, as seen by st, through an O_PATH descriptor
// of that very inode: Linux before 6.6 has no fchmodat(AT_SYMLINK_NOFOLLOW), fchmod refuses an O_PATH descriptor,
// and a file the server cannot read (mode 4111) cannot be opened otherwise. chmod of /proc/self/fd/N changes the
// inode the descriptor holds, whatever the name points to by then.
func chmodNoFollow(dirfd int, name string, st *unix.Stat_t) error {
	fd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var now unix.Stat_t
	if err := unix.Fstat(fd, &now); err != nil {
		return err
	}
	if now.Ino != st.Ino || now.Dev != st.Dev || now.Mode&unix.S_IFMT != st.Mode&unix.S_IFMT {
		return errChanged
	}
	return unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), uint32(now.Mode)&0o7777&^sweepBits)
}
