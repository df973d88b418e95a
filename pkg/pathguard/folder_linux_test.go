package pathguard

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFolderWritesOnlyWhereItWasChecked: a Folder writes its entries from the handle it checked, and stops the moment
// that folder is somewhere else: moved under .git (as a racing move would), a write answers ErrNotFast and lands
// nowhere, so the caller's write by path decides. Control: the handle itself did follow the folder into .git/hooks,
// so a write from it without the place check would have planted a hook.
func TestFolderWritesOnlyWhereItWasChecked(t *testing.T) {
	prot, err := NewProtection(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	for _, d := range []string{"sub", ".git"} {
		if err := os.Mkdir(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	g, err := Open(ws, Options{Protection: prot})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	f, err := g.OpenFolder("sub")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if created, err := f.WriteFrom("a", nil, strings.NewReader("x"), 1, 0o640); err != nil || !created {
		t.Fatalf("a plain write from the folder failed: %v %v", created, err)
	}
	if fi, err := os.Stat(filepath.Join(ws, "sub/a")); err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("sub/a did not land with its mode: %v %v", fi, err)
	}
	if err := os.Rename(filepath.Join(ws, "sub"), filepath.Join(ws, ".git/hooks")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteFrom("post-checkout", nil, strings.NewReader("x"), 1, 0o755); !errors.Is(err, ErrNotFast) {
		t.Fatalf("a write from a folder moved under .git answered %v, want ErrNotFast", err)
	}
	if _, err := os.Lstat(filepath.Join(ws, ".git/hooks/post-checkout")); err == nil {
		t.Fatal("a hook was planted through a moved folder")
	}
	h, err := f.dir.OpenFile("control", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	if _, err := os.Lstat(filepath.Join(ws, ".git/hooks/control")); err != nil {
		t.Fatalf("control: the held handle should have followed the folder into .git/hooks: %v", err)
	}
}

// TestFolderLeavesProtectedNamesToThePath: a protected name, a gitlink, and a name that is a symlink are never
// written from the folder: each answers ErrNotFast, and the write by path refuses the first two. Control: with
// nothing protected the folder writes .git/config itself.
func TestFolderLeavesProtectedNamesToThePath(t *testing.T) {
	for _, protected := range []bool{true, false} {
		remove := DefaultProtected
		if protected {
			remove = nil
		}
		prot, err := NewProtection(nil, remove)
		if err != nil {
			t.Fatal(err)
		}
		ws := t.TempDir()
		if err := os.MkdirAll(filepath.Join(ws, "p/.git"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("elsewhere", filepath.Join(ws, "p/link")); err != nil {
			t.Fatal(err)
		}
		g, err := Open(ws, Options{Protection: prot})
		if err != nil {
			t.Fatal(err)
		}
		f, err := g.OpenFolder("p/.git")
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.WriteFrom("config", nil, strings.NewReader("[core]\n"), 7, 0o644)
		f.Close()
		if !protected {
			if err != nil {
				t.Fatalf("control: with nothing protected the folder should write .git/config: %v", err)
			}
			g.Close()
			continue
		}
		if !errors.Is(err, ErrNotFast) {
			t.Fatalf("a protected name was written from the folder: %v", err)
		}
		if _, _, err := g.WriteFrom("p/.git/config", strings.NewReader("[core]\n"), 7, 0o644); !IsReason(err, ReasonProtected) {
			t.Fatalf("the write by path did not refuse .git/config: %v", err)
		}
		p, err := g.OpenFolder("p")
		if err != nil {
			t.Fatal(err)
		}
		link, _ := p.Lstat("link")
		for name, old := range map[string]os.FileInfo{".git": nil, "link": link} {
			if _, err := p.WriteFrom(name, old, strings.NewReader("x"), 1, 0o644); !errors.Is(err, ErrNotFast) {
				t.Errorf("%s was written from the folder: %v", name, err)
			}
		}
		p.Close()
		if _, err := os.Lstat(filepath.Join(ws, "p/.git/config")); err == nil {
			t.Error(".git/config was planted")
		}
		g.Close()
	}
}
