//go:build unix

package docker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// lockInstance takes the lock file in the trusted state folder dir, without waiting. The file records who holds
// it, so that the refusal can say.
func lockInstance(dir *os.File, instance string) (*instanceLock, error) {
	fd, err := unix.Openat(int(dir.Fd()), "lock", unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock file %s: %w", filepath.Join(dir.Name(), "lock"), err)
	}
	f := os.NewFile(uintptr(fd), filepath.Join(dir.Name(), "lock"))
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		holder, _ := readHolder(f)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("another executor (%s) already serves instance %q (by default one instance per "+
				"workspace); one executor per workspace and instance at a time: stop that one, or give this one an "+
				"instance of its own with -instance NAME (GOALBOX_EXEC_INSTANCE)", holder, instance)
		}
		return nil, fmt.Errorf("lock file %s: %w", f.Name(), err)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(fmt.Sprintf("pid %d, since %s\n", os.Getpid(), time.Now().UTC().Format(time.RFC3339))), 0)
	return &instanceLock{f: f}, nil
}

func readHolder(f *os.File) (string, error) {
	buf := make([]byte, 128)
	n, err := f.ReadAt(buf, 0)
	if n == 0 {
		return "pid unknown", err
	}
	return strings.TrimSpace(string(buf[:n])), nil
}

// workspaceIdentity is the key of a workspace's cache: its device, inode and birth time, and the user commands run
// as (by default its owner). A workspace deleted and
// made again at the same path (by someone else, perhaps) has another identity, so it never inherits the old one's
// cache; the old cache is removed at the next start (removeStaleCaches).
func workspaceIdentity(path string, fi os.FileInfo, uid, gid int) (string, error) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", errors.New("no device and inode for the workspace")
	}
	id := "cache-" + strconv.FormatUint(uint64(st.Dev), 10) + "." + strconv.FormatUint(uint64(st.Ino), 10)
	// A folder removed and made again at once often gets the freed inode back (ext4 does): its birth time tells
	// the two apart where the filesystem keeps one.
	if b := birthTime(path); b != "" {
		id += "." + b
	}
	return id + "-" + strconv.Itoa(uid) + "." + strconv.Itoa(gid), nil
}

func closeFD(fd int) { unix.Close(fd) }
