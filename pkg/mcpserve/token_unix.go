//go:build unix

package mcpserve

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/goalbox/goalbox/pkg/safedir"
	"golang.org/x/sys/unix"
)

// writePrivateFile writes data to the file at path (absolute), mode 0600, and returns a function that removes it.
//
// No other user may be able to read the file, replace it, or redirect the write. The folder is reached as
// safedir.MkdirPrivate says: no folder on the way that another user owns or may write, no symlink another user
// planted followed (root writing into a user's folder, after sudo -E, must not become root writing anywhere), the
// last folder this user's and 0700. The file is created with O_EXCL and O_NOFOLLOW (after removing an old one of
// the same name), so it is a fresh file that no one else had open.
func writePrivateFile(path string, data []byte) (func(), error) {
	dir, name := filepath.Split(filepath.Clean(path))
	if name == "" || name == "." || name == ".." {
		return nil, fmt.Errorf("not a file name")
	}
	folder, err := safedir.MkdirPrivate(filepath.Clean(dir))
	if err != nil {
		return nil, err
	}
	// The folder stays open until the removal at shutdown, so that it takes this file out of this folder, whatever
	// happened to the path meanwhile.
	dfd := int(folder.Fd())
	if err := unix.Unlinkat(dfd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		folder.Close()
		return nil, fmt.Errorf("removing the old file: %w", err)
	}
	fd, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		folder.Close()
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
		folder.Close()
		return nil, fmt.Errorf("writing it: %w", err)
	}
	return func() { _ = unix.Unlinkat(dfd, name, 0); folder.Close() }, nil
}
