// Package wsguard applies a command's changes to the workspace. A backend that gives each command a copy-on-write
// layer of the workspace (an overlay whose upper layer the executor owns: the local backend's namespace mode) never
// lets the command write the workspace itself; when the command ends, and while it runs, the executor — never the
// command — applies the layer's upper folder to the workspace through pkg/pathguard, with the rules of the
// filesystem server:
//
//   - a protected path at any depth (pathguard.Protection) is neither created, changed nor deleted, and neither is
//     a folder that holds one, whatever the command renamed: the layer says what is at each path now, so a renamed
//     .git is a new folder plus a deletion, each judged by its path (`mv .git .git-old && mv .git2 .git` plants no
//     .git/config, and deletes no .git);
//   - only regular files, folders and symlinks land; a relative symlink that leads out does not; no set-id bit,
//     ACL, extended attribute, device or FIFO is ever applied;
//   - the overlay's whiteouts become deletions, its opaque folders deletions of what the workspace has there and
//     the layer does not.
//
// Each refusal is a pathguard refusal, and leaves the workspace as it was at that path; the command's result names
// each one (protocol.WorkspaceRefusal). Nothing else is reported only in the log. The package knows nothing of
// mounts or backends: it reads a folder laid out as an overlayfs upper layer (kernel documentation,
// filesystems/overlayfs: a whiteout is a character device 0/0, an opaque folder has the xattr overlay.opaque "y",
// here with the user. prefix of a user namespace's overlay).
package wsguard

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/pkg/protocol"
)

// MaxRefusals is how many refusals one apply lists by path; past them one more entry counts the rest.
const MaxRefusals = 100

// MaxTreeEntries is the walk cap of the guard that applies: a command's `rm -rf node_modules` deletes a folder of
// some 100,000 entries, each checked for protected paths before anything is deleted (past the cap the delete is
// refused, not half done).
const MaxTreeEntries = 2_000_000

// Guard applies layers to one workspace, one at a time: two commands that end together apply in turn, and the later
// one's version of a path they both changed is the one the workspace keeps.
type Guard struct {
	g *pathguard.Guard
	// raw is the workspace without protection: it writes only what `git init` makes among the protected paths
	// where nothing was (HarmlessNew), after g refused it.
	raw *pathguard.Guard
	mu  sync.Mutex
}

// New opens the guard that applies layers to the workspace dir with the protected paths prot.
func New(dir string, prot *pathguard.Protection) (*Guard, error) {
	g, err := pathguard.Open(dir, pathguard.Options{Protection: prot, MaxTreeEntries: MaxTreeEntries})
	if err != nil {
		return nil, err
	}
	raw, err := pathguard.Open(dir, pathguard.Options{MaxTreeEntries: MaxTreeEntries})
	if err != nil {
		g.Close()
		return nil, err
	}
	return &Guard{g: g, raw: raw}, nil
}

// Close releases the workspace.
func (w *Guard) Close() error { w.raw.Close(); return w.g.Close() }

// Session applies one command's layer, as often as the backend asks: when the command ends, and every few seconds
// while it runs.
type Session struct {
	w *Guard
	// present are the paths the layer held at the last apply (whiteouts aside): one gone since was made and
	// removed again by the command after that apply put it in the workspace, so this apply removes it there too.
	present map[string]bool
}

// Session starts applying one command's layer.
func (w *Guard) Session() *Session { return &Session{w: w} }

// Apply applies the upper layer at the folder upper to the workspace, and returns what it refused. What is already
// in place is left alone.
func (s *Session) Apply(upper string) []protocol.WorkspaceRefusal {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	r, err := os.OpenRoot(upper)
	if err != nil {
		return []protocol.WorkspaceRefusal{{Path: ".", Reason: "the command's changes could not be read, and none was applied: " + err.Error()}}
	}
	defer r.Close()
	a := &apply{g: s.w.g, raw: s.w.raw, layer: r, present: map[string]bool{}}
	a.folder(".")
	// Deepest first, so a folder's entries go before it.
	gone := slices.SortedFunc(maps.Keys(s.present), func(x, y string) int { return strings.Compare(y, x) })
	for _, p := range gone {
		if !a.present[p] && !a.underUnread(p) {
			if _, _, err := a.g.Lstat(p); err == nil {
				a.remove(p)
			}
		}
	}
	s.present = a.present
	if a.more > 0 {
		a.refused = append(a.refused, protocol.WorkspaceRefusal{Reason: fmt.Sprintf("%d more changes were refused", a.more)})
	}
	return a.refused
}

