package pathguard

import (
	"io/fs"
	"slices"
	"strings"
)

// dirFS is the workspace as an fs.FS. Unlike os.Root's own FS it never blocks on a FIFO and never opens a device:
// Open accepts only regular files and folders, checked before and after the (non-blocking) open. Listings leave
// out the temporary files of atomic writes.
type dirFS struct{ g *Guard }

// FS is the workspace as an fs.FS (also fs.ReadDirFS and fs.StatFS). Every path is confined like any other
// operation; FIFOs, devices and sockets are refused by Open, and temporary files of writes in progress are not
// listed. It opens every name by its path from the workspace, so fs.WalkDir over it costs the sum of the depths of
// what it visits: walk trees with Guard.Walk, which opens each entry from its folder's handle.
func (g *Guard) FS() fs.FS { return dirFS{g} }

func (d dirFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) || strings.IndexByte(name, 0) >= 0 {
		return nil, &fs.PathError{Op: "open", Path: printable(name), Err: fs.ErrInvalid}
	}
	f, _, err := d.g.open("open", name, true)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (d dirFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if !fs.ValidPath(name) || strings.IndexByte(name, 0) >= 0 {
		return nil, &fs.PathError{Op: "readdir", Path: printable(name), Err: fs.ErrInvalid}
	}
	f, fi, err := d.g.open("list", name, true)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if !fi.IsDir() {
		return nil, &Error{Op: "list", Path: name, Reason: ReasonNotDir}
	}
	entries, err := f.ReadDir(-1)
	if err != nil {
		return nil, wrap("list", name, err)
	}
	entries = slices.DeleteFunc(entries, func(e fs.DirEntry) bool { return IsTempName(e.Name()) })
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, nil
}

func (d dirFS) Stat(name string) (fs.FileInfo, error) {
	if !fs.ValidPath(name) || strings.IndexByte(name, 0) >= 0 {
		return nil, &fs.PathError{Op: "stat", Path: printable(name), Err: fs.ErrInvalid}
	}
	fi, err := d.g.root.Stat(name)
	return fi, wrap("stat", name, err)
}
