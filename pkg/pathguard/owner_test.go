//go:build unix

package pathguard

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/goalbox/goalbox/pkg/ciskip"
)

// TestOwnershipAsRoot: a server running as root over a workspace that belongs to another user gives what it creates
// to that user and keeps the owner of what it replaces, so commands running as the workspace's owner (the Docker
// backend, compose) can still change every file.
func TestOwnershipAsRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		ciskip.Skip(t, "ownership is only changed when the server runs as root; not root here")
	}
	ws := t.TempDir()
	if err := os.Chown(ws, 1000, 1001); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(ws, "theirs.txt")
	if err := os.WriteFile(other, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(other, 1002, 1003); err != nil {
		t.Fatal(err)
	}
	// Set after the chown, which would clear them: a setuid, setgid file of another user.
	if err := os.Chmod(other, os.ModeSetuid|os.ModeSetgid|0o755); err != nil {
		t.Fatal(err)
	}
	g, err := Open(ws, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if _, _, err := g.WriteFile("a/b/new.txt", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := g.WriteFile("theirs.txt", []byte("new")); err != nil {
		t.Fatal(err)
	}
	if _, err := g.MkdirAll("c/d"); err != nil {
		t.Fatal(err)
	}
	want := map[string][2]uint32{
		"a": {1000, 1001}, "a/b": {1000, 1001}, "a/b/new.txt": {1000, 1001},
		"c": {1000, 1001}, "c/d": {1000, 1001},
		"theirs.txt": {1002, 1003},
	}
	// Root replaces the file and gives it back to its owner, with its permission bits but never setuid or setgid:
	// root must not hand another user a setuid file.
	if fi, _ := os.Stat(other); fi.Mode() != 0o755 {
		t.Errorf("theirs.txt after the write: mode %v, want -rwxr-xr-x", fi.Mode())
	}
	for rel, ids := range want {
		fi, err := os.Lstat(filepath.Join(ws, rel))
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if st.Uid != ids[0] || st.Gid != ids[1] {
			t.Errorf("%s owned by %d:%d, want %d:%d", rel, st.Uid, st.Gid, ids[0], ids[1])
		}
	}
}

// TestOwnershipRootWorkspace: over a root-owned workspace nothing is given away.
func TestOwnershipRootWorkspace(t *testing.T) {
	if os.Geteuid() != 0 {
		ciskip.Skip(t, "not root here")
	}
	g, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if g.owner != nil {
		t.Fatalf("owner %+v for a root-owned workspace", g.owner)
	}
}
