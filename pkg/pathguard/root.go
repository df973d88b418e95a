package pathguard

import (
	"io/fs"
	"os"
	"strings"
	"sync/atomic"
)

// root is an os.Root that counts the path components it is handed. os.Root resolves a path one component at a time,
// an openat or fstatat each, so the count is the work an operation costs the kernel, give or take a constant: an
// operation that names every entry by its path from the workspace costs the sum of their depths (quadratic in a deep
// tree), one that opens each entry from its parent's handle costs one per entry. Tests hold tree operations to the
// second with it (Guard.ResolvedNames).
type root struct {
	r *os.Root
	n *atomic.Int64 // shared by a guard's root and every folder handle opened from it
}

func (r root) count(names ...string) {
	for _, name := range names {
		r.n.Add(int64(strings.Count(name, "/") + 1))
	}
}

func (r root) Close() error { return r.r.Close() }

func (r root) Stat(name string) (fs.FileInfo, error) { r.count(name); return r.r.Stat(name) }

func (r root) Lstat(name string) (fs.FileInfo, error) { r.count(name); return r.r.Lstat(name) }

func (r root) Open(name string) (*os.File, error) { r.count(name); return r.r.Open(name) }

func (r root) OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	r.count(name)
	return r.r.OpenFile(name, flag, perm)
}

// OpenRoot opens the folder name as a root of its own, counted with this one.
func (r root) OpenRoot(name string) (root, error) {
	r.count(name)
	sub, err := r.r.OpenRoot(name)
	return root{sub, r.n}, err
}

func (r root) Readlink(name string) (string, error) { r.count(name); return r.r.Readlink(name) }

func (r root) Remove(name string) error { r.count(name); return r.r.Remove(name) }

func (r root) Symlink(oldname, newname string) error {
	r.count(newname)
	return r.r.Symlink(oldname, newname)
}

func (r root) Rename(oldname, newname string) error {
	r.count(oldname, newname)
	return r.r.Rename(oldname, newname)
}

func (r root) Mkdir(name string, perm fs.FileMode) error { r.count(name); return r.r.Mkdir(name, perm) }

func (r root) MkdirAll(name string, perm fs.FileMode) error {
	r.count(name)
	return r.r.MkdirAll(name, perm)
}

func (r root) Lchown(name string, uid, gid int) error {
	r.count(name)
	return r.r.Lchown(name, uid, gid)
}

// allocated is what the folder name itself takes on disk, 0 when it cannot be told.
func (r root) allocated(name string) int64 {
	fi, err := r.Lstat(name)
	if err != nil {
		return 0
	}
	return allocatedBytes(fi)
}

// ResolvedNames is how many path components the guard has handed to the kernel so far, counted one per component
// of every path it passed to os.Root (see root). It measures the work of tree operations: tests hold list, search,
// move and delete to a count linear in the entries they touch.
func (g *Guard) ResolvedNames() int64 { return g.root.n.Load() }
