package pathguard

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
)

// maxRemoveLevels is how many levels of folders a delete holds open at once. A folder deeper than that is moved up
// into the folder being deleted (one rename) and deleted from there, so a delete holds a bounded number of handles
// and memory whatever the depth of the tree, and still costs time linear in its entries: each rename saves
// maxRemoveLevels levels of descent and costs maxRemoveLevels lookups. (os.RemoveAll holds a handle per level: a
// tree deeper than the open-file limit cannot be deleted by it at all.)
const maxRemoveLevels = 64

// removeBatch is how many names a delete reads from a folder at a time.
const removeBatch = 256

// maxBarrenPasses bounds the passes over one folder that delete nothing yet leave it not empty (entries created as
// fast as they are deleted): past it the delete gives up rather than loop.
const maxBarrenPasses = 3

// movedPrefix names the folders a delete moved up; unlike temporary files they stay visible in listings, so a delete
// that fails half-way leaves nothing hidden.
const movedPrefix = ".goalbox-deleting-"

// removeTree deletes the folder rel, which lstat described as fi, and everything in it. Every entry is deleted from
// its folder's handle by its name; nothing is followed out of the folder (a symlink is deleted, not its target, and
// a folder swapped for a symlink since it was listed can only lead to another folder inside the one being deleted).
func (g *Guard) removeTree(rel string, fi fs.FileInfo) error {
	if err := g.acquireHandles(2 * (maxRemoveLevels + 1)); err != nil {
		return &Error{Op: "delete", Path: rel, Reason: ReasonBusy, Detail: err.Error()}
	}
	defer g.releaseHandles(2 * (maxRemoveLevels + 1))
	parent, err := g.root.OpenRoot(path.Dir(rel))
	if err != nil {
		return wrap("delete", rel, err)
	}
	defer parent.Close()
	top, err := parent.OpenRoot(path.Base(rel))
	if err != nil {
		return wrap("delete", rel, err)
	}
	if now, err := top.Stat("."); err != nil || !os.SameFile(now, fi) {
		top.Close()
		return &Error{Op: "delete", Path: rel, Reason: ReasonChanged, Detail: "it was replaced while it was being deleted; nothing was deleted"}
	}
	r := &remover{g: g, rel: rel, levels: []level{{dir: top, name: path.Base(rel)}}}
	defer r.closeAll()
	return r.run(parent)
}

// remover is the state of one delete: the folders from the one being deleted down to where it is.
type remover struct {
	g      *Guard
	rel    string
	levels []level
}

// level is one open folder of a delete.
type level struct {
	dir     root
	name    string   // its name in the folder above
	list    *os.File // its listing, during a pass over it
	pending []string // names read from the listing and not yet deleted
	deleted int      // entries deleted in this pass
	barren  int      // passes in a row that deleted nothing
}

func (r *remover) run(parent root) error {
	for len(r.levels) > 0 {
		l := &r.levels[len(r.levels)-1]
		if l.list == nil {
			list, err := l.dir.Open(".")
			if err != nil {
				return wrap("delete", r.rel, err)
			}
			l.list, l.deleted = list, 0
		}
		if len(l.pending) == 0 {
			names, err := l.list.Readdirnames(removeBatch)
			if err != nil && err != io.EOF {
				return wrap("delete", r.rel, err)
			}
			if len(names) == 0 {
				// The end of a pass: the folder should be empty now. Entries the pass did not see (the listing of a
				// folder that changes may skip some, and a deeper folder moved up lands in the top one) make
				// another pass.
				l.list.Close()
				l.list = nil
				up := parent
				if len(r.levels) > 1 {
					up = r.levels[len(r.levels)-2].dir
				}
				err := up.Remove(l.name)
				switch {
				case err == nil || errors.Is(err, fs.ErrNotExist):
					l.dir.Close()
					r.levels = r.levels[:len(r.levels)-1]
				case notEmpty(err):
					if l.deleted == 0 {
						if l.barren++; l.barren >= maxBarrenPasses {
							return &Error{Op: "delete", Path: r.rel, Reason: ReasonChanged,
								Detail: "entries were created in it as fast as they were deleted; part of it may be deleted"}
						}
					} else {
						l.barren = 0
					}
				default:
					return wrap("delete", r.rel, err)
				}
				continue
			}
			l.pending = names
		}
		name := l.pending[0]
		l.pending = l.pending[1:]
		err := l.dir.Remove(name) // a file, a symlink, or a folder that is empty
		switch {
		case err == nil || errors.Is(err, fs.ErrNotExist):
			l.deleted++
			continue
		case !notEmpty(err):
			return r.failed(name, err)
		}
		// A folder with entries: go down into it, or, at the deepest level held, move it up into the top folder
		// where it is deleted in a later pass.
		l.deleted++ // it is gone from here either way
		if len(r.levels) < maxRemoveLevels {
			sub, err := l.dir.OpenRoot(name)
			if err != nil {
				return r.failed(name, err)
			}
			r.levels = append(r.levels, level{dir: sub, name: name})
			continue
		}
		names := make([]string, 0, len(r.levels))
		for _, up := range r.levels[1:] {
			names = append(names, up.name)
		}
		names = append(names, name)
		if err := r.levels[0].dir.Rename(strings.Join(names, "/"), movedPrefix+randomTempName()[len(tempPrefix):]); err != nil {
			return r.failed(name, err)
		}
	}
	return nil
}

// failed reports an entry that could not be deleted, by the path of what was being deleted (the entry's own path
// may be thousands of levels long) and the errno's text.
func (r *remover) failed(name string, err error) error {
	e := wrap("delete", r.rel, err).(*Error)
	e.Detail = strings.TrimSpace(e.Detail + " an entry in it (" + printable(name) + ") could not be deleted; part of it may be deleted")
	return e
}

func (r *remover) closeAll() {
	for _, l := range r.levels {
		if l.list != nil {
			l.list.Close()
		}
		l.dir.Close()
	}
	r.levels = nil
}