// apply is one application of a layer.
type apply struct {
	g, raw  *pathguard.Guard
	layer   *os.Root
	present map[string]bool
	unread  []string // folders of the layer that could not be read: what was applied of them before stays
	refused []protocol.WorkspaceRefusal
	more    int
}

func (a *apply) refuse(rel string, err error) {
	if len(a.refused) >= MaxRefusals {
		a.more++
		return
	}
	reason := err.Error()
	var pe *pathguard.Error
	if errors.As(err, &pe) {
		reason = pe.Reason
		if pe.Reason != pathguard.ReasonProtected && pe.Detail != "" {
			reason += ": " + pe.Detail
		}
	}
	a.refused = append(a.refused, protocol.WorkspaceRefusal{Path: rel, Reason: reason})
}

// folder applies the layer's folder rel: the workspace's entries it hides (an opaque folder) go, then each of its
// entries is applied, in name order.
func (a *apply) folder(rel string) {
	f, err := a.layer.Open(rel)
	if err == nil {
		var entries []fs.DirEntry
		entries, err = f.ReadDir(-1)
		opaque := isOpaque(f)
		f.Close()
		if err == nil {
			a.entries(rel, entries, opaque)
			return
		}
	}
	a.unread = append(a.unread, rel)
	a.refuse(rel, err)
}

// underUnread reports whether p is inside a folder of the layer this apply could not read.
func (a *apply) underUnread(p string) bool {
	for _, u := range a.unread {
		if u == "." || p == u || strings.HasPrefix(p, u+"/") {
			return true
		}
	}
	return false
}

// entries applies the entries of the layer's folder rel.
func (a *apply) entries(rel string, entries []fs.DirEntry, opaque bool) {
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	if opaque && rel != "." {
		if _, ws, err := a.g.ReadDir(rel); err == nil {
			for _, e := range ws {
				if _, found := slices.BinarySearch(names, e.Name()); !found {
					a.remove(path.Join(rel, e.Name()))
				}
			}
		}
	}
	for _, name := range names {
		a.entry(path.Join(rel, name))
	}
}

// entry applies one entry of the layer.
func (a *apply) entry(rel string) {
	fi, err := a.layer.Lstat(rel)
	if err != nil {
		a.refuse(rel, err)
		return
	}
	if otherLayerMarks(a.layer, rel) {
		a.refuse(rel, errors.New("the layer holds an overlay redirect or metacopy, which the guard does not follow"))
		return
	}
	_, old, err := a.g.Lstat(rel)
	if err != nil {
		old = nil // nothing there (or nothing readable: what follows refuses then)
	}
	m := fi.Mode()
	if !isWhiteout(fi) {
		a.present[rel] = true
	}
	switch {
	case isWhiteout(fi):
		if old != nil {
			a.remove(rel)
		}
	case m.IsDir():
		if old != nil && !old.IsDir() {
			if !a.remove(rel) {
				return
			}
		}
		if old == nil || !old.IsDir() {
			if _, err := a.g.MkdirAll(rel); err != nil && !a.harmless(rel, m, err, func() error { _, err := a.raw.MkdirAll(rel); return err }) {
				a.refuse(rel, err)
				return
			}
		}
		a.folder(rel)
	case m.IsRegular():
		if m&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
			a.refuse(rel, errors.New("a set-user-ID or set-group-ID file is never applied to the workspace"))
			return
		}
		if old != nil && old.Mode().IsRegular() && old.Mode().Perm() == m.Perm() && old.Size() == fi.Size() && a.same(rel) {
			return
		}
		if old != nil && !old.Mode().IsRegular() && !a.remove(rel) {
			return
		}
		src, err := a.layer.Open(rel)
		if err != nil {
			a.refuse(rel, err)
			return
		}
		defer src.Close()
		if _, _, err := a.g.WriteFrom(rel, src, fi.Size(), m.Perm()); err != nil && !a.harmless(rel, m, err, func() error {
			if _, err := src.Seek(0, io.SeekStart); err != nil {
				return err
			}
			_, _, err := a.raw.WriteFrom(rel, src, fi.Size(), m.Perm())
			return err
		}) {
			a.refuse(rel, err)
		}
	case m&fs.ModeSymlink != 0:
		link, err := a.layer.Readlink(rel)
		if err != nil {
			a.refuse(rel, err)
			return
		}
		if old != nil && old.Mode()&fs.ModeSymlink != 0 {
			if cur, err := a.g.Readlink(rel); err == nil && cur == link {
				return
			}
		}
		if old != nil && !a.remove(rel) {
			return
		}
		if _, err := a.g.Symlink(rel, link); err != nil {
			a.refuse(rel, err)
		}
	default:
		a.refuse(rel, fmt.Errorf("a %s is never applied to the workspace: only regular files, folders and symlinks are", pathguard.TypeName(m)))
	}
}

