package pathguard

// The two operations a command's layer needs besides those of the filesystem server (the executor's workspace
// guard, execserver/wsguard, applies a command's copy-on-write layer through them): a file of any size read from
// the layer with its own permission bits, and a symlink. Both refuse what every other operation refuses: protected
// paths at any depth and what leads to them, a file or symlink named .git, a relative symlink that leads out.

import (
	"io"
	"io/fs"
	"path"
)

// WriteFrom replaces the file at p with size bytes read from src, as WriteFile does (atomically, in the folder the
// protection check proved), with no cap on its size but the disk cap's, and perm's 0777 bits as its permission
// bits: never setuid, setgid or sticky. It reports whether the file was created. Unlike WriteFile it does not sync
// each file (a command's own writes were not synced either; a layer of 10,000 files would cost 10,000 syncs).
func (g *Guard) WriteFrom(p string, src io.Reader, size int64, perm fs.FileMode) (string, bool, error) {
	perm = perm.Perm()
	return g.writeStream(p, src, size, &perm, 0, false)
}

// Symlink makes a symlink at p whose text is link. Nothing may be at p yet: a caller replacing an entry deletes it
// first (Remove), so that the refusals of a delete apply to it too. A relative link must stay inside the workspace
// from where it is; an absolute one is allowed as it is anywhere in the workspace (a virtualenv's bin/python leads
// to /usr/bin/python3): no server follows one.
func (g *Guard) Symlink(p, link string) (string, error) {
	rel, err := g.Clean(p)
	if err != nil {
		return "", err
	}
	if rel == "." {
		return rel, &Error{Op: "symlink", Path: p, Reason: ReasonInvalid, Detail: "the workspace itself cannot be replaced"}
	}
	if link == "" || containsNUL(link) {
		return rel, &Error{Op: "symlink", Path: rel, Reason: ReasonInvalid, Detail: "a symlink's text must be a path without NUL bytes"}
	}
	if !path.IsAbs(link) && escapes(path.Join(path.Dir(rel), link)) {
		return rel, &Error{Op: "symlink", Path: rel, Reason: ReasonOutside, Detail: "this relative symlink leads out of the workspace"}
	}
	if err := g.refuseProtectedWrite("symlink", rel); err != nil {
		return rel, err
	}
	if err := g.refuseGitlink("symlink", rel, rel); err != nil {
		return rel, err
	}
	if err := g.mkdirParents("symlink", rel); err != nil {
		return rel, err
	}
	return rel, wrap("symlink", rel, g.root.Symlink(link, rel))
}

func containsNUL(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return true
		}
	}
	return false
}

// Readlink is the text of the symlink at p.
func (g *Guard) Readlink(p string) (string, error) {
	rel, err := g.Clean(p)
	if err != nil {
		return "", err
	}
	link, err := g.root.Readlink(rel)
	return link, wrap("readlink", rel, err)
}
