package pathguard

// How the guard keeps protected project files (protect.go) as they are. Every operation that changes the tree
// checks, before it changes anything, each path it would create, replace, move or delete:
//
//   - as the client spelled it, cleaned ("sub/.git/hooks/x"): git reads a folder through a symlink named .git too,
//     so the name alone protects;
//   - as the kernel will reach it, every symlink on the way followed (resolve): a write through "l" where l leads
//     to .git/config, or through "d/x" where d leads to .git/hooks, changes .git/config and .git/hooks/x; for a
//     delete or a move, which change the entry itself and never a final symlink's target, the entry's real folder
//     and its own name;
//   - for a folder that is deleted or moved whole, every entry inside it, where it is and where the move puts it:
//     deleting "sub" deletes sub/.git/config; moving a folder x holding hooks/evil to .git creates .git/hooks/evil.
//     The folder is walked first (from handles, linear in its entries) and the whole operation is refused at the
//     first protected entry, before anything is deleted or moved.
//
// Hard links need no rule of their own: a write never writes into an existing file but renames a new one over its
// name, so a hard link to .git/config made by a command is replaced by the write, and .git/config keeps its content
// (TestProtectedHardLink). Deleting or moving a hard link changes only its own name.
//
// A write is made from a handle of its folder, opened one name at a time and proved to be the very folder whose
// path was checked (writeFolder, resolveOpen), so a command that swaps a folder on the way for a symlink to .git/hooks between
// the check and the write makes the write fail, not land (TestProtectedWriteSwapRace). Deletes and moves name
// their paths from the workspace: there such a swap can still steer one operation; see docs/confinement-files.md.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
)

// refuseProtected is ProtectedError for the first of paths (clean, workspace-relative) that is protected, shown as
// the client's path rel; nil when none is, or when nothing is protected.
func (g *Guard) refuseProtected(op, rel string, paths ...string) error {
	if !g.opts.Protection.active() {
		return nil
	}
	for _, p := range paths {
		if pattern, ok := g.opts.Protection.Match(p); ok {
			e := ProtectedError(op, rel, pattern)
			if p != rel {
				e.Detail = fmt.Sprintf("it leads to %s; %s", p, e.Detail)
			}
			return e
		}
	}
	return nil
}

// refuseProtectedWrite refuses a write, or a new folder, at the clean path rel when rel, or where it leads with
// every symlink on the way followed, is protected.
func (g *Guard) refuseProtectedWrite(op, rel string) error {
	if !g.opts.Protection.active() {
		return nil
	}
	if err := g.refuseProtected(op, rel, rel); err != nil {
		return err
	}
	real, _, err := g.resolve(op, rel)
	if err != nil {
		// A path that cannot be followed (a loop, a link out) cannot be checked: refuse it, with why.
		return err
	}
	return g.refuseProtected(op, rel, real)
}

// CheckChange refuses, as the write would, a change to the file at p when p is a protected project file or leads
// to one: the edit tool asks before it reads, so that a refused edit says why rather than that old_text was not
// found. It does not touch what it checks, and says nothing about other refusals.
func (g *Guard) CheckChange(op, p string) error {
	rel, err := g.Clean(p)
	if err != nil {
		return err
	}
	if err := g.refuseGitlink(op, rel, rel); err != nil {
		return err
	}
	return g.refuseProtectedWrite(op, rel)
}

// entryPath is the real path of the entry rel names, its final symlink not followed: what a delete or a move
// changes. Folders on the way are followed as the kernel follows them.
func (g *Guard) entryPath(op, rel string) (string, error) {
	parent, _, err := g.resolve(op, path.Dir(rel))
	if err != nil {
		return "", err
	}
	return path.Join(parent, path.Base(rel)), nil
}

// folderOf opens the existing folder dir (a workspace-relative path, followed as the kernel follows it) by
// resolveOpen: its real path and a handle proved to be that folder. A folder that is not there (any more) is
// refused as changed: the callers made or saw it a moment ago.
func (g *Guard) folderOf(op, rel, dir string) (string, root, func(), error) {
	real, fi, h, hpath, release, err := g.resolveOpen(op, dir)
	if err != nil {
		return "", root{}, nil, err
	}
	if fi == nil || !fi.IsDir() || hpath != real {
		release()
		return "", root{}, nil, &Error{Op: op, Path: rel, Reason: ReasonChanged, Detail: folderReplaced}
	}
	return real, h, release, nil
}

