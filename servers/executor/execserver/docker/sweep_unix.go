//go:build unix

package docker

// The mode sweep after each command: the seccomp profile stops a command from setting set-user-id and set-group-id
// bits, but a world-writable mode (chmod 0777 of the workspace or of .git/hooks) is an ordinary chmod, and a
// profile is only as good as the daemon that loads it. So once a command's container is gone, the backend walks
// the workspace and clears, on every file and folder, the bits that would let another user of the host in: S_ISUID
// and S_ISGID (a set-user-id copy of sh would run as the workspace's owner for anyone) and the world-write bit. The
// walk opens every folder with O_NOFOLLOW from its parent and changes a mode only through a descriptor of the file
// it examined (chmodNoFollow), so a symlink planted in the workspace, even while the sweep runs, is never followed.
// Build caches need no sweep: their parent folder is the server's, mode 0700, which no other user gets through.

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// sweepBits are the mode bits the sweep clears.
const sweepBits = unix.S_ISUID | unix.S_ISGID | 0o002

// maxSweepDepth bounds the folders the sweep holds open at once; deeper folders are left (and logged) — no other
// user reaches them through hundreds of levels a command made, each of which the sweep made private on the way.
const maxSweepDepth = 256

// sweepResult counts what a sweep did.
type sweepResult struct {
	fixed   int  // files and folders whose mode was changed
	failed  int  // ... that could not be changed
	tooDeep bool // the sweep stopped at maxSweepDepth somewhere
}

// sweepWorkspace sweeps the workspace opened at start (workspace_unix.go), never what is at its path now.
func (b *dockerBackend) sweepWorkspace() (sweepResult, error) {
	fd, err := b.openWorkspace()
	if err != nil {
		return sweepResult{}, err
	}
	return sweepModes(fd), nil
}

// sweepModes clears sweepBits everywhere under the folder open as fd, the folder itself included; it closes fd.
func sweepModes(fd int) sweepResult {
	var r sweepResult
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err == nil && uint32(st.Mode)&sweepBits != 0 {
		if unix.Fchmod(fd, uint32(st.Mode)&0o7777&^sweepBits) == nil {
			r.fixed++
		} else {
			r.failed++
		}
	}
	sweepDir(fd, 0, &r) // closes fd
	return r
}

// sweepDir sweeps the entries of the folder open as fd, then closes it.
func sweepDir(fd, depth int, r *sweepResult) {
	dir := os.NewFile(uintptr(fd), "")
	defer dir.Close()
	for {
		names, err := dir.Readdirnames(1024)
		for _, name := range names {
			var st unix.Stat_t
			if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
				continue // gone meanwhile
			}
			kind := uint32(st.Mode) & unix.S_IFMT
			if kind != unix.S_IFREG && kind != unix.S_IFDIR {
				continue // a symlink's own mode means nothing; FIFOs, sockets and devices are not followed
			}
			if uint32(st.Mode)&sweepBits != 0 {
				switch err := chmodNoFollow(fd, name, &st); {
				case err == nil:
					r.fixed++
				case errors.Is(err, errChanged):
				default:
					r.failed++
				}
			}
			if kind == unix.S_IFDIR {
				if depth+1 >= maxSweepDepth {
					r.tooDeep = true
					continue
				}
				sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
				if err != nil {
					continue // replaced by a symlink meanwhile, or unreadable
				}
				sweepDir(sub, depth+1, r)
			}
		}
		if err != nil {
			if err != io.EOF {
				r.failed++
			}
			return
		}
	}
}

// errChanged: the entry was replaced between the look and the change; what replaced it is left alone (the next
// sweep sees it).
var errChanged = errors.New("entry changed during the sweep")
