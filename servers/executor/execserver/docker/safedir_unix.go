//go:build unix

package docker

// The folders the backend keeps on the host (its state: lock and control folders; the commands' build caches) are
// created, opened, given to the command user and removed without resolving any path through a symlink another
// user could have planted. A root server that followed $HOME/.cache/... (sudo -E keeps the user's HOME) would
// otherwise create and chown whatever the user's symlink names: pointed at /etc, that is root. So every folder is
// reached one component at a time from "/", each with openat(O_NOFOLLOW) from the one before, and each must be
// owned by root or by the server's own user and writable by nobody else (a sticky folder such as /tmp excepted:
// others may add entries there but not replace ours). A symlink on the way is followed only when root or the
// server's user owns it, since only they could have put it there. Whatever is created is created by mkdirat in a
// folder so checked, and given away by fchown on the open descriptor, never by path.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// maxSymlinkHops bounds the symlinks followed on one path, as the kernel's own limit does.
const maxSymlinkHops = 40

// unsafeFolderError says which component of a host folder the backend refused, and why.
type unsafeFolderError struct {
	path, component, why string
}

func (e *unsafeFolderError) Error() string {
	return fmt.Sprintf("host folder %s: %s %s; the docker backend creates and gives away its folders only along paths "+
		"that root or the server's own user (uid %d) owns, that nobody else can write, and with no symlink another "+
		"user could plant: choose a folder owned by the server's user (e.g. -cache-dir) or fix the owner or mode",
		e.path, e.component, e.why, os.Geteuid())
}

// openSafeDir opens the folder at the absolute path p, making missing components (mode 0700, owned by the
// server's user) when create is set. See the top of this file for what it refuses.
func openSafeDir(p string, create bool) (*os.File, error) {
	if !filepath.IsAbs(p) {
		return nil, fmt.Errorf("host folder %s: not an absolute path", p)
	}
	euid := uint32(os.Geteuid())
	fd, err := unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("host folder %s: open /: %w", p, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("host folder %s: stat /: %w", p, err)
	}
	if err := trustedDir(p, "/", &st, euid); err != nil {
		unix.Close(fd)
		return nil, err
	}
	comps := splitPath(p)
	cur := "/" // for messages: the path walked so far, as written
	hops := 0
	for len(comps) > 0 {
		c := comps[0]
		comps = comps[1:]
		next := filepath.Join(cur, c)
		err := unix.Fstatat(fd, c, &st, unix.AT_SYMLINK_NOFOLLOW)
		if errors.Is(err, unix.ENOENT) && create && c != ".." {
			if err = unix.Mkdirat(fd, c, 0o700); err == nil || errors.Is(err, unix.EEXIST) {
				err = unix.Fstatat(fd, c, &st, unix.AT_SYMLINK_NOFOLLOW)
			}
		}
		if err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("host folder %s: %s: %w", p, next, err)
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			if st.Uid != 0 && st.Uid != euid {
				unix.Close(fd)
				return nil, &unsafeFolderError{p, next, fmt.Sprintf("is a symlink owned by uid %d", st.Uid)}
			}
			if hops++; hops > maxSymlinkHops {
				unix.Close(fd)
				return nil, fmt.Errorf("host folder %s: too many symlinks", p)
			}
			target, err := readlinkat(fd, c)
			if err != nil {
				unix.Close(fd)
				return nil, fmt.Errorf("host folder %s: %s: %w", p, next, err)
			}
			comps = append(splitPath(target), comps...)
			if filepath.IsAbs(target) {
				// Start again from "/", which was checked above.
				nfd, err := unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
				if err != nil {
					unix.Close(fd)
					return nil, fmt.Errorf("host folder %s: open /: %w", p, err)
				}
				unix.Close(fd)
				fd, cur = nfd, "/"
			}
			continue
		}
		nfd, err := unix.Openat(fd, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			unix.Close(fd)
			if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
				return nil, &unsafeFolderError{p, next, "is not a folder (or was replaced while it was checked)"}
			}
			return nil, fmt.Errorf("host folder %s: %s: %w", p, next, err)
		}
		unix.Close(fd)
		fd, cur = nfd, next
		// Checked on the descriptor: what was opened is what is trusted, whatever the name points to now.
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("host folder %s: %s: %w", p, next, err)
		}
		if err := trustedDir(p, next, &st, euid); err != nil {
			unix.Close(fd)
			return nil, err
		}
	}
	return os.NewFile(uintptr(fd), p), nil
}

// trustedDir refuses a folder on the way that someone other than root and the server's user owns or can write.
func trustedDir(p, comp string, st *unix.Stat_t, euid uint32) error {
	if st.Uid != 0 && st.Uid != euid {
		return &unsafeFolderError{p, comp, fmt.Sprintf("is owned by uid %d", st.Uid)}
	}
	if st.Mode&0o022 != 0 && st.Mode&unix.S_ISVTX == 0 {
		return &unsafeFolderError{p, comp, fmt.Sprintf("is writable by others (mode %04o)", st.Mode&0o7777)}
	}
	return nil
}

func splitPath(p string) []string {
	var out []string
	for _, c := range strings.Split(p, "/") {
		if c != "" && c != "." {
			out = append(out, c)
		}
	}
	return out
}

func readlinkat(dirfd int, name string) (string, error) {
	buf := make([]byte, 4096)
	n, err := unix.Readlinkat(dirfd, name, buf)
	if err != nil {
		return "", err
	}
	if n == len(buf) {
		return "", errors.New("symlink target too long")
	}
	return string(buf[:n]), nil
}

// makeOwnedDir makes (or opens) the folder name directly inside the trusted folder parent and gives it to uid:gid
// with mode 0700: the command user's own folder (its build cache), which the server reaches only through parent.
// A non-folder or symlink in its place is refused, never followed.
func makeOwnedDir(parent *os.File, name string, uid, gid int) error {
	pfd := int(parent.Fd())
	if err := unix.Mkdirat(pfd, name, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("host folder %s: %w", filepath.Join(parent.Name(), name), err)
	}
	fd, err := unix.Openat(pfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &unsafeFolderError{filepath.Join(parent.Name(), name), name, fmt.Sprintf("cannot be opened as a folder (%v)", err)}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if int(st.Uid) != uid || int(st.Gid) != gid {
		if err := unix.Fchown(fd, uid, gid); err != nil {
			return fmt.Errorf("host folder %s: give it to %d:%d: %w", filepath.Join(parent.Name(), name), uid, gid, err)
		}
	}
	if st.Mode&0o7777 != 0o700 {
		if err := unix.Fchmod(fd, 0o700); err != nil {
			return fmt.Errorf("host folder %s: %w", filepath.Join(parent.Name(), name), err)
		}
	}
	return nil
}
