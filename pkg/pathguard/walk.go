package pathguard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
)

// A walk goes down a folder tree from an open handle of each folder: every folder and file is opened by its name
// from its parent's handle (os.Root.OpenRoot, one path component), never by its path from the workspace. Naming each
// entry by its path costs the kernel one lookup per component, so a walk of a tree N levels deep cost N²/2 lookups:
// measured, 16 s to search 3,000 levels and 73 s to move 5,000. From handles it costs a few lookups per
// entry, whatever the depth.
//
// A walk holds one handle per level it is below its start (two in unsorted walks), and the entries of the folders on
// its way down. Both are capped: MaxTreeDepth levels, MaxTreeEntries entries read in all; past either it stops with
// an error that says so. Across all walks of a guard the handles are capped too (half the process's open-file
// limit), so concurrent deep walks cannot starve the server of descriptors.

// Entry is a file, folder, symlink or other entry met by Walk. It is valid only during the call that receives it.
type Entry struct {
	Name  string
	Type  fs.FileMode // the type bits, from lstat: a symlink is a symlink, never what it points to
	Size  int64       // the size of a regular file, else 0
	Depth int         // 1 for the entries of the folder walked, 2 for theirs, ...
	// Allocated is what the entry's blocks take on disk (st_blocks × 512): a sparse file counts what it holds, a
	// file with space reserved by fallocate what it reserves.
	Allocated int64
	Info      fs.FileInfo // its lstat as the walk read it: checkpoints know an unchanged file by it, unopened
	id        fileID      // its identity, to tell that a name still holds it
	nlink     uint64
	w         *walker
	dir       root // the folder that holds it
}

// IsDir reports whether the entry is a folder (not a symlink to one).
func (e *Entry) IsDir() bool { return e.Type.IsDir() }

// Path is the entry's workspace-relative path. It is built on each call (it is as long as the entry is deep), so a
// walk that asks for it only for the entries it reports stays linear.
func (e *Entry) Path() string {
	if len(e.w.prefix) == 0 {
		return e.Name
	}
	return string(e.w.prefix) + "/" + e.Name
}

// Open opens the entry, a regular file, for reading, from its folder's handle. Like Guard.OpenFile it never blocks
// and never opens a FIFO or device: the open is non-blocking and the opened descriptor must be the very regular file
// that was listed (a swap since is refused).
func (e *Entry) Open() (*os.File, error) {
	if !e.Type.IsRegular() {
		return nil, &Error{Op: "open", Path: e.Path(), Reason: ReasonNotRegular}
	}
	// A write replaces a file by renaming a new one over it, so in a busy workspace the name may hold a newer file
	// than the one listed, or a newer one still by the time it is looked at again: take the file the name holds
	// when it holds the same regular file twice in a row (never a symlink swapped in), trying a few times.
	for attempt := 1; ; attempt++ {
		f, err := e.dir.OpenFile(e.Name, openReadFlags, 0)
		if err != nil {
			return nil, wrap("open", e.Path(), err)
		}
		fi, err := f.Stat()
		if err != nil || !fi.Mode().IsRegular() {
			f.Close()
			return nil, &Error{Op: "open", Path: e.Path(), Reason: ReasonChanged}
		}
		if e.same(fi) {
			return f, nil
		}
		now, err := e.dir.Lstat(e.Name)
		if err == nil && now.Mode().IsRegular() && os.SameFile(now, fi) {
			return f, nil
		}
		f.Close()
		if err != nil || !now.Mode().IsRegular() || attempt == maxOpenAttempts {
			return nil, &Error{Op: "open", Path: e.Path(), Reason: ReasonChanged}
		}
	}
}

// maxOpenAttempts is how many times Entry.Open looks at a name that is replaced under it before it gives up.
const maxOpenAttempts = 10

// Readlink returns the target of the entry, a symlink.
func (e *Entry) Readlink() (string, error) {
	link, err := e.dir.Readlink(e.Name)
	return link, wrap("readlink", e.Path(), err)
}

// same reports whether fi, the stat of an opened descriptor, describes the entry itself (on Unix: same device and
// inode).
func (e *Entry) same(fi fs.FileInfo) bool { return sameFile(e.id, fi, e.dir, e.Name) }

