//go:build unix && !linux

package docker

// openBeneath opens rel under dirfd with the O_NOFOLLOW walk (macOS has no openat2).
func openBeneath(dirfd int, rel string) (int, error) { return walkNoFollow(dirfd, rel) }
