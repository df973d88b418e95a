//go:build unix

package pathguard

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// The platform's side of the guard, on Unix (Linux, macOS, the BSDs): stat(2) tells a file's device and inode, link
// count, blocks and owner; the descriptor budget comes from RLIMIT_NOFILE. sys_windows.go is the same on Windows.

// sysInfo is what the platform's stat tells beyond fs.FileInfo.
type sysInfo struct {
	dev, ino, nlink uint64
	blocks          int64 // 512-byte blocks allocated (st_blocks)
	blksize         int64 // the file system's preferred block size
	uid, gid        int
}

// sysInfoOf is the stat information behind fi; false when there is none (fi is nil, or not from stat).
func sysInfoOf(fi fs.FileInfo) (sysInfo, bool) {
	if fi == nil {
		return sysInfo{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return sysInfo{}, false
	}
	return sysInfo{dev: uint64(st.Dev), ino: uint64(st.Ino), nlink: uint64(st.Nlink), blocks: int64(st.Blocks),
		blksize: int64(st.Blksize), uid: int(st.Uid), gid: int(st.Gid)}, true
}

// fileID identifies a file for as long as it exists: its device and inode.
type fileID struct{ dev, ino uint64 }

// idOf is the identity of the file fi describes; false when the platform cannot tell it.
func idOf(fi fs.FileInfo) (fileID, bool) {
	st, ok := sysInfoOf(fi)
	return fileID{st.dev, st.ino}, ok
}

// sameFile reports whether fi, the stat of an opened descriptor, describes the entry name of the folder dir that was
// listed with the identity id.
func sameFile(id fileID, fi fs.FileInfo, dir root, name string) bool {
	got, ok := idOf(fi)
	return ok && got == id
}

// hasOwners reports whether files have owners the guard can give them (uid and gid, as root only).
const hasOwners = true

// handleBudget is half the process's open-file limit (Go raises the soft limit to the hard one at start), leaving
// the other half to connections, files being read and written, and everything else.
func handleBudget() int64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur == 0 {
		return 512
	}
	return int64(min(lim.Cur/2, 1<<20))
}

// sysReason gives the reason for err when the platform's errors need one of their own; none do on Unix, where wrap's
// errno checks are the platform's own errors.
func sysReason(err error) (reason, detail string, ok bool) { return "", "", false }

// notEmpty reports whether err says a folder still has entries (rmdir(2) gives ENOTEMPTY or EEXIST).
func notEmpty(err error) bool {
	return errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST)
}

// openReadFlags opens a file for reading without blocking on a FIFO and without making a terminal the controlling
// one; the type is checked on the opened descriptor before any read.
const openReadFlags = os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOCTTY
