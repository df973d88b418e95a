//go:build unix

package safedir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// maxSymlinks bounds the symlinks one walk follows, as the kernel's own 40 does.
const maxSymlinks = 40

// UnsafeError is a refusal: a folder or symlink on the way that another user owns or could change.
type UnsafeError struct {
	Path string // the folder or symlink refused, as walked
	Why  string // what is wrong with it, e.g. "belongs to uid 1000, another user, ..."
}

func (e *UnsafeError) Error() string { return e.Path + " " + e.Why }

// MkdirAll opens the folder at the absolute path dir, making the missing folders on the way (mode 0700, owned by
// this process's user), and returns it open.
//
// Every folder on the way, "/" and dir included, must belong to root or to this process's user and be writable by
// no one else, or another user could rename what follows it; a sticky folder (as /tmp is) may be writable by all,
// since others may add entries there but not replace this user's. A symlink on the way is followed only when root
// or this user owns it (/var/run -> /run, macOS's /var -> /private/var), since only they could have put it there.
// A refusal is an *UnsafeError naming the component and why.
func MkdirAll(dir string) (*os.File, error) { return walk(dir, false) }

// MkdirPrivate is MkdirAll for a folder no one but this user may use (a token file's): dir itself must belong to
// this user (not to root, unless this user is root), and is made 0700 when it is open to others, rather than
// refused (a folder a user made with mkdir is 0755 or 0775, and is theirs to close).
func MkdirPrivate(dir string) (*os.File, error) { return walk(dir, true) }

// walk is MkdirAll, or MkdirPrivate when private is set.
func walk(dir string, private bool) (*os.File, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("%s: not an absolute path", dir)
	}
	euid := uint32(os.Geteuid())
	fd, err := openRoot(euid)
	if err != nil {
		return nil, err
	}
	walked := "/" // the folder fd is, for messages
	todo := splitPath(filepath.Clean(dir))
	hops := 0
	for len(todo) > 0 {
		part := todo[0]
		todo = todo[1:]
		here := filepath.Join(walked, part)
		next, err := openFolder(fd, part)
		if errors.Is(err, unix.ENOENT) && part != ".." {
			if err = unix.Mkdirat(fd, part, 0o700); err == nil || errors.Is(err, unix.EEXIST) {
				next, err = openFolder(fd, part)
			}
		}
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			// Linux says ELOOP for a symlink under O_NOFOLLOW, macOS and the BSDs may say ENOTDIR.
			target, lerr := trustedLink(fd, part, here, euid)
			if lerr == nil {
				if hops++; hops > maxSymlinks {
					lerr = fmt.Errorf("%s: too many symlinks", here)
				}
			}
			if lerr != nil {
				unix.Close(fd)
				return nil, lerr
			}
			if filepath.IsAbs(target) {
				unix.Close(fd)
				if fd, err = openRoot(euid); err != nil {
					return nil, err
				}
				walked = "/"
			}
			// A relative target's ".." is taken from the folder the symlink is in, as the kernel takes it.
			todo = append(splitPath(target), todo...)
			continue
		}
		unix.Close(fd)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", here, err)
		}
		fd, walked = next, here
		if private && len(todo) == 0 {
			continue // the last folder: checked below, however the walk reached it
		}
		if err := checkFolder(fd, walked, euid); err != nil {
			unix.Close(fd)
			return nil, err
		}
	}
	if private {
		if err := makePrivate(fd, walked, euid); err != nil {
			unix.Close(fd)
			return nil, err
		}
	}
	return os.NewFile(uintptr(fd), dir), nil
}

// openRoot opens "/" and checks it as every other folder on the way.
func openRoot(euid uint32) (int, error) {
	fd, err := unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("/: %w", err)
	}
	if err := checkFolder(fd, "/", euid); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// openFolder opens the folder name in the folder dfd, refusing to follow a symlink (ELOOP or ENOTDIR).
func openFolder(dfd int, name string) (int, error) {
	return unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
}

// checkFolder refuses the open folder fd (at path, for messages) when someone other than root and this user owns
// it or, unless it is sticky, can write it.
func checkFolder(fd int, path string, euid uint32) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if st.Uid != 0 && st.Uid != euid {
		return &UnsafeError{path, fmt.Sprintf("belongs to uid %d, another user, who could replace what is in it", st.Uid)}
	}
	if st.Mode&0o022 != 0 && st.Mode&unix.S_ISVTX == 0 {
		return &UnsafeError{path, fmt.Sprintf("is writable by other users (mode %04o), who could replace what is in it", st.Mode&0o7777)}
	}
	return nil
}

// makePrivate refuses the open folder fd (at path, for messages) unless this user owns it, and closes it to
// everyone else.
func makePrivate(fd int, path string, euid uint32) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if st.Uid != euid {
		return &UnsafeError{path, fmt.Sprintf("belongs to uid %d, not to this user (uid %d)", st.Uid, euid)}
	}
	if st.Mode&0o077 != 0 {
		if err := unix.Fchmod(fd, 0o700); err != nil {
			return fmt.Errorf("%s is open to other users and could not be made 0700: %w", path, err)
		}
	}
	return nil
}

// trustedLink returns the target of the symlink name in the folder dfd (at path, for messages) when root or this
// user owns it; a symlink of another user's, or anything else that is not a folder, is refused.
func trustedLink(dfd int, name, path string, euid uint32) (string, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFLNK {
		return "", &UnsafeError{path, "is not a folder (or was replaced while it was checked)"}
	}
	if st.Uid != 0 && st.Uid != euid {
		return "", &UnsafeError{path, fmt.Sprintf("is a symlink owned by uid %d, another user, who could point it anywhere", st.Uid)}
	}
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(dfd, name, buf)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	if n == len(buf) {
		return "", fmt.Errorf("%s: symlink target too long", path)
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
