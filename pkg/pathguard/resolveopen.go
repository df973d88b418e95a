package pathguard

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
)

// resolveOpen is resolve made from folder handles, for the operations that keep protected files (guardprotect.go).
// resolve names every prefix of the path from the workspace, which costs the kernel the sum of their depths: a
// write 2,000 folders down resolved four million names (25 s). resolveOpen follows rel one name at a time from the
// handle of the folder it has reached, so it costs a few lookups per name, and it proves each folder it enters is
// the one it looked at (lstat, open, compare device and inode), so the handle it ends on is the folder at the real
// path it returns, whatever a concurrent command swaps on the way.
//
// It returns what resolve returns — the real path (the missing tail kept as given) and the info of what is there
// (nil when it does not exist yet) — and the handle of the deepest existing folder on the real path, with that
// folder's real path; release closes the handle. Errors are resolve's.
func (g *Guard) resolveOpen(op, rel string) (real string, fi fs.FileInfo, dir root, dirPath string, release func(), err error) {
	w := &realWalk{g: g, op: op, rel: rel, cur: g.root}
	defer func() {
		if err != nil {
			w.close()
		}
	}()
	todo := splitPath(rel)
	var last fs.FileInfo
	hops := 0
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		if name == ".." {
			if len(w.done) == 0 {
				return "", nil, root{}, "", nil, &Error{Op: op, Path: rel, Reason: ReasonOutside, Detail: "a symlink on the way leads out of the workspace"}
			}
			// The handle is opened again from the workspace when a name next needs it: a run of ".." costs one
			// walk down, not one per "..".
			w.done, w.stale, last = w.done[:len(w.done)-1], true, nil
			continue
		}
		if err := w.fresh(); err != nil {
			return "", nil, root{}, "", nil, err
		}
		info, err := w.cur.Lstat(name)
		if errors.Is(err, fs.ErrNotExist) {
			if slices.Contains(todo, "..") {
				return "", nil, root{}, "", nil, wrap(op, rel, err) // the kernel would stop at the missing folder; so do we
			}
			real := path.Join(strings.Join(w.done, "/"), name, strings.Join(todo, "/"))
			return real, nil, w.cur, w.path(), w.close, nil
		}
		if err != nil {
			return "", nil, root{}, "", nil, wrap(op, rel, err)
		}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			if hops++; hops > maxLinkHops {
				return "", nil, root{}, "", nil, &Error{Op: op, Path: rel, Reason: ReasonInvalid, Detail: loopDetail}
			}
			link, err := w.cur.Readlink(name)
			if err != nil {
				return "", nil, root{}, "", nil, wrap(op, rel, err)
			}
			if link == "" || path.IsAbs(link) {
				return "", nil, root{}, "", nil, &Error{Op: op, Path: rel, Reason: ReasonOutside,
					Detail: "a symlink on the way has an absolute target; only relative symlinks that stay inside are followed"}
			}
			todo = append(splitPath(link), todo...)
		case info.IsDir():
			if err := w.enter(name, info); err != nil {
				return "", nil, root{}, "", nil, err
			}
			last = info
		default:
			if len(todo) > 0 {
				return "", nil, root{}, "", nil, wrap(op, rel, syscall.ENOTDIR)
			}
			return path.Join(w.path(), name), info, w.cur, w.path(), w.close, nil
		}
	}
	if err := w.fresh(); err != nil {
		return "", nil, root{}, "", nil, err
	}
	if last == nil {
		if last, err = w.cur.Stat("."); err != nil {
			return "", nil, root{}, "", nil, wrap(op, rel, err)
		}
	}
	return w.path(), last, w.cur, w.path(), w.close, nil
}

// folderReplaced is the detail of a refusal because a folder on the way changed between its check and its use.
const folderReplaced = "a folder on its way was replaced while it was in use; nothing was changed; try again"

// realWalk is the state of resolveOpen: the real folders entered so far and the handle of the last.
type realWalk struct {
	g       *Guard
	op, rel string
	done    []string
	cur     root
	owned   bool // cur is a handle of its own (not the workspace's), to close
	stale   bool // done was shortened by "..": cur is not its folder
}

func (w *realWalk) path() string {
	if len(w.done) == 0 {
		return "."
	}
	return strings.Join(w.done, "/")
}

func (w *realWalk) close() {
	if w.owned {
		w.cur.Close()
		w.owned = false
	}
}

// enter makes the folder name, which lstat described as info, the current one: opened from the current handle
// and proved to be the folder that was looked at.
func (w *realWalk) enter(name string, info fs.FileInfo) error {
	next, err := w.cur.OpenRoot(name)
	if err != nil {
		return wrap(w.op, w.rel, err)
	}
	if now, err := next.Stat("."); err != nil || !os.SameFile(info, now) {
		next.Close()
		return &Error{Op: w.op, Path: w.rel, Reason: ReasonChanged, Detail: folderReplaced}
	}
	w.close()
	w.cur, w.owned = next, true
	w.done = append(w.done, name)
	return nil
}

// fresh opens the current folder again from the workspace, name by name, after ".." left the handle behind.
func (w *realWalk) fresh() error {
	if !w.stale {
		return nil
	}
	names := w.done
	w.close()
	w.cur, w.done, w.stale = w.g.root, nil, false
	for _, name := range names {
		info, err := w.cur.Lstat(name)
		if err != nil {
			return wrap(w.op, w.rel, err)
		}
		if !info.IsDir() {
			return &Error{Op: w.op, Path: w.rel, Reason: ReasonChanged, Detail: folderReplaced}
		}
		if err := w.enter(name, info); err != nil {
			return err
		}
	}
	return nil
}
