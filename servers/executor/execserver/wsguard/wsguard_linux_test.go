package wsguard

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/goalbox/goalbox/pkg/pathguard"
	"golang.org/x/sys/unix"
)

func write(t *testing.T, root, rel, content string, mode os.FileMode) {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := unix.Chmod(p, uint32(mode)); err != nil {
		t.Fatal(err)
	}
}

// TestApplyLayer applies a hand-made upper layer (as overlayfs lays one out) to a workspace: ordinary changes land,
// everything the guard refuses leaves the workspace as it was and is named. Control: with nothing protected the
// protected changes land too.
func TestApplyLayer(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a whiteout is a character device 0/0: making one needs root (the local backend's tests cover the real overlay as an ordinary user)")
	}
	for _, unprotected := range []bool{false, true} {
		ws, upper := t.TempDir(), t.TempDir()
		write(t, ws, ".git/config", "[core]\n", 0o644)
		write(t, ws, ".vscode/tasks.json", "{}", 0o644)
		write(t, ws, "gone.txt", "x", 0o644)
		write(t, ws, "dir/old.txt", "x", 0o644)
		write(t, ws, "same.txt", "same", 0o644)

		write(t, upper, "new.txt", "new", 0o755)
		write(t, upper, "same.txt", "same", 0o644)
		write(t, upper, ".git/config", "[core]\n\tfsmonitor = evil\n", 0o644)
		write(t, upper, "suid", "x", 0o4755)
		write(t, upper, "dir/fresh.txt", "fresh", 0o644)
		if err := unix.Setxattr(filepath.Join(upper, "dir"), xattrOpaque, []byte("y"), 0); err != nil {
			t.Skipf("no user xattrs on this file system: %v", err)
		}
		for _, w := range []string{"gone.txt", ".vscode"} {
			if err := unix.Mknod(filepath.Join(upper, w), unix.S_IFCHR, 0); err != nil {
				t.Fatal(err)
			}
		}
		if err := unix.Mkfifo(filepath.Join(upper, "fifo"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("../../etc/passwd", filepath.Join(upper, "out")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("new.txt", filepath.Join(upper, "in")); err != nil {
			t.Fatal(err)
		}
		var prot *pathguard.Protection
		var err error
		if unprotected {
			prot, err = pathguard.NewProtection(nil, pathguard.DefaultProtected)
		} else {
			prot, err = pathguard.NewProtection(nil, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
		g, err := New(ws, prot)
		if err != nil {
			t.Fatal(err)
		}
		refused := map[string]string{}
		for _, r := range g.Session().Apply(upper) {
			refused[r.Path] = r.Reason
		}
		g.Close()
		read := func(rel string) string { b, _ := os.ReadFile(filepath.Join(ws, rel)); return string(b) }
		if fi, err := os.Stat(filepath.Join(ws, "new.txt")); err != nil || fi.Mode().Perm() != 0o755 || read("new.txt") != "new" {
			t.Errorf("new.txt with its mode did not land: %v %v", fi, err)
		}
		if _, err := os.Lstat(filepath.Join(ws, "gone.txt")); err == nil {
			t.Error("a whiteout did not delete gone.txt")
		}
		if _, err := os.Lstat(filepath.Join(ws, "dir/old.txt")); err == nil || read("dir/fresh.txt") != "fresh" {
			t.Errorf("the opaque dir/ did not replace the workspace's: old %v, fresh %q", err, read("dir/fresh.txt"))
		}
		if l, err := os.Readlink(filepath.Join(ws, "in")); err != nil || l != "new.txt" {
			t.Errorf("a symlink inside did not land: %q %v", l, err)
		}
		for _, p := range []string{"suid", "fifo", "out"} {
			if _, err := os.Lstat(filepath.Join(ws, p)); err == nil || refused[p] == "" {
				t.Errorf("%s landed or was not named (%q)", p, refused[p])
			}
		}
		if unprotected {
			if read(".git/config") != "[core]\n\tfsmonitor = evil\n" {
				t.Error("positive control: with nothing protected the layer's .git/config should land")
			}
			continue
		}
		if read(".git/config") != "[core]\n" || read(".vscode/tasks.json") != "{}" {
			t.Errorf("a protected file changed: config %q tasks %q", read(".git/config"), read(".vscode/tasks.json"))
		}
		if refused[".git/config"] != pathguard.ReasonProtected {
			t.Errorf("the refused .git/config is not named as protected: %v", refused)
		}
	}
}
