package fsserver

// sandbox_restore puts the workspace (or some paths of it) back as a checkpoint holds it. Every change goes through
// the guard's own operations (Remove, MkdirAll, WriteFile), so a restore is confined exactly as the other tools
// are: it never leaves the workspace, never writes through a symlink that leads out, and, once the guard is given
// the protected files, is refused by it on them; it also skips them itself. Before it writes, a path that is now a
// symlink where the checkpoint has a file or a folder is removed (the link, never its target), so the restore
// writes the path itself and not wherever a link planted since leads.
//
// What a restore cannot do: recreate symlinks (no tool creates them; a missing or changed one is reported), set
// modes (a file it recreates gets 0644 less the umask, a file it rewrites keeps its mode), or touch what checkpoints
// leave out (.git, protected files, files over the write cap), which stay as they are.

import (
	"context"
	"errors"
	"io/fs"
	"slices"

	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/pkg/protocol"
)

// restoreTo changes the workspace from cur (a scan taken just before, under the same lock) to m, within sc.
func (s *ckStore) restoreTo(ctx context.Context, g *pathguard.Guard, m, cur *manifest, sc scope) (protocol.RestoreOutput, error) {
	out := protocol.RestoreOutput{ID: m.ID, NotRestored: []protocol.NotRestored{}}
	want, have := byPath(m, sc), byPath(cur, sc)
	fail := func(p string, err error) {
		out.NotRestored = append(out.NotRestored, protocol.NotRestored{Path: p, Reason: err.Error()})
	}
	protected := func(p string) bool {
		if pat, ok := s.opts.Protection.Match(p); ok {
			fail(p, pathguard.ProtectedError("restore", p, pat))
			return true
		}
		return false
	}
	// remove deletes p (not a folder with entries) unless it is protected, and counts it or says why not.
	remove := func(p string, isDir bool) {
		if protected(p) {
			return
		}
		_, _, err := g.Remove(p, false)
		switch {
		case err == nil:
			out.Deleted++
		case isDir && pathguard.IsReason(err, pathguard.ReasonNotEmpty):
			fail(p, errors.New("the folder still holds files that checkpoints leave out (.git, protected files, files over the write cap, special files), so it was kept"))
		default:
			fail(p, err)
		}
	}
	// 1. What is now there and the checkpoint does not hold in that form: files, symlinks, special files, then
	// folders, deepest first (a folder still holding what checkpoints leave out stays, and is reported).
	var dirs []string
	for _, e := range cur.Entries {
		c := have[e.Path]
		if c == nil {
			continue
		}
		w := want[e.Path]
		switch {
		case c.Kind == kindDir:
			if w == nil || w.Kind != kindDir {
				dirs = append(dirs, c.Path)
			}
			continue
		case same(c, w):
			continue
		case c.Kind == kindFile && w != nil && w.Kind == kindFile:
			continue // rewritten in place below
		}
		remove(c.Path, false)
	}
	slices.Reverse(dirs) // sorted by path: children come after their folder
	for _, d := range dirs {
		remove(d, true)
	}
	// 2. What the checkpoint holds, in path order, so folders come before what they hold.
	for _, e := range m.Entries {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		w := want[e.Path]
		if w == nil {
			continue
		}
		c := have[w.Path]
		if same(c, w) {
			out.Unchanged++
			continue
		}
		if protected(w.Path) {
			continue
		}
		switch w.Kind {
		case kindDir:
			if err := replaceLink(g, w.Path); err != nil {
				fail(w.Path, err)
				continue
			}
			if _, err := g.MkdirAll(w.Path); err != nil {
				fail(w.Path, err)
				continue
			}
			out.Written++
		case kindSymlink:
			fail(w.Path, errors.New("a symlink to "+clip(w.Target, 200)+" in the checkpoint: restores do not create symlinks (no tool does); make it with a command if it is wanted"))
		case kindFile:
			data, err := s.blob(w.Hash)
			if err != nil {
				fail(w.Path, err)
				continue
			}
			if err := replaceLink(g, w.Path); err != nil {
				fail(w.Path, err)
				continue
			}
			if _, _, err := g.WriteFile(w.Path, data); err != nil {
				fail(w.Path, err)
				continue
			}
			out.Written++
		}
	}
	return out, nil
}

// replaceLink removes a symlink at p (the link itself), so that what comes next makes p and does not follow it.
// Anything else at p is left to the write or mkdir that follows, which refuses what it cannot replace.
func replaceLink(g *pathguard.Guard, p string) error {
	_, fi, err := g.Lstat(p)
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return nil
	}
	_, _, err = g.Remove(p, false)
	return err
}
