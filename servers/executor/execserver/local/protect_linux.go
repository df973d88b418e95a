package local

// Protected project files in the namespace mode: every protected path the server found in the workspace before a
// command (Request.Protected) is a read-only bind mount of itself in the holder's mount namespace, which each
// command's own namespace is copied from. The kernel then refuses every write, rename over and delete (EROFS,
// EBUSY) and a hard link out of it (EXDEV), however the command tries. The holder makes the mounts, since only it
// has the capabilities in that namespace; it resolves each path below the workspace with no symlink followed
// (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS), so a link a command planted cannot point a mount elsewhere, and
// it never unmounts: a path protected once stays protected for the life of the holder. The sandboxes made ahead of
// their command (nsPool) copied the namespace before a new mount, so a new mount retires them (protectGen).

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"golang.org/x/sys/unix"
)

// protectRequest asks the holder to make paths of a workspace read-only.
type protectRequest struct {
	Workspace string   `json:"workspace"`
	Paths     []string `json:"paths"` // workspace-relative, "/"-separated
}

// protectReply is the holder's answer: how many new mounts it made, and the paths it could not protect.
type protectReply struct {
	Mounted  int      `json:"mounted"`
	Warnings []string `json:"warnings,omitempty"`
	Error    string   `json:"error,omitempty"`
}

// protect asks the holder to make paths read-only, and reports whether it made a new mount.
func (h *holder) protect(workspace string, paths []string) (bool, []string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	b, err := json.Marshal(protectRequest{Workspace: workspace, Paths: paths})
	if err != nil {
		return false, nil, err
	}
	if _, err := h.stdin.Write(append(b, '\n')); err != nil {
		return false, nil, fmt.Errorf("ask the namespace holder to protect files: %w", err)
	}
	line, err := h.readReply(10 * time.Second)
	if err != nil {
		return false, nil, fmt.Errorf("the namespace holder did not answer: %w", err)
	}
	var rep protectReply
	if err := json.Unmarshal(line, &rep); err != nil {
		return false, nil, err
	}
	if rep.Error != "" {
		return false, rep.Warnings, errors.New(rep.Error)
	}
	return rep.Mounted > 0, rep.Warnings, nil
}

// serveProtectRequests runs in the holder: one request a line on in, one reply a line on out.
func serveProtectRequests(in io.Reader, out *json.Encoder) {
	done := map[[2]uint64]bool{} // device and inode of every path made read-only
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var req protectRequest
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			_ = out.Encode(protectReply{Error: "bad request: " + err.Error()})
			continue
		}
		_ = out.Encode(protectPaths(req, done))
	}
}

func protectPaths(req protectRequest, done map[[2]uint64]bool) protectReply {
	var rep protectReply
	ws, err := unix.Open(req.Workspace, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		rep.Error = fmt.Sprintf("open the workspace: %v", err)
		return rep
	}
	defer unix.Close(ws)
	for _, rel := range req.Paths {
		switch mounted, err := protectOne(ws, rel, done); {
		case err != nil:
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: %v", rel, err))
		case mounted:
			rep.Mounted++
		}
	}
	return rep
}

// protectOne makes rel read-only unless the inode it names already is, and reports whether it made a mount.
func protectOne(ws int, rel string, done map[[2]uint64]bool) (bool, error) {
	if rel == "" || strings.HasPrefix(rel, "/") || slices.Contains(strings.Split(rel, "/"), "..") {
		return false, fmt.Errorf("not a path inside the workspace")
	}
	fd, err := unix.Openat2(ws, filepath.FromSlash(rel), &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return false, fmt.Errorf("not protected by a mount (a symlink on the way, or gone): %w", err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false, err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return false, fmt.Errorf("a symlink: not protected by a mount")
	}
	key := [2]uint64{st.Dev, st.Ino}
	if done[key] {
		return false, nil
	}
	tree, err := unix.OpenTree(fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH|unix.AT_RECURSIVE)
	if err != nil {
		return false, fmt.Errorf("clone: %w", err)
	}
	defer unix.Close(tree)
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		return false, fmt.Errorf("read-only: %w", err)
	}
	if err := unix.MoveMount(tree, "", fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return false, fmt.Errorf("attach: %w", err)
	}
	done[key] = true
	return true, nil
}

// EnforcesProtected reports whether this backend makes Request.Protected read-only: in the namespace mode. The
// fallback has no mount namespace, so the server undoes its commands' changes after they end instead.
func (b *localBackend) EnforcesProtected() bool { return b.policy.namespaced() }

// The read-only binds are not made for commands with a layer of their own: the overlay covers them, and the
// workspace guard decides every change (layerrun_linux.go).

// applyProtected has the holder protect req's paths before the command's sandbox is taken.
func (b *localBackend) applyProtected(req backend.Request) {
	if !b.policy.namespaced() || b.policy.Layer || len(req.Protected) == 0 {
		return
	}
	mounted, warnings, err := b.ns.holder.protect(b.workspace, req.Protected)
	for _, w := range warnings {
		b.logger.Warn("protected files: not made read-only; the sweep after the command still undoes changes", "detail", w)
	}
	if err != nil {
		b.logger.Error("protected files: the holder could not make them read-only; the sweep after the command still undoes changes", "error", err)
	}
	if mounted {
		b.protectGen.Add(1)
	}
}
