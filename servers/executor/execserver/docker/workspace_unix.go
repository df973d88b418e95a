//go:build unix

package docker

// The workspace is opened once, when the backend starts (wsFD), and is that folder for the backend's whole life:
// its owner may rename it and put a symlink (or another folder) at its path while the server runs, and a root
// server that read the path again would follow the link wherever it pointed (the mode sweep chmod'ing root's
// files, dockerd mounting a root-only folder into the next command). So:
//
//   - the mode sweep walks from the handle (sweep_unix.go), and the disk cap measures through it (hostWorkspace);
//   - before each command the path is checked to name the same folder still (checkWorkspacePath): a workspace that
//     was replaced is refused with a message, whatever the mount would have done;
//   - the Engine can only be given a path to mount, which it resolves when the container starts, after that check.
//     So where the server can see into a container (on Linux, on the Docker host: mountVerify), every container is
//     checked once started and before it is given a command: its /workspace and each protected path mounted on it
//     must be the very inodes the server checked (verifyMounts, workspace_linux.go). A container that got anything
//     else is removed unused. Elsewhere (Docker Desktop's VM, a remote Engine, a server of another user than the
//     commands') the path check is what there is: the swap then has the instant between the check and the start.

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// openWorkspaceFD opens the workspace once, for everything the backend does to it on the host, and records its
// identity; the os.Root that New opened by the same path must be the same folder.
func (b *dockerBackend) openWorkspaceFD() error {
	fd, err := unix.Open(b.cfg.WorkspaceHostDir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("docker backend: open workspace: %w", err)
	}
	b.wsFD = fd
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("docker backend: workspace: %w", err)
	}
	b.wsID = [2]uint64{uint64(st.Dev), uint64(st.Ino)}
	if fi, err := b.ws.Stat("."); err != nil || !sameFile(fi, b.wsID) {
		return fmt.Errorf("docker backend: the workspace %s changed while the executor started; start it again", b.cfg.WorkspaceHostDir)
	}
	return nil
}

// checkWorkspacePath refuses a command once the workspace's path no longer names the folder opened at start.
func (b *dockerBackend) checkWorkspacePath() error {
	fi, err := os.Stat(b.cfg.WorkspaceHostDir)
	if err == nil && sameFile(fi, b.wsID) {
		return nil
	}
	now := "gone"
	if err == nil {
		now = "another folder"
	}
	if li, lerr := os.Lstat(b.cfg.WorkspaceHostDir); lerr == nil && li.Mode()&os.ModeSymlink != 0 {
		target, _ := os.Readlink(b.cfg.WorkspaceHostDir)
		now = "a symlink to " + target
	}
	return fmt.Errorf("docker backend: the workspace %s is no longer the folder this executor started with (it is now %s): "+
		"commands run only in the folder opened at start, never in what was put at its path; put the folder back, "+
		"or restart the executor over the new one", b.cfg.WorkspaceHostDir, now)
}

func sameFile(fi os.FileInfo, id [2]uint64) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && fi.IsDir() && uint64(st.Dev) == id[0] && uint64(st.Ino) == id[1]
}

// openWorkspace is a new descriptor of the workspace opened at start (the sweep closes its own).
func (b *dockerBackend) openWorkspace() (int, error) {
	return unix.Openat(b.wsFD, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
}
