//go:build unix

package safedir

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/goalbox/goalbox/pkg/ciskip"
)

// otherUID is a uid of no one: what counts is that it is not this process's.
const otherUID = 4242420

// base is a fresh folder every walk may pass: root's or ours, 0755 (t.TempDir's parents are /tmp, sticky).
func base(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// needRoot skips a test that must make a folder or symlink another user owns.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		ciskip.Skip(t, "needs root to give a folder or symlink to another uid")
	}
}

// mkdirOf makes the folder p with mode, owned by uid.
func mkdirOf(t *testing.T, p string, mode os.FileMode, uid int) string {
	t.Helper()
	if err := os.Mkdir(p, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(p, uid, uid); err != nil {
		t.Fatal(err)
	}
	return p
}

// wantRefusal fails unless err is an *UnsafeError about the component at path saying why.
func wantRefusal(t *testing.T, err error, path, why string) {
	t.Helper()
	var unsafe *UnsafeError
	if !errors.As(err, &unsafe) || unsafe.Path != path || !strings.Contains(unsafe.Why, why) {
		t.Errorf("got %v; want a refusal of %s saying %q", err, path, why)
	}
}

// sameFolder reports whether the open folder f is the folder at path.
func sameFolder(t *testing.T, f *os.File, path string) bool {
	t.Helper()
	a, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}

func TestMkdirAllMakesTheMissingFolders(t *testing.T) {
	dir := filepath.Join(base(t), "a", "b", "c")
	f, err := MkdirAll(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if !sameFolder(t, f, dir) {
		t.Errorf("the folder returned is not %s", dir)
	}
	for _, p := range []string{dir, filepath.Dir(dir), filepath.Dir(filepath.Dir(dir))} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v; want a folder of mode 0700", p, fi, err)
		}
	}
	// Again: the folders exist now, and are opened as they are.
	g, err := MkdirAll(dir)
	if err != nil {
		t.Fatal(err)
	}
	g.Close()
}

func TestMkdirAllRefusesARelativePath(t *testing.T) {
	if _, err := MkdirAll("relative/dir"); err == nil || !strings.Contains(err.Error(), "not an absolute path") {
		t.Errorf("got %v; want a refusal of a relative path", err)
	}
}

// TestMkdirAllFollowsTrustedSymlinks is the positive control of the symlink refusals: a symlink of this user's
// (root's, when the tests run as root) is followed, absolute or relative, ".." in its target taken from the folder
// the symlink is in.
func TestMkdirAllFollowsTrustedSymlinks(t *testing.T) {
	b := base(t)
	real := mkdirOf(t, filepath.Join(b, "real"), 0o755, os.Geteuid())
	mkdirOf(t, filepath.Join(b, "x"), 0o755, os.Geteuid())
	if err := os.Symlink(real, filepath.Join(b, "absolute")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../real", filepath.Join(b, "x", "relative")); err != nil {
		t.Fatal(err)
	}
	for _, through := range []string{filepath.Join(b, "absolute"), filepath.Join(b, "x", "relative")} {
		f, err := MkdirAll(filepath.Join(through, "made"))
		if err != nil {
			t.Fatalf("through %s: %v", through, err)
		}
		if !sameFolder(t, f, filepath.Join(real, "made")) {
			t.Errorf("through %s: not the folder %s/made", through, real)
		}
		f.Close()
	}
}

