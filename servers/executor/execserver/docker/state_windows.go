//go:build windows

package docker

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
)

// On Windows the backend's folders live in the user's own profile (%LocalAppData%), which other users cannot
// write, and files have no uid to hand a folder to: the plain calls are used.

func openSafeDir(p string) (*os.File, error) {
	if err := os.MkdirAll(p, 0o700); err != nil {
		return nil, err
	}
	return os.Open(p)
}

func makeOwnedDir(parent *os.File, name string, uid, gid int) error {
	return os.MkdirAll(filepath.Join(parent.Name(), name), 0o700)
}

// lockInstance: Windows holds the lock by keeping the lock file open without sharing (os.OpenFile opens it so);
// a second executor cannot open it.
func lockInstance(dir *os.File, instance string) (*instanceLock, error) {
	p := filepath.Join(dir.Name(), "lock")
	_ = os.Remove(p) // fails while another executor holds it open
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("another executor already serves instance %q (%v): stop it, or give this one an "+
			"instance of its own with -instance NAME (GOALBOX_EXEC_INSTANCE)", instance, err)
	}
	return &instanceLock{f: f}, nil
}

// workspaceIdentity on Windows: no inode; the path and the file's creation are what is at hand.
func workspaceIdentity(path string, fi os.FileInfo, uid, gid int) (string, error) {
	sum := sha256.Sum256([]byte(fi.Name() + fi.ModTime().String()))
	return "cache-" + hex.EncodeToString(sum[:8]), nil
}

func (b *dockerBackend) openWorkspaceFD() error { return nil }

func closeFD(fd int) {}

// checkWorkspacePath on Windows: the path is all there is (no inode to compare).
func (b *dockerBackend) checkWorkspacePath() error { return nil }
