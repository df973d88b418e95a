package pathguard

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
)

// maxLinkHops bounds how many symlinks are followed while resolving a write target, as the kernel does (ELOOP).
const maxLinkHops = 40

// tempPrefix marks the temporary files of atomic writes; listings hide them.
const tempPrefix = ".goalbox-tmp-"

// IsTempName reports whether a file name is an atomic write's temporary file.
func IsTempName(name string) bool { return strings.HasPrefix(name, tempPrefix) }

func randomTempName() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return tempPrefix + hex.EncodeToString(b[:])
}

// wrap turns an error from os.Root into an *Error that names only the workspace-relative path.
func wrap(op, rel string, err error) error {
	if err == nil {
		return nil
	}
	var ge *Error
	if errors.As(err, &ge) {
		return err
	}
	e := &Error{Op: op, Path: rel}
	switch {
	case strings.Contains(err.Error(), "path escapes from parent"):
		e.Reason, e.Detail = ReasonOutside, "it, or a symlink on the way, leads out of the workspace"
	case errors.Is(err, syscall.ELOOP):
		e.Reason, e.Detail = ReasonOutside, "too many levels of symlinks"
	case errors.Is(err, fs.ErrNotExist):
		e.Reason = ReasonNotFound
	case errors.Is(err, fs.ErrExist):
		e.Reason = ReasonExists
	case errors.Is(err, syscall.ENOTDIR):
		e.Reason, e.Detail = ReasonNotDir, "a parent of this path is not a folder"
	case errors.Is(err, syscall.EISDIR):
		e.Reason = ReasonIsDir
	case errors.Is(err, syscall.ENOTEMPTY):
		e.Reason = ReasonNotEmpty
	case errors.Is(err, syscall.ENAMETOOLONG):
		e.Reason, e.Detail = ReasonInvalid, "name too long"
	default:
		// Keep the errno text ("permission denied", "no space left on device") but never the PathError's path.
		var pe *fs.PathError
		var le *os.LinkError
		switch {
		case errors.As(err, &pe):
			e.Reason = pe.Err.Error()
		case errors.As(err, &le):
			e.Reason = le.Err.Error()
		default:
			e.Reason = err.Error()
		}
	}
	return e
}

// Stat describes the file or folder at p, following symlinks that stay inside.
func (g *Guard) Stat(p string) (string, fs.FileInfo, error) {
	rel, err := g.Clean(p)
	if err != nil {
		return "", nil, err
	}
	fi, err := g.root.Stat(rel)
	return rel, fi, wrap("stat", rel, err)
}

// Lstat describes the entry at p without following a final symlink.
func (g *Guard) Lstat(p string) (string, fs.FileInfo, error) {
	rel, err := g.Clean(p)
	if err != nil {
		return "", nil, err
	}
	fi, err := g.root.Lstat(rel)
	return rel, fi, wrap("stat", rel, err)
}

// OpenFile opens a regular file for reading. Anything else (folder, FIFO, device, socket) is refused without
// blocking: the open is non-blocking and the type is checked on the opened descriptor, so a swap between check and
// open cannot slip a FIFO through.
func (g *Guard) OpenFile(p string) (string, *os.File, fs.FileInfo, error) {
	rel, err := g.Clean(p)
	if err != nil {
		return "", nil, nil, err
	}
	f, err := g.root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return rel, nil, nil, wrap("open", rel, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return rel, nil, nil, wrap("open", rel, err)
	}
	if fi.IsDir() {
		f.Close()
		return rel, nil, nil, &Error{Op: "open", Path: rel, Reason: ReasonIsDir, Detail: "only regular files can be read"}
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return rel, nil, nil, &Error{Op: "open", Path: rel, Reason: ReasonNotRegular,
			Detail: "only regular files and folders are allowed; this is a " + typeName(fi.Mode())}
	}
	return rel, f, fi, nil
}

// ReadFile reads a whole regular file, refusing files over the read cap.
func (g *Guard) ReadFile(p string) (string, []byte, error) {
	rel, f, fi, err := g.OpenFile(p)
	if err != nil {
		return rel, nil, err
	}
	defer f.Close()
	if fi.Size() > g.opts.MaxReadBytes {
		return rel, nil, &Error{Op: "read", Path: rel, Reason: ReasonTooLarge,
			Detail: fmt.Sprintf("%d bytes; the limit is %d", fi.Size(), g.opts.MaxReadBytes)}
	}
	// Read one byte past the cap so a file that grew after the stat is still refused, not silently cut.
	data, err := io.ReadAll(io.LimitReader(f, g.opts.MaxReadBytes+1))
	if err != nil {
		return rel, nil, wrap("read", rel, err)
	}
	if int64(len(data)) > g.opts.MaxReadBytes {
		return rel, nil, &Error{Op: "read", Path: rel, Reason: ReasonTooLarge,
			Detail: fmt.Sprintf("the limit is %d bytes", g.opts.MaxReadBytes)}
	}
	return rel, data, nil
}

