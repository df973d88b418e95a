//go:build windows

package pathguard

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// The platform's side of the guard, on Windows. os.Root confines every operation here as on Unix (it opens each
// path component relative to a handle of its folder, and refuses reserved device names itself); what differs is
// what a stat tells. Files have no uid and gid the guard could give away, so ownership is left to the system (new
// files inherit the folder's ACL); there are no allocated blocks, so the disk cap counts file sizes; identity is
// the volume and file index that os.SameFile compares. sys_unix.go is the same on Unix.

// sysInfo is what the platform's stat tells beyond fs.FileInfo: nothing, on Windows.
type sysInfo struct {
	dev, ino, nlink uint64
	blocks          int64
	blksize         int64
	uid, gid        int
}

// sysInfoOf has no stat information to give on Windows: callers fall back to the file's size (the disk cap) and to
// the kernel's defaults (ownership).
func sysInfoOf(fi fs.FileInfo) (sysInfo, bool) { return sysInfo{}, false }

// fileID identifies a file: the FileInfo it was listed with, whose volume serial number and file index os.SameFile
// compares.
type fileID struct{ fi fs.FileInfo }

func idOf(fi fs.FileInfo) (fileID, bool) { return fileID{fi}, fi != nil }

// sameFile reports whether fi, the stat of an opened handle, describes the entry name of the folder dir that was
// listed as id. A listing on NTFS carries each file's index, and os.SameFile compares it; on file systems whose
// listings do not (some network shares) os.SameFile would have to reopen the file by its path, which a listing
// made from a handle cannot give, and fails. Then the name is stat'ed again from its folder's handle: it must still
// hold an entry of the listed type, and that entry must be the opened file.
func sameFile(id fileID, fi fs.FileInfo, dir root, name string) bool {
	if id.fi == nil || fi == nil {
		return false
	}
	if os.SameFile(id.fi, fi) {
		return true
	}
	now, err := dir.Lstat(name)
	return err == nil && now.Mode().Type() == id.fi.Mode().Type() && os.SameFile(now, fi)
}

// hasOwners is false: Windows files have no uid and gid to give (os.Geteuid is -1 there anyway).
const hasOwners = false

// handleBudget is a fixed 16,384 folder handles on Windows. Unix has a per-process descriptor limit to take half
// of; Windows has none to read: Go's files are Win32 handles, not the C runtime's descriptor table (whose 8,192
// cap does not apply), and the kernel's own cap is about 16 million handles a process, far past what should be
// spent. 16,384 is eight concurrent walks at the default depth cap (two handles a level, 1,024 levels) and keeps a
// burst of deep walks to a few megabytes of kernel memory.
func handleBudget() int64 { return 16384 }

// Win32 errors that wrap's errno checks do not catch: Go maps ERROR_DIR_NOT_EMPTY to fs.ErrExist, which would read
// "already exists", and a folder opened where a file is gives ERROR_DIRECTORY, not ENOTDIR.
const (
	errorDirNotEmpty syscall.Errno = 145 // ERROR_DIR_NOT_EMPTY
	errorDirectory   syscall.Errno = 267 // ERROR_DIRECTORY: "The directory name is invalid"
)

func sysReason(err error) (reason, detail string, ok bool) {
	switch {
	case errors.Is(err, errorDirNotEmpty):
		return ReasonNotEmpty, "", true
	case errors.Is(err, errorDirectory):
		return ReasonNotDir, "", true
	}
	return "", "", false
}

// notEmpty reports whether err says a folder still has entries.
func notEmpty(err error) bool {
	return errors.Is(err, errorDirNotEmpty) || errors.Is(err, syscall.ENOTEMPTY)
}

// openReadFlags is a plain read-only open: Windows has no FIFOs or terminals in a folder to block on or adopt (the
// type is still checked on the opened handle before any read), and os.Root's open takes no O_NONBLOCK there.
const openReadFlags = os.O_RDONLY