// refuseProtectedEntry refuses a delete or a move of the entry rel (or a move onto it) when it is protected by its
// name or by its real path.
func (g *Guard) refuseProtectedEntry(op, rel string) error {
	if !g.opts.Protection.active() {
		return nil
	}
	if err := g.refuseProtected(op, rel, rel); err != nil {
		return err
	}
	real, err := g.entryPath(op, rel)
	if err != nil {
		return err
	}
	return g.refuseProtected(op, rel, real)
}

// treeCheck tells, entry by entry during a walk of a folder, whether an entry is protected at any of the places the
// operation puts it: where it is (a delete, a move's source) and where a move puts it.
type treeCheck struct {
	p     *Protection
	op    string
	rel   string     // the folder walked, as the client named it
	bases []string   // the real paths the folder's entries are under, one per place
	comps [][]string // their lower-cased components
	names []string   // lower-cased names from the walk's start down to the entry met last
	tail  []string   // scratch: the last components of one place of one entry
	k     int
}

// newTreeCheck checks the entries of the folder rel at each of the real paths bases; nil when nothing is protected.
// Each base itself must have been checked already: only the entries below it are.
func (g *Guard) newTreeCheck(op, rel string, bases ...string) *treeCheck {
	if !g.opts.Protection.active() {
		return nil
	}
	c := &treeCheck{p: g.opts.Protection, op: op, rel: rel, bases: bases, k: g.opts.Protection.maxParts()}
	for _, b := range bases {
		var parts []string
		if b != "." {
			parts = strings.Split(strings.ToLower(b), "/")
		}
		c.comps = append(c.comps, parts)
	}
	return c
}

// entry refuses e, an entry of the walk, when it is protected at one of the places; start is the walk's own path,
// as Entry.Path spells it. The walk must end at the first refusal: that no ancestor of e is protected is what lets
// the check look only at e's last few components.
func (c *treeCheck) entry(e *Entry, start string) error {
	if c == nil {
		return nil
	}
	c.names = append(c.names[:e.Depth-1], strings.ToLower(e.Name))
	for i, base := range c.comps {
		c.tail = c.tail[:0]
		if n := len(c.names); n < c.k {
			c.tail = append(c.tail, base[max(0, len(base)-(c.k-n)):]...)
		}
		c.tail = append(c.tail, c.names[max(0, len(c.names)-c.k):]...)
		pattern, ok := c.p.matchEnd(c.tail)
		if !ok {
			continue
		}
		inner := strings.TrimPrefix(e.Path(), start+"/")
		if start == "." {
			inner = e.Path()
		}
		at := path.Join(c.bases[i], inner)
		err := ProtectedError(c.op, c.rel, pattern)
		if i == 0 {
			err.Detail = fmt.Sprintf("it holds %s; %s", at, err.Detail)
		} else {
			err.Detail = fmt.Sprintf("it holds %s, which the move would put at %s; %s", path.Join(c.rel, inner), at, err.Detail)
		}
		return err
	}
	return nil
}

// refuseProtectedTree walks the folder rel, which lstat described as fi and is about to be deleted, and refuses
// when an entry in it is protected. The walk checks that it walks that very folder, and the delete (removeTree)
// that it deletes it. A tree too deep to check whole is refused with the cap that stopped the walk, and instead says what
// the client can do. (A move checks its folder in the walk that checks its symlinks: checkMovedLinks.)
func (g *Guard) refuseProtectedTree(op, rel string, fi fs.FileInfo, instead string) error {
	if !g.opts.Protection.active() {
		return nil
	}
	real, err := g.entryPath(op, rel)
	if err != nil {
		return err
	}
	c := g.newTreeCheck(op, rel, real)
	err = g.Walk(context.Background(), rel, WalkOptions{Unsorted: true, NoEntryCap: true, start: fi}, func(e *Entry) error {
		return c.entry(e, rel)
	})
	if isCap(err) {
		return capRefusal(op, rel, err, "it could not all be checked for protected project files", instead)
	}
	// Any other failure of the walk (a folder that vanished or changed under it, one that cannot be read) refuses
	// the delete too: what was not seen was not checked.
	var ge *Error
	if errors.As(err, &ge) && ge.Op == "walk" {
		c := *ge // the client asked for a delete, not a walk
		c.Op = op
		return &c
	}
	return err
}