// harmless makes, by do, a protected path g refused (err) when nothing is there and it is what `git init` makes
// (HarmlessNew), and reports whether it did.
func (a *apply) harmless(rel string, m fs.FileMode, err error, do func() error) bool {
	if !pathguard.IsReason(err, pathguard.ReasonProtected) {
		return false
	}
	if _, _, lerr := a.raw.Lstat(rel); lerr == nil {
		return false // something is there: only new paths may be harmless
	}
	if !HarmlessNew(rel, m, func() ([]byte, error) { return a.layer.ReadFile(rel) }) {
		return false
	}
	return do() == nil
}

// remove deletes rel from the workspace (a folder with everything in it), and reports whether it is gone.
func (a *apply) remove(rel string) bool {
	if _, _, err := a.g.Remove(rel, true); err != nil {
		a.refuse(rel, err)
		return false
	}
	return true
}

// same reports whether the workspace's file rel has the layer's bytes (the caller compared sizes): a file the
// command only opened for writing, or rewrote unchanged, is left alone.
func (a *apply) same(rel string) bool {
	lf, err := a.layer.Open(rel)
	if err != nil {
		return false
	}
	defer lf.Close()
	_, wf, _, err := a.g.OpenFile(rel)
	if err != nil {
		return false
	}
	defer wf.Close()
	b1, b2 := make([]byte, 64<<10), make([]byte, 64<<10)
	for {
		n1, err1 := io.ReadFull(lf, b1)
		n2, err2 := io.ReadFull(wf, b2)
		if n1 != n2 || !bytes.Equal(b1[:n1], b2[:n2]) {
			return false
		}
		if err1 != nil || err2 != nil {
			return (err1 == io.EOF || err1 == io.ErrUnexpectedEOF) && (err2 == io.EOF || err2 == io.ErrUnexpectedEOF)
		}
	}
}

// Note is what a command whose changes were refused finds at the end of its stderr, beside its result's
// workspace_refused: a model that reads only the output learns it too.
func Note(refused []protocol.WorkspaceRefusal) string {
	var b strings.Builder
	b.WriteString("\n[goalbox: these changes of the command were not applied to the workspace, which keeps what it had there:")
	for _, r := range refused {
		if r.Path != "" {
			fmt.Fprintf(&b, " %s (%s);", r.Path, r.Reason)
		} else {
			fmt.Fprintf(&b, " %s;", r.Reason)
		}
	}
	b.WriteString(" protected project files (git hooks and config, editor and agent settings, .envrc) run code on the host, so commands may read them but not create, change, move or delete them; the server's -protect and -unprotect set the list]\n")
	return b.String()
}
