package pathguard

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/goalbox/goalbox/pkg/ciskip"
)

func TestClean(t *testing.T) {
	f := newFixture(t)
	ok := map[string]string{
		"":                           ".",
		".":                          ".",
		"a/b/../c":                   "a/c",
		"./a//b/":                    "a/b",
		"/workspace":                 ".",
		"/workspace/":                ".",
		"/workspace/src/main.go":     "src/main.go",
		"/workspace/a/../b":          "b",
		f.ws:                         ".",
		f.ws + "/src/x":              "src/x",
		"dir with space/ünïcødé.txt": "dir with space/ünïcødé.txt",
	}
	for in, want := range ok {
		got, err := f.g.Clean(in)
		if err != nil || got != want {
			t.Errorf("Clean(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	refused := map[string]string{
		"..":                       ReasonOutside,
		"../x":                     ReasonOutside,
		"a/../../x":                ReasonOutside,
		"/etc/passwd":              ReasonOutside,
		"/workspace_evil/x":        ReasonOutside,
		"/workspace/../etc":        ReasonOutside,
		f.base + "/ws_evil/secret": ReasonOutside,
		f.ws + "/../secret.txt":    ReasonOutside,
		"a\x00b":                   ReasonInvalid,
		"a\\..\\..\\etc":           ReasonInvalid, // a backslash is refused on every platform (names.go)
	}
	for in, reason := range refused {
		got, err := f.g.Clean(in)
		if !IsReason(err, reason) {
			t.Errorf("Clean(%q) = %q, %v; want refusal %q", in, got, err, reason)
			continue
		}
		f.checkMessage(t, err, in)
	}
	_, err := f.g.Clean("/etc/passwd")
	if !strings.Contains(err.Error(), "absolute paths must be under /workspace") {
		t.Errorf("message %q does not say what is allowed", err)
	}
	_, err = f.g.Clean("../x")
	if !strings.Contains(err.Error(), `".." may not climb out of the workspace`) {
		t.Errorf("message %q does not say what is allowed", err)
	}
	_, err = f.g.Clean("a\x00b")
	if strings.IndexByte(err.Error(), 0) >= 0 || !strings.Contains(err.Error(), "NUL") {
		t.Errorf("message %q should name the NUL byte without containing one", err)
	}
}

func TestOpenOptions(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(dir, Options{AdvertisedRoot: "relative"}); err == nil {
		t.Fatal("a relative advertised root was accepted")
	}
	g, err := Open(filepath.Join(dir, "made", "here"), Options{AdvertisedRoot: "/srv/ws/"})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if g.AdvertisedRoot() != "/srv/ws" || g.Options().MaxReadBytes != DefaultMaxReadBytes {
		t.Fatalf("options not filled in: %+v", g.Options())
	}
	if fi, err := os.Stat(g.Dir()); err != nil || !fi.IsDir() {
		t.Fatalf("workspace not created: %v", err)
	}
	if rel, err := g.Clean("/srv/ws/a"); err != nil || rel != "a" {
		t.Fatalf("Clean under custom root = %q, %v", rel, err)
	}
	if _, err := g.Clean("/workspace/a"); !IsReason(err, ReasonOutside) {
		t.Fatalf("the default root is still accepted with a custom one: %v", err)
	}
}

// A workspace given through a symlink is opened at its real path; that path is the one absolute paths may use.
func TestOpenThroughSymlink(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	os.Mkdir(filepath.Join(dir, "real"), 0o755)
	os.Symlink("real", filepath.Join(dir, "alias"))
	g, err := Open(filepath.Join(dir, "alias"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if g.Dir() != filepath.Join(dir, "real") {
		t.Fatalf("Dir() = %q, want the real path", g.Dir())
	}
	if rel, err := g.Clean(dir + "/real/x"); err != nil || rel != "x" {
		t.Fatalf("Clean(real path) = %q, %v", rel, err)
	}
	if _, err := g.Clean(dir + "/alias/x"); !IsReason(err, ReasonOutside) {
		t.Fatalf("Clean(alias path) = %v; only the real path and the advertised root are accepted", err)
	}
}

// A workspace whose real path lies under the advertised root: the more specific prefix wins.
func TestCleanNestedRoots(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	g, err := Open(filepath.Join(dir, "ws"), Options{AdvertisedRoot: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if rel, err := g.Clean(dir + "/ws/a"); err != nil || rel != "a" {
		t.Fatalf("Clean(real path) = %q, %v; want a", rel, err)
	}
}

func TestStatAndLstat(t *testing.T) {
	f := newFixture(t)
	f.link(t, "file.txt", "ln")
	rel, fi, err := f.g.Stat("/workspace/ln")
	if err != nil || rel != "ln" || !fi.Mode().IsRegular() || fi.Size() != 6 {
		t.Fatalf("Stat(ln) = %q, %v, %v", rel, fi, err)
	}
	_, fi, err = f.g.Lstat("ln")
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("Lstat(ln) = %v, %v; want the link itself", fi, err)
	}
	_, fi, err = f.g.Stat(".")
	if err != nil || !fi.IsDir() {
		t.Fatalf("Stat(.) = %v, %v", fi, err)
	}
	_, _, err = f.g.Stat("missing")
	if !IsReason(err, ReasonNotFound) {
		t.Fatalf("Stat(missing) = %v", err)
	}
	if want := `stat "missing": not found`; err.Error() != want {
		t.Fatalf("message %q, want %q", err, want)
	}
	_, _, err = f.g.Stat("file.txt/x")
	if !IsReason(err, ReasonNotDir) {
		t.Fatalf("Stat(file.txt/x) = %v", err)
	}
	_, _, err = f.g.Lstat("../x")
	if !IsReason(err, ReasonOutside) {
		t.Fatalf("Lstat(../x) = %v", err)
	}
}

func TestOpenFileAndReadFile(t *testing.T) {
	f := newFixture(t)
	rel, fh, fi, err := f.g.OpenFile("sub/inner.txt")
	if err != nil || rel != "sub/inner.txt" || fi.Size() != 6 {
		t.Fatalf("OpenFile = %q, %v, %v", rel, fi, err)
	}
	fh.Close()
	rel, data, err := f.g.ReadFile("/workspace/sub/../file.txt")
	if err != nil || rel != "file.txt" || string(data) != "hello\n" {
		t.Fatalf("ReadFile = %q, %q, %v", rel, data, err)
	}
	_, _, err = f.g.ReadFile("sub")
	if !IsReason(err, ReasonIsDir) || !strings.Contains(err.Error(), "only regular files can be read") {
		t.Fatalf("ReadFile(folder) = %v", err)
	}
	_, _, _, err = f.g.OpenFile("nope.txt")
	if !IsReason(err, ReasonNotFound) {
		t.Fatalf("OpenFile(missing) = %v", err)
	}
}

func TestReadFileCap(t *testing.T) {
	dir := t.TempDir()
	g, err := Open(dir, Options{MaxReadBytes: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	os.WriteFile(filepath.Join(dir, "ten"), []byte("0123456789"), 0o644)
	os.WriteFile(filepath.Join(dir, "eleven"), []byte("0123456789A"), 0o644)
	if _, data, err := g.ReadFile("ten"); err != nil || len(data) != 10 {
		t.Fatalf("ReadFile at the cap = %q, %v", data, err)
	}
	_, _, err = g.ReadFile("eleven")
	if !IsReason(err, ReasonTooLarge) || !strings.Contains(err.Error(), "11 bytes; the limit is 10") {
		t.Fatalf("ReadFile past the cap = %v", err)
	}
}

func TestWriteFile(t *testing.T) {
	f := newFixture(t)
	rel, created, err := f.g.WriteFile("/workspace/new/dir/a.txt", []byte("one"))
	if err != nil || rel != "new/dir/a.txt" || !created {
		t.Fatalf("WriteFile(new) = %q, %v, %v", rel, created, err)
	}
	if b, _ := os.ReadFile(filepath.Join(f.ws, "new/dir/a.txt")); string(b) != "one" {
		t.Fatalf("content %q", b)
	}
	_, created, err = f.g.WriteFile("new/dir/a.txt", []byte("two"))
	if err != nil || created {
		t.Fatalf("WriteFile(existing) created=%v err=%v", created, err)
	}
	// The mode of an existing file survives the atomic replace, even bits the umask would cut.
	p := filepath.Join(f.ws, "script.sh")
	os.WriteFile(p, []byte("#!/bin/sh\n"), 0o644)
	os.Chmod(p, 0o775)
	if _, _, err := f.g.WriteFile("script.sh", []byte("#!/bin/sh\necho\n")); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o775 {
		t.Fatalf("mode after overwrite %v, want 0775", fi.Mode().Perm())
	}
	// setuid/setgid bits are not carried over; a read-only file is replaced and stays read-only.
	os.Chmod(p, os.ModeSetuid|os.ModeSetgid|0o755)
	if _, _, err := f.g.WriteFile("script.sh", []byte("#!/bin/sh\n")); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(p); fi.Mode() != 0o755 {
		t.Fatalf("mode after overwriting a setuid file %v, want -rwxr-xr-x", fi.Mode())
	}
	ro := filepath.Join(f.ws, "ro.txt")
	os.WriteFile(ro, []byte("old"), 0o444)
	if _, _, err := f.g.WriteFile("ro.txt", []byte("new")); err != nil {
		t.Fatalf("replacing a read-only file: %v", err)
	}
	if fi, _ := os.Stat(ro); fi.Mode().Perm() != 0o444 {
		t.Fatalf("read-only file became %v", fi.Mode().Perm())
	}
	// A symlink inside is written through: its target changes, the link stays.
	f.link(t, "sub/inner.txt", "to-inner")
	if _, created, err := f.g.WriteFile("to-inner", []byte("via link")); err != nil || created {
		t.Fatalf("WriteFile through an inside link: created=%v err=%v", created, err)
	}
	if b, _ := os.ReadFile(filepath.Join(f.ws, "sub/inner.txt")); string(b) != "via link" {
		t.Fatalf("link target holds %q", b)
	}
	if fi, _ := os.Lstat(filepath.Join(f.ws, "to-inner")); fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatal("the link was replaced by a file")
	}
	// A dangling link inside creates its target.
	f.link(t, "sub/born.txt", "to-born")
	if _, created, err := f.g.WriteFile("to-born", []byte("b")); err != nil || !created {
		t.Fatalf("WriteFile through a dangling inside link: created=%v err=%v", created, err)
	}
	if b, _ := os.ReadFile(filepath.Join(f.ws, "sub/born.txt")); string(b) != "b" {
		t.Fatalf("dangling link target holds %q", b)
	}
	for _, c := range []struct{ path, reason, detail string }{
		{".", ReasonIsDir, "give a file path"},
		{"sub", ReasonIsDir, "a folder cannot be overwritten"},
		{"sub/", ReasonIsDir, "ends in /"},
		{"newdir/", ReasonIsDir, "ends in /"},
		{"file.txt/x", ReasonNotDir, "not a folder"},
	} {
		_, _, err := f.g.WriteFile(c.path, []byte("x"))
		if !IsReason(err, c.reason) || !strings.Contains(err.Error(), c.detail) {
			t.Errorf("WriteFile(%q) = %v; want %s mentioning %q", c.path, err, c.reason, c.detail)
		}
	}
	if _, err := os.Lstat(filepath.Join(f.ws, "newdir")); err == nil {
		t.Error("a refused write left newdir behind")
	}
	entries, _ := os.ReadDir(f.ws)
	for _, e := range entries {
		if IsTempName(e.Name()) {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

func TestWriteFileCap(t *testing.T) {
	dir := t.TempDir()
	g, _ := Open(dir, Options{MaxWriteBytes: 4})
	defer g.Close()
	if _, _, err := g.WriteFile("a", []byte("1234")); err != nil {
		t.Fatal(err)
	}
	_, _, err := g.WriteFile("a", []byte("12345"))
	if !IsReason(err, ReasonTooLarge) || !strings.Contains(err.Error(), "5 bytes; the limit is 4") {
		t.Fatalf("over the write cap: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a")); string(b) != "1234" {
		t.Fatalf("refused write changed the file: %q", b)
	}
}

// A write the file system itself refuses (a read-only folder for a user, an immutable one for root) comes back
// with the errno's text and the workspace-relative path, never the host path.
func TestWriteFileRefusedByFileSystem(t *testing.T) {
	dir := t.TempDir()
	g, _ := Open(dir, Options{})
	defer g.Close()
	ro := filepath.Join(dir, "ro")
	os.Mkdir(ro, 0o555)
	want := "permission denied"
	if os.Geteuid() == 0 {
		// Root ignores permission bits; an immutable folder refuses even root.
		if out, err := exec.Command("chattr", "+i", ro).CombinedOutput(); err != nil {
			ciskip.Skipf(t, "running as root and cannot make an immutable folder here (%v: %s)", err, out)
		}
		t.Cleanup(func() { exec.Command("chattr", "-i", ro).Run() })
		want = "operation not permitted"
	}
	_, _, err := g.WriteFile("ro/a", []byte("x"))
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), dir) {
		t.Fatalf("write in a folder the file system refuses: %v; want %q without the host path", err, want)
	}
	if want := `write "ro/a": ` + want; err.Error() != want {
		t.Fatalf("message %q, want %q", err, want)
	}
}

func TestMkdirAll(t *testing.T) {
	f := newFixture(t)
	rel, err := f.g.MkdirAll("/workspace/a/b/c")
	if err != nil || rel != "a/b/c" {
		t.Fatalf("MkdirAll = %q, %v", rel, err)
	}
	if fi, err := os.Stat(filepath.Join(f.ws, "a/b/c")); err != nil || !fi.IsDir() {
		t.Fatal("folder not made")
	}
	if _, err := f.g.MkdirAll("a/b/c"); err != nil {
		t.Fatalf("MkdirAll on an existing folder: %v", err)
	}
	if _, err := f.g.MkdirAll("file.txt/d"); !IsReason(err, ReasonNotDir) {
		t.Fatalf("MkdirAll under a file: %v", err)
	}
	if _, err := f.g.MkdirAll("file.txt"); err == nil {
		t.Fatal("MkdirAll over a file succeeded")
	}
}

func TestReadDir(t *testing.T) {
	f := newFixture(t)
	os.WriteFile(filepath.Join(f.ws, tempPrefix+"0123456789abcdef"), []byte("half"), 0o644)
	f.link(t, "sub", "sublink")
	rel, entries, err := f.g.ReadDir("")
	if err != nil || rel != "." {
		t.Fatalf("ReadDir = %q, %v", rel, err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if got := strings.Join(names, ","); got != "file.txt,sub,sublink" {
		t.Fatalf("ReadDir names %s; want sorted, temporary files hidden", got)
	}
	if _, entries, err = f.g.ReadDir("sublink"); err != nil || len(entries) != 2 {
		t.Fatalf("ReadDir through an inside link = %v, %v", entries, err)
	}
	if _, _, err = f.g.ReadDir("file.txt"); !IsReason(err, ReasonNotDir) {
		t.Fatalf("ReadDir(file) = %v", err)
	}
	if _, _, err = f.g.ReadDir("missing"); !IsReason(err, ReasonNotFound) {
		t.Fatalf("ReadDir(missing) = %v", err)
	}
}

func TestRemove(t *testing.T) {
	f := newFixture(t)
	rel, deleted, err := f.g.Remove("/workspace/file.txt", false)
	if err != nil || !deleted || rel != "file.txt" {
		t.Fatalf("Remove(file) = %q, %v, %v", rel, deleted, err)
	}
	if _, deleted, err = f.g.Remove("file.txt", false); err != nil || deleted {
		t.Fatalf("Remove(missing) = %v, %v; want false, nil", deleted, err)
	}
	_, deleted, err = f.g.Remove("sub", false)
	if !IsReason(err, ReasonNotEmpty) || deleted || !strings.Contains(err.Error(), "set recursive") {
		t.Fatalf("Remove(non-empty, not recursive) = %v, %v", deleted, err)
	}
	if _, deleted, err = f.g.Remove("sub", true); err != nil || !deleted {
		t.Fatalf("Remove(sub, recursive) = %v, %v", deleted, err)
	}
	os.Mkdir(filepath.Join(f.ws, "empty"), 0o755)
	if _, deleted, err = f.g.Remove("empty", false); err != nil || !deleted {
		t.Fatalf("Remove(empty folder) = %v, %v", deleted, err)
	}
	if _, _, err = f.g.Remove(".", true); !IsReason(err, ReasonInvalid) {
		t.Fatalf("Remove(.) = %v", err)
	}
	if _, _, err = f.g.Remove("/workspace/", true); !IsReason(err, ReasonInvalid) {
		t.Fatalf("Remove(/workspace/) = %v", err)
	}
	if _, err := os.Stat(f.ws); err != nil {
		t.Fatal("the workspace is gone")
	}
}

func TestRename(t *testing.T) {
	f := newFixture(t)
	rs, rd, err := f.g.Rename("file.txt", "/workspace/moved/deeper/file.txt", false)
	if err != nil || rs != "file.txt" || rd != "moved/deeper/file.txt" {
		t.Fatalf("Rename = %q, %q, %v", rs, rd, err)
	}
	if b, _ := os.ReadFile(filepath.Join(f.ws, "moved/deeper/file.txt")); string(b) != "hello\n" {
		t.Fatal("moved file lost its content")
	}
	os.WriteFile(filepath.Join(f.ws, "other.txt"), []byte("other"), 0o644)
	_, _, err = f.g.Rename("other.txt", "moved/deeper/file.txt", false)
	if !IsReason(err, ReasonExists) || !strings.Contains(err.Error(), "set overwrite") {
		t.Fatalf("Rename onto existing without overwrite = %v", err)
	}
	if _, _, err = f.g.Rename("other.txt", "moved/deeper/file.txt", true); err != nil {
		t.Fatalf("Rename with overwrite = %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(f.ws, "moved/deeper/file.txt")); string(b) != "other" {
		t.Fatal("overwrite did not replace the file")
	}
	os.WriteFile(filepath.Join(f.ws, "third.txt"), nil, 0o644)
	if _, _, err = f.g.Rename("third.txt", "sub", true); !IsReason(err, ReasonIsDir) {
		t.Fatalf("Rename onto a folder = %v", err)
	}
	if _, _, err = f.g.Rename("sub", "sub/deep/sub", false); !IsReason(err, ReasonInvalid) || !strings.Contains(err.Error(), "into itself") {
		t.Fatalf("Rename into itself = %v", err)
	}
	if _, _, err = f.g.Rename("missing", "x", false); !IsReason(err, ReasonNotFound) {
		t.Fatalf("Rename(missing) = %v", err)
	}
	if _, _, err = f.g.Rename(".", "x", false); !IsReason(err, ReasonInvalid) {
		t.Fatalf("Rename(.) = %v", err)
	}
	// A folder with relative links inside that stay inside after the move is fine.
	f.link(t, "../inner.txt", "sub/deep/up")
	if _, _, err = f.g.Rename("sub", "a/b/sub", false); err != nil {
		t.Fatalf("Rename(folder with inside links) = %v", err)
	}
	if _, b, err := f.g.ReadFile("a/b/sub/deep/up"); err != nil || string(b) != "inner\n" {
		t.Fatalf("link after folder move reads %q, %v", b, err)
	}
	// A symlink that keeps pointing inside can be moved.
	f.link(t, "a/b/sub/inner.txt", "ln")
	if _, _, err = f.g.Rename("ln", "ln2", false); err != nil {
		t.Fatalf("Rename(link) = %v", err)
	}
}

func TestErrorMessages(t *testing.T) {
	e := &Error{Op: "read", Path: "a.txt", Reason: ReasonTooLarge, Detail: "the limit is 1"}
	if e.Error() != `read "a.txt": too large (the limit is 1)` {
		t.Fatalf("message %q", e)
	}
	if IsReason(syscall.ENOENT, ReasonNotFound) {
		t.Fatal("IsReason matched a non-pathguard error")
	}
	if got := printable(strings.Repeat("x", 300)); len(got) != 203 {
		t.Fatalf("printable kept %d bytes", len(got))
	}
}

// Reads and writes follow the same symlink chains: up to 8 links on one path (os.Root's limit), refused past it.
func TestSymlinkChainLimit(t *testing.T) {
	f := newFixture(t)
	prev := "file.txt"
	for i := 1; i <= 9; i++ {
		name := fmt.Sprintf("c%d", i)
		f.link(t, prev, name)
		prev = name
	}
	if _, b, err := f.g.ReadFile("c8"); err != nil || string(b) != "hello\n" {
		t.Fatalf("ReadFile through 8 links = %q, %v", b, err)
	}
	if _, _, err := f.g.WriteFile("c8", []byte("eight")); err != nil {
		t.Fatalf("WriteFile through 8 links = %v", err)
	}
	for _, err := range []error{
		func() error { _, _, err := f.g.ReadFile("c9"); return err }(),
		func() error { _, _, err := f.g.WriteFile("c9", nil); return err }(),
	} {
		if !IsReason(err, ReasonInvalid) || !strings.Contains(err.Error(), "more than 8 symlinks") {
			t.Errorf("past the chain limit: %v", err)
		}
	}
	f.link(t, "loop-b", "loop-a")
	f.link(t, "loop-a", "loop-b")
	if _, _, err := f.g.ReadFile("loop-a"); !IsReason(err, ReasonInvalid) || !strings.Contains(err.Error(), "a loop") {
		t.Errorf("ReadFile(loop) = %v", err)
	}
}

func TestOpenFileTrailingSlash(t *testing.T) {
	g, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if _, _, err := g.WriteFile("a.txt", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := g.ReadFile("a.txt/"); !IsReason(err, ReasonNotDir) || !strings.Contains(err.Error(), "drop the slash") {
		t.Errorf(`ReadFile("a.txt/") = %v, want a not-a-folder error`, err)
	}
	if _, data, err := g.ReadFile("a.txt"); err != nil || string(data) != "x" {
		t.Errorf("ReadFile(a.txt) = %q, %v", data, err)
	}
	// "a.txt/." and "a.txt/.." name a folder too, as open(2) sees them, however path.Clean spells them.
	for _, p := range []string{"a.txt/.", "a.txt/./", "./a.txt/.", "a.txt/..", "/workspace/a.txt/."} {
		if _, _, err := g.ReadFile(p); !IsReason(err, ReasonNotDir) || !strings.Contains(err.Error(), "names a folder") {
			t.Errorf("ReadFile(%q) = %v, want a not-a-folder error", p, err)
		}
		if _, _, err := g.WriteFile(p, []byte("y")); !IsReason(err, ReasonIsDir) || !strings.Contains(err.Error(), "names a folder") {
			t.Errorf("WriteFile(%q) = %v, want a folder error", p, err)
		}
	}
	if _, data, err := g.ReadFile("a.txt"); err != nil || string(data) != "x" {
		t.Errorf("after the refused writes ReadFile(a.txt) = %q, %v", data, err)
	}
}