// WalkOptions say how Walk goes.
type WalkOptions struct {
	// Unsorted visits each folder's entries in the order the file system lists them, reading them a batch at a
	// time, instead of reading a whole folder and sorting it by name. Its memory is then a batch per level, not a
	// folder's worth of entries.
	Unsorted bool
	// SkipUnreadable leaves out a folder that cannot be opened or read (it vanished, or changed, or permission is
	// denied) instead of failing the walk. The caps are never skipped.
	SkipUnreadable bool
	// NoEntryCap lifts MaxTreeEntries (unsorted walks only, whose memory does not grow with the entries read).
	NoEntryCap bool
	// start, when set, is what the folder walked must be (a delete checks the very folder it then deletes).
	start fs.FileInfo
}

// walkBatch is how many entries an unsorted walk reads from a folder at a time.
const walkBatch = 256

// Walk calls fn for every entry under the folder p, depth first: a folder's entry comes before the entries in it,
// and each folder's entries come by name unless opts.Unsorted. The temporary files of writes in progress are left
// out. fn may return fs.SkipDir to not descend into a folder, fs.SkipAll to end the walk without an error, or an
// error to end it with that error. Symlinks are reported, never followed (p itself may be a symlink to a folder
// inside the workspace).
func (g *Guard) Walk(ctx context.Context, p string, opts WalkOptions, fn func(*Entry) error) error {
	rel, err := g.Clean(p)
	if err != nil {
		return err
	}
	w := &walker{g: g, ctx: ctx, opts: opts, start: rel}
	if rel != "." {
		w.prefix = []byte(rel)
	}
	defer w.closeAll()
	if err := w.push(g.root, rel, nil); err != nil {
		return err
	}
	for len(w.stack) > 0 {
		f := &w.stack[len(w.stack)-1]
		if f.next == len(f.entries) {
			if err := w.more(f); err != nil {
				return err
			}
			if f.next == len(f.entries) {
				w.pop()
				continue
			}
		}
		e := &f.entries[f.next]
		f.next++
		w.prefix = w.prefix[:f.plen]
		if w.visited++; w.visited%walkBatch == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		switch err := fn(e); {
		case errors.Is(err, fs.SkipAll):
			return nil
		case errors.Is(err, fs.SkipDir):
			continue
		case err != nil:
			return err
		}
		if !e.IsDir() {
			continue
		}
		if len(w.stack) > g.opts.MaxTreeDepth {
			return &Error{Op: "walk", Path: rel, Reason: ReasonTooDeep,
				Detail: fmt.Sprintf("the tree under it is more than %d folders deep; one call goes at most %d levels down", g.opts.MaxTreeDepth, g.opts.MaxTreeDepth)}
		}
		if err := w.push(f.dir, e.Name, e); err != nil {
			if opts.SkipUnreadable && !isCap(err) {
				continue
			}
			return err
		}
	}
	return nil
}

// walker is the state of one walk: the folders from its start down to where it is.
type walker struct {
	g       *Guard
	ctx     context.Context
	opts    WalkOptions
	start   string
	stack   []frame
	prefix  []byte // the workspace-relative path of the folder whose entries are being visited; empty for the workspace
	read    int    // entries read, against MaxTreeEntries
	visited int
}

// frame is one open folder of a walk.
type frame struct {
	dir     root
	list    *os.File // the folder's listing while more of it may be read (unsorted walks)
	entries []Entry
	next    int
	plen    int // len(walker.prefix) for this folder's entries
}

