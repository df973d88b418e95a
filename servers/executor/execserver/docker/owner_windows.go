//go:build windows

package docker

import (
	"errors"
	"io/fs"
)

// fileOwner on Windows: files have no uid and gid. Docker Desktop shows a folder shared from Windows to its
// containers as writable by every uid (there is no uid mapping across that share), so commands run as 1000:1000, an
// unprivileged user, unless -docker-user says otherwise.
func fileOwner(fi fs.FileInfo) (uid, gid int, ok bool) { return 1000, 1000, true }

// hasChown is false: a Windows folder cannot be given to a uid, and needs not be (see fileOwner).
const hasChown = false

// mkfifo: Windows has no FIFOs in a folder. The caller then does without the terminate relay.
func mkfifo(p string, mode uint32) error { return errors.ErrUnsupported }