// WriteFile replaces the file at p atomically: the content goes to a temporary file in the same folder, is synced,
// and is renamed over the target, so readers see the old file or the new one, never a mix. Missing parent folders
// are made. A final symlink that stays inside is followed (its target is written); an existing folder, FIFO or
// device at the target is refused. It reports whether the file was created.
func (g *Guard) WriteFile(p string, data []byte) (rel string, created bool, err error) {
	rel, err = g.Clean(p)
	if err != nil {
		return "", false, err
	}
	if rel == "." {
		return rel, false, &Error{Op: "write", Path: p, Reason: ReasonIsDir, Detail: "give a file path inside the workspace"}
	}
	if int64(len(data)) > g.opts.MaxWriteBytes {
		return rel, false, &Error{Op: "write", Path: rel, Reason: ReasonTooLarge,
			Detail: fmt.Sprintf("%d bytes; the limit is %d", len(data), g.opts.MaxWriteBytes)}
	}
	target, fi, err := g.resolveLinks(rel)
	if err != nil {
		return rel, false, err
	}
	mode := fs.FileMode(0o644)
	if fi != nil {
		if fi.IsDir() {
			return rel, false, &Error{Op: "write", Path: rel, Reason: ReasonIsDir, Detail: "a folder cannot be overwritten with a file"}
		}
		if !fi.Mode().IsRegular() {
			return rel, false, &Error{Op: "write", Path: rel, Reason: ReasonNotRegular,
				Detail: "only regular files can be written; this is a " + typeName(fi.Mode())}
		}
		mode = fi.Mode().Perm()
	}
	if err := g.mkdirParents("write", target); err != nil {
		return rel, false, err
	}
	tmp := path.Join(path.Dir(target), g.tempName())
	f, err := g.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return rel, false, wrap("write", rel, err)
	}
	committed := false
	defer func() {
		if !committed {
			f.Close()
			_ = g.root.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return rel, false, wrap("write", rel, err)
	}
	if err := f.Sync(); err != nil {
		return rel, false, wrap("write", rel, err)
	}
	if err := f.Close(); err != nil {
		return rel, false, wrap("write", rel, err)
	}
	if err := g.root.Rename(tmp, target); err != nil {
		_ = g.root.Remove(tmp)
		committed = true
		return rel, false, wrap("write", rel, err)
	}
	committed = true
	return rel, fi == nil, nil
}

// resolveLinks follows symlinks at the final component of rel while they stay inside the workspace, returning the
// path to write and its info (nil when nothing exists there yet).
func (g *Guard) resolveLinks(rel string) (string, fs.FileInfo, error) {
	cur := rel
	for range maxLinkHops {
		fi, err := g.root.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			return cur, nil, nil
		}
		if err != nil {
			return "", nil, wrap("write", rel, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			return cur, fi, nil
		}
		link, err := g.root.Readlink(cur)
		if err != nil {
			return "", nil, wrap("write", rel, err)
		}
		next, err := g.linkTarget(cur, link)
		if err != nil {
			return "", nil, &Error{Op: "write", Path: rel, Reason: ReasonOutside, Detail: "it is a symlink that leads out of the workspace"}
		}
		cur = next
	}
	return "", nil, &Error{Op: "write", Path: rel, Reason: ReasonOutside, Detail: "too many levels of symlinks"}
}

// linkTarget is the workspace-relative path a symlink at rel with the given target names, or an error when it would
// lead out. Absolute targets count only under the advertised root or the workspace's real path.
func (g *Guard) linkTarget(rel, target string) (string, error) {
	if target == "" || strings.IndexByte(target, 0) >= 0 {
		return "", &Error{Path: rel, Reason: ReasonInvalid, Detail: "empty or NUL in symlink target"}
	}
	if path.IsAbs(target) {
		r, ok := g.underRoot(target)
		if !ok {
			return "", &Error{Path: rel, Reason: ReasonOutside}
		}
		return r, nil
	}
	return g.Clean(path.Join(path.Dir(rel), target))
}

func (g *Guard) mkdirParents(op, rel string) error {
	dir := path.Dir(rel)
	if dir == "." {
		return nil
	}
	return wrap(op, dir, g.root.MkdirAll(dir, 0o755))
}

// MkdirAll makes a folder and its missing parents.
func (g *Guard) MkdirAll(p string) (string, error) {
	rel, err := g.Clean(p)
	if err != nil {
		return "", err
	}
	return rel, wrap("mkdir", rel, g.root.MkdirAll(rel, 0o755))
}

// ReadDir lists a folder's entries, sorted by name.
func (g *Guard) ReadDir(p string) (string, []fs.DirEntry, error) {
	rel, err := g.Clean(p)
	if err != nil {
		return "", nil, err
	}
	entries, err := fs.ReadDir(g.root.FS(), rel)
	return rel, entries, wrap("list", rel, err)
}

