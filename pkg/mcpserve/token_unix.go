//go:build unix

package mcpserve

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// writePrivateFile writes data to the file at path (absolute), mode 0600, and returns a function that removes it.
//
// No other user may be able to read the file, replace it, or redirect the write. The folders on the way are walked
// one at a time from "/" with O_NOFOLLOW (openPrivateDir): each must belong to root or to this user and, unless
// sticky (as /tmp is), be writable by no one else, or another user could rename what follows it; a symlink on the
// way is followed only when root or this user owns it (/var/run -> /run, macOS's /var -> /private/var), so a
// symlink another user planted makes the write fail instead of landing where it points (root writing into a
// user's folder, after sudo -E, must not become root writing anywhere). The last folder is made 0700 if missing and
// must belong to this user with no access for group or others. The file is created with O_EXCL and O_NOFOLLOW
// (after removing an old one of the same name), so it is a fresh file that no one else had open.
func writePrivateFile(path string, data []byte) (func(), error) {
	dir, name := filepath.Split(filepath.Clean(path))
	if name == "" || name == "." || name == ".." {
		return nil, fmt.Errorf("not a file name")
	}
	dfd, err := openPrivateDir(filepath.Clean(dir))
	if err != nil {
		return nil, err
	}
	if err := unix.Unlinkat(dfd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		unix.Close(dfd)
		return nil, fmt.Errorf("removing the old file: %w", err)
	}
	fd, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		unix.Close(dfd)
		return nil, fmt.Errorf("creating it: %w", err)
	}
	f := os.NewFile(uintptr(fd), path)
	// The umask can only take bits away from 0600; Fchmod makes it exactly 0600 whatever the umask.
	if err := f.Chmod(0o600); err == nil {
		_, err = f.Write(data)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = unix.Unlinkat(dfd, name, 0)
		unix.Close(dfd)
		return nil, fmt.Errorf("writing it: %w", err)
	}
	// The folder stays open so that the removal at shutdown takes this file out of this folder, whatever happened
	// to the path meanwhile.
	return func() { _ = unix.Unlinkat(dfd, name, 0); unix.Close(dfd) }, nil
}

// maxSymlinks bounds the symlinks one walk follows, as the kernel's own 40.
const maxSymlinks = 40

// openPrivateDir opens dir (absolute) by a walk from "/" that follows only symlinks root or this user owns, making
// the missing folders 0700, and checks every folder on the way as writePrivateFile says. It returns the last
// folder's descriptor.
func openPrivateDir(dir string) (int, error) {
	euid := uint32(os.Geteuid())
	fd, err := unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	walked := "/"
	todo := splitPath(dir)
	hops := 0
	for len(todo) > 0 {
		part := todo[0]
		todo = todo[1:]
		if part == ".." {
			// Only from a symlink's target: go back up by reopening the walk so far from "/".
			unix.Close(fd)
			walked = filepath.Dir(walked)
			todo = append(splitPath(walked), todo...)
			walked = "/"
			if fd, err = unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
				return -1, err
			}
			continue
		}
		last := len(todo) == 0
		next, err := unix.Openat(fd, part, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			if err = unix.Mkdirat(fd, part, 0o700); err == nil || errors.Is(err, unix.EEXIST) {
				next, err = unix.Openat(fd, part, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			}
		}
		here := filepath.Join(walked, part)
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			// Linux says ELOOP for a symlink under O_NOFOLLOW, macOS and the BSDs may say ENOTDIR.
			target, lerr := trustedLink(fd, part, euid)
			if lerr != nil {
				unix.Close(fd)
				return -1, fmt.Errorf("%s: %w", here, lerr)
			}
			if hops++; hops > maxSymlinks {
				unix.Close(fd)
				return -1, fmt.Errorf("%s: too many symlinks", here)
			}
			if filepath.IsAbs(target) {
				unix.Close(fd)
				if fd, err = unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
					return -1, err
				}
				walked = "/"
			}
			todo = append(splitPath(target), todo...)
			continue
		}
		unix.Close(fd)
		walked = here
		if err != nil {
			return -1, fmt.Errorf("%s: %w", walked, err)
		}
		fd = next
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("%s: %w", walked, err)
		}
		if st.Uid != 0 && st.Uid != euid {
			unix.Close(fd)
			return -1, fmt.Errorf("%s belongs to uid %d, another user, who could replace what is in it: %w", walked, st.Uid, errNotPrivate)
		}
		if last {
			if st.Uid != euid {
				unix.Close(fd)
				return -1, fmt.Errorf("%s belongs to uid %d, not to this user (uid %d): %w", walked, st.Uid, euid, errNotPrivate)
			}
			if st.Mode&0o077 != 0 {
				// Ours: close it to everyone else rather than refuse (an older goalbox, or a user's mkdir).
				if err := unix.Fchmod(fd, 0o700); err != nil {
					unix.Close(fd)
					return -1, fmt.Errorf("%s is open to other users and could not be made 0700: %w", walked, err)
				}
			}
			continue
		}
		if st.Mode&0o022 != 0 && st.Mode&unix.S_ISVTX == 0 {
			unix.Close(fd)
			return -1, fmt.Errorf("%s is writable by other users (mode %#o), who could replace what is in it: %w", walked, st.Mode&0o7777, errNotPrivate)
		}
	}
	return fd, nil
}

// trustedLink returns the target of the symlink name in the folder dfd when root or this user owns it; a symlink
// of another user's, or anything else that is not a folder, is refused.
func trustedLink(dfd int, name string, euid uint32) (string, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return "", err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFLNK {
		return "", errors.New("not a folder")
	}
	if st.Uid != 0 && st.Uid != euid {
		return "", fmt.Errorf("a symlink of uid %d, another user, who could point it anywhere: refused: %w", st.Uid, errNotPrivate)
	}
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(dfd, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// splitPath is the names of p's components, without empty ones and ".".
func splitPath(p string) []string {
	var out []string
	for _, s := range strings.Split(p, "/") {
		if s != "" && s != "." {
			out = append(out, s)
		}
	}
	return out
}
