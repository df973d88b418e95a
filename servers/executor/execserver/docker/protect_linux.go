package docker

import (
	"errors"

	"golang.org/x/sys/unix"
)

// openBeneath opens rel under dirfd with openat2, which refuses every symlink and every way out of dirfd in the
// kernel's own walk; on a kernel without openat2 (before 5.6), the O_NOFOLLOW walk.
func openBeneath(dirfd int, rel string) (int, error) {
	fd, err := unix.Openat2(dirfd, rel, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) {
		// EPERM: a seccomp filter of the server's own container refuses openat2 (the local backend's does).
		return walkNoFollow(dirfd, rel)
	}
	return fd, err
}
