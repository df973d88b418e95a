//go:build unix

package docker

// The folders the backend keeps on the host (its state: lock and control folders; the commands' build caches) are
// created, opened, given to the command user and removed without resolving any path through a symlink another
// user could have planted. A root server that followed $HOME/.cache/... (sudo -E keeps the user's HOME) would
// otherwise create and chown whatever the user's symlink names: pointed at /etc, that is root. So every folder is
// reached by safedir.MkdirAll, and whatever is made below one so reached is made by mkdirat in it and given away
// by fchown on the open descriptor, never by path.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/goalbox/goalbox/pkg/safedir"
	"golang.org/x/sys/unix"
)

// unsafeFolderError says which component of a host folder the backend refused, and why, and what it allows.
type unsafeFolderError struct {
	path    string
	refusal error // a *safedir.UnsafeError, or the component that could not be opened as a folder
}

func (e *unsafeFolderError) Error() string {
	return fmt.Sprintf("host folder %s: %v; the docker backend creates and gives away its folders only along paths "+
		"that root or the server's own user (uid %d) owns, that nobody else can write, and with no symlink another "+
		"user could plant: choose a folder owned by the server's user (e.g. -cache-dir) or fix the owner or mode",
		e.path, e.refusal, os.Geteuid())
}

func (e *unsafeFolderError) Unwrap() error { return e.refusal }

// openSafeDir opens the folder at the absolute path p, making the missing components (mode 0700, owned by the
// server's user), as safedir.MkdirAll does; a refusal says what the backend allows.
func openSafeDir(p string) (*os.File, error) {
	f, err := safedir.MkdirAll(p)
	var unsafe *safedir.UnsafeError
	if errors.As(err, &unsafe) {
		return nil, &unsafeFolderError{p, unsafe}
	}
	if err != nil {
		return nil, fmt.Errorf("host folder %s: %w", p, err)
	}
	return f, nil
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
		return &unsafeFolderError{filepath.Join(parent.Name(), name), fmt.Errorf("%s cannot be opened as a folder (%w)", name, err)}
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
