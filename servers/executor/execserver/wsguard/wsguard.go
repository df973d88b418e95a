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
	"time"

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
	// unchanged are the regular files the last apply found identical in the layer and the workspace, with both
	// files' stat stamps then: a file whose two stamps are the same now is skipped without reading either (see
	// stamp), which is what keeps the apply of a running `npm install` every ApplyEvery from rereading all of it.
	unchanged map[string][2]stamp
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
	a := &apply{g: s.w.g, raw: s.w.raw, layer: r, present: map[string]bool{},
		wasUnchanged: s.unchanged, unchanged: map[string][2]stamp{}, start: time.Now()}
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
	s.present, s.unchanged = a.present, a.unchanged
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
	// wasUnchanged is the session's unchanged of the apply before, unchanged this one's; start is when it began.
	wasUnchanged, unchanged map[string][2]stamp
	start                   time.Time
	refused                 []protocol.WorkspaceRefusal
	more                    int
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
		var names []string
		names, err = f.Readdirnames(-1)
		opaque := isOpaque(f)
		f.Close()
		if err == nil {
			a.entries(rel, names, opaque)
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

// entries applies the entries names of the layer's folder rel, from the pair of folders opened once for them (here).
func (a *apply) entries(rel string, names []string, opaque bool) {
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
	h := &here{a: a, rel: rel}
	defer h.close()
	for _, name := range names {
		a.entry(h, name)
	}
}

// entry applies the entry name of the layer's folder h.
func (a *apply) entry(h *here, name string) {
	rel := path.Join(h.rel, name)
	fi, err := h.layerLstat(name)
	if err != nil {
		a.refuse(rel, err)
		return
	}
	if h.otherLayerMarks(name) {
		a.refuse(rel, errors.New("the layer holds an overlay redirect or metacopy, which the guard does not follow"))
		return
	}
	old, err := h.wsLstat(name)
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
		h.close() // the subfolder opens its own pair: the descriptors an apply holds stay few whatever the depth
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
		both, settled := [2]stamp{stampOf(fi), stampOf(old)}, false
		if old != nil && old.Mode().IsRegular() {
			settled = both[0].settled(a.start) && both[1].settled(a.start)
			if settled && a.wasUnchanged[rel] == both {
				a.unchanged[rel] = both
				return
			}
		}
		src, err := h.openLayerFile(name)
		if err != nil {
			a.refuse(rel, err)
			return
		}
		defer src.Close()
		if old != nil && old.Mode().IsRegular() && old.Mode().Perm() == m.Perm() && old.Size() == fi.Size() && a.same(rel, src, fi.Size()) {
			if settled {
				a.unchanged[rel] = both
			}
			return
		}
		if old != nil && !old.Mode().IsRegular() {
			if !a.remove(rel) {
				return
			}
			old = nil
		}
		if ws := h.wsFolder(); ws != nil {
			if _, err := ws.WriteFrom(name, old, src, fi.Size(), m.Perm()); !errors.Is(err, pathguard.ErrNotFast) {
				if err != nil {
					a.refuse(rel, err)
				}
				return
			}
		}
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
		link, err := h.layerReadlink(name)
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

// same reports whether the workspace's file rel has the bytes of the layer's file lf, size bytes by the layer's
// stat, which it reads from its start and leaves at its start (the caller compared sizes): a file the command only
// opened for writing, or rewrote unchanged, is left alone.
func (a *apply) same(rel string, lf *os.File, size int64) bool {
	defer lf.Seek(0, io.SeekStart)
	_, wf, _, err := a.g.OpenFile(rel)
	if err != nil {
		return false
	}
	defer wf.Close()
	n := min(max(size, 0), 64<<10) + 1 // a buffer the file's size: clearing two of 64 KiB for each small file was most of a compare's CPU
	b1, b2 := make([]byte, n), make([]byte, n)
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