// FS is the workspace as an fs.FS for walking; it refuses escapes like every other operation.
func (g *Guard) FS() fs.FS { return g.root.FS() }

// Remove deletes a file, a symlink (not its target) or a folder; a non-empty folder only when recursive. The
// workspace itself cannot be removed. It reports false when nothing was there.
func (g *Guard) Remove(p string, recursive bool) (string, bool, error) {
	rel, err := g.Clean(p)
	if err != nil {
		return "", false, err
	}
	if rel == "." {
		return rel, false, &Error{Op: "delete", Path: p, Reason: ReasonInvalid, Detail: "the workspace itself cannot be deleted"}
	}
	fi, err := g.root.Lstat(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return rel, false, nil
	}
	if err != nil {
		return rel, false, wrap("delete", rel, err)
	}
	if fi.IsDir() && recursive {
		return rel, true, wrap("delete", rel, g.root.RemoveAll(rel))
	}
	err = g.root.Remove(rel)
	if fi.IsDir() && err != nil && (errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST)) {
		return rel, false, &Error{Op: "delete", Path: rel, Reason: ReasonNotEmpty, Detail: "set recursive to delete a folder and everything in it"}
	}
	return rel, err == nil, wrap("delete", rel, err)
}

// Rename moves src to dst inside the workspace, making dst's parents. An existing dst is replaced only when
// overwrite is set and it is not a folder. Moving a symlink where its relative target would lead out is refused.
func (g *Guard) Rename(src, dst string, overwrite bool) (string, string, error) {
	rs, err := g.Clean(src)
	if err != nil {
		return "", "", err
	}
	rd, err := g.Clean(dst)
	if err != nil {
		return rs, "", err
	}
	if rs == "." || rd == "." {
		return rs, rd, &Error{Op: "move", Path: rs, Reason: ReasonInvalid, Detail: "the workspace itself cannot be moved or replaced"}
	}
	sfi, err := g.root.Lstat(rs)
	if err != nil {
		return rs, rd, wrap("move", rs, err)
	}
	if sfi.IsDir() && (rd == rs || strings.HasPrefix(rd, rs+"/")) {
		return rs, rd, &Error{Op: "move", Path: rd, Reason: ReasonInvalid, Detail: "a folder cannot be moved into itself"}
	}
	if sfi.Mode()&fs.ModeSymlink != 0 {
		link, err := g.root.Readlink(rs)
		if err != nil {
			return rs, rd, wrap("move", rs, err)
		}
		if !path.IsAbs(link) {
			if _, err := g.linkTarget(rd, link); err != nil {
				return rs, rd, &Error{Op: "move", Path: rs, Reason: ReasonOutside, Detail: "at the destination this symlink would lead out of the workspace"}
			}
		}
	}
	if dfi, err := g.root.Lstat(rd); err == nil {
		if !overwrite {
			return rs, rd, &Error{Op: "move", Path: rd, Reason: ReasonExists, Detail: "set overwrite to replace it"}
		}
		if dfi.IsDir() {
			return rs, rd, &Error{Op: "move", Path: rd, Reason: ReasonIsDir, Detail: "an existing folder is never replaced; delete it first"}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return rs, rd, wrap("move", rd, err)
	}
	if err := g.mkdirParents("move", rd); err != nil {
		return rs, rd, err
	}
	return rs, rd, wrap("move", rs, g.root.Rename(rs, rd))
}

// Symlink creates a symlink at link pointing to target, refusing a target that leads out of the workspace.
// Absolute targets under the workspace are stored relative to the link, since os.Root never follows absolute links.
func (g *Guard) Symlink(target, link string) (string, error) {
	rel, err := g.Clean(link)
	if err != nil {
		return "", err
	}
	dest, err := g.linkTarget(rel, target)
	if err != nil {
		return rel, &Error{Op: "symlink", Path: rel, Reason: ReasonOutside, Detail: "its target must stay inside the workspace"}
	}
	stored := target
	if path.IsAbs(target) {
		stored = relativeTo(path.Dir(rel), dest)
	}
	if err := g.mkdirParents("symlink", rel); err != nil {
		return rel, err
	}
	return rel, wrap("symlink", rel, g.root.Symlink(stored, rel))
}

// relativeTo is the relative path from folder dir to target, both workspace-relative and clean.
func relativeTo(dir, target string) string {
	split := func(p string) []string {
		if p == "." {
			return nil
		}
		return strings.Split(p, "/")
	}
	d, t := split(dir), split(target)
	i := 0
	for i < len(d) && i < len(t) && d[i] == t[i] {
		i++
	}
	parts := make([]string, 0, len(d)-i+len(t)-i)
	for range d[i:] {
		parts = append(parts, "..")
	}
	parts = append(parts, t[i:]...)
	if len(parts) == 0 {
		return "."
	}
	return strings.Join(parts, "/")
}

func typeName(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "FIFO"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m.IsDir():
		return "folder"
	}
	return "special file"
}
