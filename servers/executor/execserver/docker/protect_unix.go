//go:build unix

package docker

// Protected project files (backend.Request.Protected: .git/hooks, .git/config, .vscode/, ... present when the
// command starts) become read-only bind mounts in the command's container, on top of the workspace's: the command
// can read them, but writing gives EROFS and renaming over or deleting them EBUSY. The Engine resolves a bind's
// source path on the host, following symlinks, so a path is mounted only once it is known to lead, from the
// workspace, through no symlink at all (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS; where the kernel has no
// openat2, a walk with O_NOFOLLOW on every component): `ln -s /etc .vscode` in the workspace must not mount the
// host's /etc into the next container. A path that is a symlink, or passes through one, is skipped and logged (the
// server's sweep deals with it); its mount would not protect the file anyway.
//
// A concurrent command (a process of the same executor) that swaps a checked folder for a symlink in the moment
// between the check and the Engine's mount is caught where the server can see into its containers: each mount is
// verified to be the inode checked before the container gets its command (verifyMounts, workspace_linux.go).

import (
	"errors"
	"path"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// protection is the set of protected paths a container was made with, as checked, with the identity of each (a
// pooled container is used only while they are still the same files: a bind mount holds the inode it was given).
type protection struct {
	paths []string
	ids   [][2]uint64
}

func (p protection) equal(q protection) bool {
	return slices.Equal(p.paths, q.paths) && slices.Equal(p.ids, q.ids)
}

// checkProtected keeps the paths of want that lead from the workspace to a file or folder through no symlink.
func (b *dockerBackend) checkProtected(want []string) protection {
	var p protection
	for _, rel := range want {
		clean := path.Clean(rel)
		if rel == "" || clean == "." || path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
			b.log.Warn("docker backend: protected path is not inside the workspace; not mounted", "path", rel)
			continue
		}
		id, err := b.statBeneath(clean)
		if err != nil {
			if !errors.Is(err, unix.ENOENT) {
				b.log.Warn("docker backend: protected path not mounted read-only (a symlink, or through one)",
					"path", clean, "err", err)
			}
			continue
		}
		p.paths = append(p.paths, clean)
		p.ids = append(p.ids, id)
	}
	return p
}

// statBeneath is the identity of the file at rel in the workspace, reached without following any symlink.
func (b *dockerBackend) statBeneath(rel string) ([2]uint64, error) {
	fd, err := openBeneath(b.wsFD, rel)
	if err != nil {
		return [2]uint64{}, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return [2]uint64{}, err
	}
	if k := uint32(st.Mode) & unix.S_IFMT; k != unix.S_IFREG && k != unix.S_IFDIR {
		return [2]uint64{}, errors.New("neither a file nor a folder")
	}
	return [2]uint64{uint64(st.Dev), uint64(st.Ino)}, nil
}

// walkNoFollow opens rel under dirfd one component at a time, each with O_NOFOLLOW: a symlink anywhere fails with
// ELOOP (or ENOTDIR). rel is clean and relative, with no "..".
func walkNoFollow(dirfd int, rel string) (int, error) {
	parts := strings.Split(rel, "/")
	fd, err := unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	for i, c := range parts {
		flags := unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NONBLOCK
		if i < len(parts)-1 {
			flags |= unix.O_DIRECTORY
		}
		nfd, err := unix.Openat(fd, c, flags, 0)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = nfd
	}
	return fd, nil
}
