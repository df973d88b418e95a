package pathguard

import (
	"errors"
	"io/fs"
	"os"
	"strings"
)

// owner is who the files and folders a guard creates belong to. A server running as root over a workspace that
// belongs to another user (the Docker backend runs commands as the workspace's owner; compose runs everything as
// one uid) would otherwise leave root-owned files that commands cannot change. So, as root only: new files and
// folders are given to the workspace's owner, and a replaced file keeps the owner it had.
type owner struct{ uid, gid int }

// workspaceOwner is the owner new entries get, or nil when the guard should leave ownership to the kernel: the
// server is not root (it cannot give files away, and what it creates is its user's already) or the workspace
// itself is root's.
func workspaceOwner(fi fs.FileInfo) *owner {
	if !hasOwners || os.Geteuid() != 0 {
		return nil
	}
	st, ok := sysInfoOf(fi)
	if !ok || st.uid == 0 {
		return nil
	}
	return &owner{st.uid, st.gid}
}

// ownerFor is the owner for a file that replaces old (nil when there was none).
func (g *Guard) ownerFor(old fs.FileInfo) *owner {
	if hasOwners && old != nil && os.Geteuid() == 0 {
		if st, ok := sysInfoOf(old); ok {
			return &owner{st.uid, st.gid}
		}
	}
	return g.owner
}

// mkdirAll makes rel and its missing parents, giving each folder it creates to the workspace's owner.
func (g *Guard) mkdirAll(rel string) error {
	if g.owner == nil {
		return g.root.MkdirAll(rel, 0o755)
	}
	parts := strings.Split(rel, "/")
	for i := range parts {
		p := strings.Join(parts[:i+1], "/")
		err := g.root.Mkdir(p, 0o755)
		switch {
		case err == nil:
			if err := g.root.Lchown(p, g.owner.uid, g.owner.gid); err != nil {
				return err
			}
		case errors.Is(err, fs.ErrExist):
			// Already there (a folder, or a link to one inside: os.Root follows it on the next step).
		default:
			return err
		}
	}
	return nil
}