func TestMkdirAllRefusesASymlinkOfAnotherUser(t *testing.T) {
	needRoot(t)
	b := base(t)
	secret := mkdirOf(t, filepath.Join(b, "root-only"), 0o700, 0)
	planted := filepath.Join(b, "planted")
	if err := os.Symlink(secret, planted); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(planted, otherUID, otherUID); err != nil {
		t.Fatal(err)
	}
	_, err := MkdirAll(filepath.Join(planted, "made"))
	wantRefusal(t, err, planted, "is a symlink owned by uid 4242420")
	if entries, _ := os.ReadDir(secret); len(entries) != 0 {
		t.Errorf("the planted symlink led the walk into the root-only folder: %v", entries)
	}
	// Positive control: a walk by path, as os.MkdirAll's, makes its folder in the root-only one.
	if err := os.MkdirAll(filepath.Join(planted, "made"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(secret, "made")); err != nil {
		t.Errorf("the control: os.MkdirAll did not follow the planted symlink: %v", err)
	}
}

func TestMkdirAllRefusesAFolderOfAnotherUser(t *testing.T) {
	needRoot(t)
	theirs := mkdirOf(t, filepath.Join(base(t), "theirs"), 0o755, otherUID)
	_, err := MkdirAll(filepath.Join(theirs, "made"))
	wantRefusal(t, err, theirs, "belongs to uid 4242420")
	if _, err := os.Lstat(filepath.Join(theirs, "made")); err == nil {
		t.Error("a folder was made in another user's folder")
	}
	// The last folder counts as much as those before it.
	_, err = MkdirAll(theirs)
	wantRefusal(t, err, theirs, "belongs to uid 4242420")
}

// TestMkdirAllRefusesAFolderOthersMayWrite: group- or world-writable is refused; sticky and world-writable (as /tmp
// is) is the positive control.
func TestMkdirAllRefusesAFolderOthersMayWrite(t *testing.T) {
	b := base(t)
	for _, mode := range []os.FileMode{0o775, 0o757} {
		open := mkdirOf(t, filepath.Join(b, mode.String()), mode, os.Geteuid())
		_, err := MkdirAll(filepath.Join(open, "made"))
		wantRefusal(t, err, open, "is writable by other users")
	}
	sticky := mkdirOf(t, filepath.Join(b, "sticky"), 0o777|os.ModeSticky, os.Geteuid())
	if err := os.Chmod(sticky, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	f, err := MkdirAll(filepath.Join(sticky, "made"))
	if err != nil {
		t.Fatalf("a sticky folder on the way: %v", err)
	}
	f.Close()
}

func TestMkdirAllRefusesAFileOnTheWay(t *testing.T) {
	file := filepath.Join(base(t), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := MkdirAll(filepath.Join(file, "made"))
	wantRefusal(t, err, file, "is not a folder")
}

func TestMkdirAllBoundsTheSymlinksFollowed(t *testing.T) {
	b := base(t)
	if err := os.Symlink("loop", filepath.Join(b, "loop")); err != nil {
		t.Fatal(err)
	}
	if _, err := MkdirAll(filepath.Join(b, "loop", "made")); err == nil || !strings.Contains(err.Error(), "too many symlinks") {
		t.Errorf("got %v; want too many symlinks", err)
	}
}

// TestMkdirPrivateClosesAFolderOfOurs: the last folder, ours and open to others (a user's mkdir), is made 0700
// rather than refused; the same folder on the way is refused, as by MkdirAll.
func TestMkdirPrivateClosesAFolderOfOurs(t *testing.T) {
	open := mkdirOf(t, filepath.Join(base(t), "open"), 0o775, os.Geteuid())
	f, err := MkdirPrivate(open)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if fi, err := os.Stat(open); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("%v %v; want the folder made 0700", fi, err)
	}
	if err := os.Chmod(open, 0o775); err != nil {
		t.Fatal(err)
	}
	_, err = MkdirPrivate(filepath.Join(open, "below"))
	wantRefusal(t, err, open, "is writable by other users")
}

// TestMkdirPrivateRefusesALastFolderOfAnother: another user's folder, and (for a user who is not root) root's,
// may be on the way but not be the private folder itself.
func TestMkdirPrivateRefusesALastFolderOfAnother(t *testing.T) {
	if os.Geteuid() != 0 {
		_, err := MkdirPrivate("/")
		wantRefusal(t, err, "/", "belongs to uid 0, not to this user")
		return
	}
	theirs := mkdirOf(t, filepath.Join(base(t), "theirs"), 0o700, otherUID)
	_, err := MkdirPrivate(theirs)
	wantRefusal(t, err, theirs, "belongs to uid 4242420")
	if fi, err := os.Stat(theirs); err != nil || fi.Sys().(*syscall.Stat_t).Uid != otherUID {
		t.Errorf("the other user's folder was changed: %v %v", fi, err)
	}
}
