package pathguard

// A folder opened once for many writes of its entries: what applying a command's layer (execserver/wsguard) costs
// per file. WriteFrom of each file by its path resolves the path name by name from the workspace, proves each
// folder on the way, checks the protection of the path and of where it leads, and opens the folder again — some 30
// system calls before the file's own. A Folder does the walk and the folder's checks once; each write then checks
// only its own name, and that the folder is still where it was checked (one readlink of the handle, which the
// kernel answers with the folder's current path). Anything outside that narrow case — a name that is protected, a
// symlink, a folder or anything but a regular file at the name, the folder moved or deleted, a write the disk cap
// refuses — is not written here: the caller writes it by its path (Guard.WriteFrom), so every refusal and its
// wording come from the one general write.

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
)

// ErrNotFast is Folder.WriteFrom's answer when it wrote nothing and the write must go by its path (Guard.WriteFrom),
// which decides it.
var ErrNotFast = errors.New("this write needs the guard's full checks")

// Folder is a workspace folder opened for writes of its entries. Close it when done.
type Folder struct {
	g       *Guard
	rel     string // the folder as the caller named it
	real    string // its real path, the one its protection was checked for
	dir     root   // a handle proved to be the folder at real when it was opened
	release func()
	self    *os.File // the folder opened once more, for the kernel to say where it is now (currentPath)
	want    string   // where it must be: the workspace's real path joined with real
}

// OpenFolder opens the existing folder p for writes of its entries.
func (g *Guard) OpenFolder(p string) (*Folder, error) {
	rel, err := g.Clean(p)
	if err != nil {
		return nil, err
	}
	real, h, release, err := g.folderOf("write", rel, rel)
	if err != nil {
		return nil, err
	}
	self, err := h.Open(".")
	if err != nil {
		release()
		return nil, wrap("write", rel, err)
	}
	want := g.realDir
	if real != "." {
		want += "/" + real
	}
	return &Folder{g: g, rel: rel, real: real, dir: h, release: release, self: self, want: want}, nil
}

// Close releases the folder's handle.
func (f *Folder) Close() { f.self.Close(); f.release() }

// Lstat describes the folder's entry name, without following a final symlink.
func (f *Folder) Lstat(name string) (fs.FileInfo, error) {
	if !plainName(name) {
		return nil, &Error{Op: "stat", Path: path.Join(f.rel, name), Reason: ReasonInvalid, Detail: "not a name of one entry"}
	}
	fi, err := f.dir.Lstat(name)
	return fi, wrap("stat", path.Join(f.rel, name), err)
}

// WriteFrom is Guard.WriteFrom of the folder's entry name, whose current state the caller read as old (nil: no
// entry; Folder.Lstat): it replaces the regular file there or makes a new one with size bytes of src and perm's 0777
// bits, and reports whether it created it. It answers ErrNotFast, having written and read nothing, for anything but
// that case, or when the folder is no longer where its checks were made: then the caller writes by the path.
func (f *Folder) WriteFrom(name string, old fs.FileInfo, src io.Reader, size int64, perm fs.FileMode) (bool, error) {
	g := f.g
	rel := path.Join(f.rel, name)
	if !plainName(name) || (old != nil && !old.Mode().IsRegular()) {
		return false, ErrNotFast
	}
	if c, err := g.Clean(rel); err != nil || c != rel {
		return false, ErrNotFast
	}
	if g.refuseProtected("write", rel, rel, path.Join(f.real, name)) != nil || g.refuseGitlink("write", rel, rel) != nil {
		return false, ErrNotFast
	}
	// The folder's protection was checked for its real path when it was opened: a write is made from its handle
	// only while the kernel still places it there (a folder moved since, under .git say, is written by path, and
	// refused there).
	if now, ok := currentPath(f.self); !ok || now != f.want {
		return false, ErrNotFast
	}
	done, err := g.reserveSpace("write", rel, old, size)
	if err != nil {
		return false, ErrNotFast
	}
	err = g.writeIn(f.dir, "", name, rel, old, perm.Perm(), true, src, size, false)
	done(err == nil)
	return old == nil && err == nil, err
}

// plainName reports whether name is the name of one entry: not empty, ".", ".." or anything with a slash.
func plainName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, `/\`)
}