// writeFolder is where WriteFile makes its temporary file and renames it to target: a root and the prefix of names
// in it, and what releases it. With nothing protected that is the workspace and target's folder as a path. With
// protected files it is a handle of target's folder itself (folderOf), its real path checked once more now that
// the folder exists: whatever a concurrent command swaps on the way afterwards, the write lands in the folder that
// was checked, or fails.
func (g *Guard) writeFolder(rel, target string) (dir root, prefix string, done func(), err error) {
	parent := path.Dir(target)
	if !g.opts.Protection.active() {
		return g.root, parent, func() {}, nil
	}
	real, h, release, err := g.folderOf("write", rel, parent)
	if err != nil {
		return root{}, "", nil, err
	}
	if err := g.refuseProtected("write", rel, path.Join(real, path.Base(target))); err != nil {
		release()
		return root{}, "", nil, err
	}
	return h, "", release, nil
}

// removeChecked deletes the entry rel (not a folder with entries: the recursive delete has removeTree), which lstat
// described as fi, from a handle of its real folder opened by folderOf, and only if the name still holds that
// entry: a folder on the way swapped for a symlink to .git since the check makes the delete fail, not delete
// .git/config.
func (g *Guard) removeChecked(rel string, fi fs.FileInfo) error {
	parent, dir, done, err := g.folderOf("delete", rel, path.Dir(rel))
	if err != nil {
		return err
	}
	defer done()
	real := path.Join(parent, path.Base(rel))
	if err := g.refuseProtected("delete", rel, real); err != nil {
		return err
	}
	if now, err := dir.Lstat(path.Base(real)); err != nil || !os.SameFile(now, fi) {
		return &Error{Op: "delete", Path: rel, Reason: ReasonChanged, Detail: "it, or a folder on its way, was replaced while it was being deleted; nothing was deleted"}
	}
	return dir.Remove(path.Base(real))
}

// renameChecked moves the entry rs, which lstat described as sfi, to dest (the real path of rd; its folder exists),
// from handles of both real folders opened by folderOf: in one handle when they are one folder, else with
// renameat(2) between the two (Linux). Afterwards the entry at the destination must be the one that was checked;
// when something swapped it in between, it is moved back and the move fails. Where there is no renameat between
// handles and the folders differ, the move names its paths from the workspace, as without protection.
func (g *Guard) renameChecked(rs, rd, dest string, sfi fs.FileInfo) error {
	changed := &Error{Op: "move", Path: rs, Reason: ReasonChanged,
		Detail: "it, or a folder on the way, was replaced while it was being moved; nothing was moved; try again"}
	sparent, sdir, sdone, err := g.folderOf("move", rs, path.Dir(rs))
	if err != nil {
		return err
	}
	defer sdone()
	dparent, ddir, ddone, err := g.folderOf("move", rd, path.Dir(dest))
	if err != nil {
		return err
	}
	defer ddone()
	sreal, dreal := path.Join(sparent, path.Base(rs)), path.Join(dparent, path.Base(dest))
	if err := g.refuseProtected("move", rs, sreal); err != nil {
		return err
	}
	if err := g.refuseProtected("move", rd, dreal); err != nil {
		return err
	}
	same := sparent == dparent
	if same {
		ddir = sdir
	} else if !canRenameAcross {
		return wrap("move", rs, g.root.Rename(rs, dest))
	}
	sname, dname := path.Base(sreal), path.Base(dreal)
	if now, err := sdir.Lstat(sname); err != nil || !os.SameFile(now, sfi) {
		return changed
	}
	move := func(a root, an string, b root, bn string) error {
		if same {
			return a.Rename(an, bn)
		}
		return renameAcross(a, an, b, bn)
	}
	if err := move(sdir, sname, ddir, dname); err != nil {
		return wrap("move", rs, err)
	}
	if now, err := ddir.Lstat(dname); err != nil || !os.SameFile(now, sfi) {
		_ = move(ddir, dname, sdir, sname)
		return changed
	}
	return nil
}

// refuseGitlink refuses making or replacing a file or symlink named .git (in any case) at any of names, workspace
// paths of what the operation creates, shown as rel: see gitlinkPattern.
func (g *Guard) refuseGitlink(op, rel string, names ...string) error {
	pattern := g.opts.Protection.gitlinkPattern()
	if pattern == "" {
		return nil
	}
	for _, n := range names {
		if strings.EqualFold(path.Base(n), ".git") {
			e := ProtectedError(op, rel, pattern)
			e.Detail = "a file or symlink named .git (a gitlink, \"gitdir: PATH\") makes git use PATH's hooks and config, so only a folder may be named .git; " + e.Detail
			return e
		}
	}
	return nil
}