// push opens the folder name in parent (the walk's start when e is nil, else the entry e, which it must still be)
// and makes it the folder being walked.
func (w *walker) push(parent root, name string, e *Entry) error {
	path := w.start
	if e != nil {
		path = e.Path()
	}
	if err := w.g.acquireHandles(2); err != nil {
		return &Error{Op: "walk", Path: w.start, Reason: ReasonBusy, Detail: err.Error()}
	}
	dir, err := parent.OpenRoot(name)
	if err != nil {
		w.g.releaseHandles(2)
		if errors.Is(err, syscall.ENOTDIR) || strings.Contains(err.Error(), "not a directory") {
			return &Error{Op: "walk", Path: path, Reason: ReasonNotDir}
		}
		return wrap("walk", path, err)
	}
	list, err := dir.Open(".")
	if err == nil && e == nil && w.opts.start != nil {
		// The start must be the folder the caller checked.
		var fi fs.FileInfo
		if fi, err = list.Stat(); err == nil && !os.SameFile(fi, w.opts.start) {
			err = &Error{Op: "walk", Path: path, Reason: ReasonChanged, Detail: "it was replaced while it was being checked"}
		}
	}
	if err == nil && e != nil {
		// The entry must still be the folder that was listed: one swapped for a symlink since would be followed
		// by OpenRoot (inside the parent, so never out of the workspace, but maybe into a loop).
		var fi fs.FileInfo
		if fi, err = list.Stat(); err == nil && !e.same(fi) {
			err = &Error{Op: "walk", Path: path, Reason: ReasonChanged}
		}
	}
	if err != nil {
		if list != nil {
			list.Close()
		}
		dir.Close()
		w.g.releaseHandles(2)
		return wrap("walk", path, err)
	}
	if e != nil {
		if len(w.prefix) > 0 {
			w.prefix = append(w.prefix, '/')
		}
		w.prefix = append(w.prefix, e.Name...)
	}
	w.stack = append(w.stack, frame{dir: dir, list: list, plen: len(w.prefix)})
	f := &w.stack[len(w.stack)-1]
	if err := w.more(f); err != nil {
		return err
	}
	if !w.opts.Unsorted {
		// A sorted walk has read the whole folder: its listing is no longer needed while the walk is below it.
		w.closeList(f)
	}
	return nil
}

// closeList closes the listing of f, which has been read to its end or is no longer needed.
func (w *walker) closeList(f *frame) {
	f.list.Close()
	f.list = nil
	w.g.releaseHandles(1)
}

// more reads the next entries of the folder f: all of them, sorted, in a sorted walk (on the first call; later
// calls find nothing), or the next batch in an unsorted one.
func (w *walker) more(f *frame) error {
	if f.list == nil {
		return nil
	}
	f.entries, f.next = f.entries[:0], 0
	depth := len(w.stack)
	for {
		batch, err := f.list.ReadDir(walkBatch)
		for _, d := range batch {
			if IsTempName(d.Name()) {
				continue
			}
			fi, ierr := d.Info() // already there: a folder read in an os.Root comes with each entry's lstat
			if ierr != nil {
				continue // vanished since it was listed
			}
			e := Entry{Name: d.Name(), Type: fi.Mode().Type(), Depth: depth, Info: fi, w: w, dir: f.dir}
			if fi.Mode().IsRegular() {
				e.Size = fi.Size()
			}
			if st, ok := sysInfoOf(fi); ok {
				e.nlink, e.Allocated = st.nlink, st.blocks*512
			}
			e.id, _ = idOf(fi)
			f.entries = append(f.entries, e)
		}
		w.read += len(batch)
		if !w.opts.NoEntryCap && w.read > w.g.opts.MaxTreeEntries {
			return &Error{Op: "walk", Path: w.start, Reason: ReasonTooMany,
				Detail: fmt.Sprintf("more than %d entries under it; one call reads at most %d", w.g.opts.MaxTreeEntries, w.g.opts.MaxTreeEntries)}
		}
		if err == io.EOF || (err == nil && len(batch) == 0) {
			if w.opts.Unsorted {
				w.closeList(f)
			}
			break
		}
		if err != nil {
			return wrap("walk", w.path(), err)
		}
		if w.opts.Unsorted && len(f.entries) > 0 {
			return nil
		}
	}
	if !w.opts.Unsorted {
		slices.SortFunc(f.entries, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	}
	return nil
}

// pop closes the folder at the top of the stack.
func (w *walker) pop() {
	f := &w.stack[len(w.stack)-1]
	n := 1
	if f.list != nil {
		f.list.Close()
		n++
	}
	f.dir.Close()
	w.g.releaseHandles(n)
	w.stack = w.stack[:len(w.stack)-1]
	if len(w.stack) > 0 {
		w.prefix = w.prefix[:w.stack[len(w.stack)-1].plen]
	}
}

// path is the workspace-relative path of the folder whose entries are being visited.
func (w *walker) path() string {
	if len(w.prefix) == 0 {
		return "."
	}
	return string(w.prefix)
}

func (w *walker) closeAll() {
	for len(w.stack) > 0 {
		w.pop()
	}
}
