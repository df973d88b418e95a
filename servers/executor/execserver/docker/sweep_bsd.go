//go:build unix && !linux

package docker

import "golang.org/x/sys/unix"

// chmodNoFollow clears sweepBits on the entry name of the folder dirfd: macOS and the BSDs have fchmodat with
// AT_SYMLINK_NOFOLLOW, which never follows a symlink put in the entry's place.
func chmodNoFollow(dirfd int, name string, st *unix.Stat_t) error {
	return unix.Fchmodat(dirfd, name, uint32(st.Mode)&0o7777&^sweepBits, unix.AT_SYMLINK_NOFOLLOW)
}
