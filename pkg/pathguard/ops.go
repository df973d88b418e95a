package pathguard

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
)

// maxLinkHops bounds how many symlinks one path may pass through. It matches os.Root's own limit (8; the kernel
// allows 40), so a write follows exactly the chains a read follows.
const maxLinkHops = 8

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
	if reason, detail, ok := sysReason(err); ok {
		e.Reason, e.Detail = reason, detail
		return e
	}
	switch {
	case strings.Contains(err.Error(), "path escapes from parent"):
		e.Reason, e.Detail = ReasonOutside, "it, or a symlink on the way, leads out of the workspace; absolute symlinks are never followed"
	case errors.Is(err, syscall.ELOOP):
		e.Reason, e.Detail = ReasonInvalid, loopDetail
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
func (g *Guard) Stat(p string) (string, fs.FileInfo, error) { return g.stat(p, g.root.Stat) }

// Lstat describes the entry at p without following a final symlink.
func (g *Guard) Lstat(p string) (string, fs.FileInfo, error) { return g.stat(p, g.root.Lstat) }

func (g *Guard) stat(p string, stat func(string) (fs.FileInfo, error)) (string, fs.FileInfo, error) {
	rel, err := g.Clean(p)
	if err != nil {
		return "", nil, err
	}
	fi, err := stat(rel)
	return rel, fi, wrap("stat", rel, err)
}

// OpenFile opens a regular file for reading. Anything else (folder, FIFO, device, socket) is refused without
// blocking and without opening it (opening a device can have effects of its own): the type is checked before the
// open, the open is non-blocking, and the type is checked again on the opened descriptor, so a swap between check
// and open cannot slip a FIFO through.
func (g *Guard) OpenFile(p string) (string, *os.File, fs.FileInfo, error) {
	rel, err := g.Clean(p)
	if err != nil {
		return "", nil, nil, err
	}
	if namesFolder(p) {
		// As open(2) does: "a.txt/" and "a.txt/." name a folder, and a file is not one.
		return rel, nil, nil, &Error{Op: "open", Path: printable(p), Reason: ReasonNotDir,
			Detail: "a path that ends in /, /. or /.. names a folder; drop the slash to read a file"}
	}
	f, fi, err := g.open("open", rel, false)
	return rel, f, fi, err
}

// open opens the clean path rel for reading if it is a regular file, or a folder when allowDir is set.
func (g *Guard) open(op, rel string, allowDir bool) (*os.File, fs.FileInfo, error) {
	check := func(fi fs.FileInfo) error {
		switch {
		case fi.Mode().IsRegular():
			return nil
		case fi.IsDir():
			if allowDir {
				return nil
			}
			return &Error{Op: op, Path: rel, Reason: ReasonIsDir, Detail: "only regular files can be read"}
		}
		return &Error{Op: op, Path: rel, Reason: ReasonNotRegular,
			Detail: "only regular files and folders are allowed; this is a " + TypeName(fi.Mode())}
	}
	fi, err := g.root.Stat(rel)
	if err != nil {
		return nil, nil, wrap(op, rel, err)
	}
	if err := check(fi); err != nil {
		return nil, nil, err
	}
	f, err := g.root.OpenFile(rel, openReadFlags, 0)
	if err != nil {
		return nil, nil, wrap(op, rel, err)
	}
	if fi, err = f.Stat(); err == nil {
		err = check(fi)
	}
	if err != nil {
		f.Close()
		return nil, nil, wrap(op, rel, err)
	}
	return f, fi, nil
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
	// Read one byte past the cap so a file that grew after the stat is still refused, not silently cut. The buffer
	// is sized from the stat, so a file that did not change is read in one call plus the one that sees the end
	// (io.ReadAll would grow from 512 bytes, one read syscall per step).
	var buf bytes.Buffer
	buf.Grow(int(fi.Size()) + bytes.MinRead)
	if _, err := buf.ReadFrom(io.LimitReader(f, g.opts.MaxReadBytes+1)); err != nil {
		return rel, nil, wrap("read", rel, err)
	}
	data := buf.Bytes()
	if int64(len(data)) > g.opts.MaxReadBytes {
		return rel, nil, &Error{Op: "read", Path: rel, Reason: ReasonTooLarge,
			Detail: fmt.Sprintf("the limit is %d bytes", g.opts.MaxReadBytes)}
	}
	return rel, data, nil
}

// WriteFile replaces the file at p atomically: the content goes to a temporary file in the same folder, is synced,
// and is renamed over the target, so readers see the old file or the new one, never a mix. Missing parent folders
// are made. A final symlink that stays inside is followed (its target is written); an existing folder, FIFO or
// device at the target is refused. An existing file keeps its permission bits (not its owner, and not setuid,
// setgid or sticky bits); a new one gets 0644 less the umask. It reports whether the file was created.
func (g *Guard) WriteFile(p string, data []byte) (rel string, created bool, err error) {
	return g.writeStream(p, bytes.NewReader(data), int64(len(data)), nil, g.opts.MaxWriteBytes, true)
}

// writeStream is WriteFile of size bytes read from src, refused past limit bytes when limit is not 0. perm, when
// not nil, is the file's permission bits (only the 0777 ones are ever set); nil keeps an existing file's, or 0644
// for a new one. sync syncs the file before it is renamed into place.
func (g *Guard) writeStream(p string, src io.Reader, size int64, perm *fs.FileMode, limit int64, sync bool) (rel string, created bool, err error) {
	rel, err = g.Clean(p)
	if err != nil {
		return "", false, err
	}
	if rel == "." || namesFolder(p) {
		return rel, false, &Error{Op: "write", Path: printable(p), Reason: ReasonIsDir,
			Detail: "a path that ends in /, /. or /.. names a folder, and so does the workspace itself; give a file path inside the workspace"}
	}
	if limit > 0 && size > limit {
		return rel, false, &Error{Op: "write", Path: rel, Reason: ReasonTooLarge,
			Detail: fmt.Sprintf("%d bytes; the limit is %d", size, limit)}
	}
	target, fi, err := g.resolveLinks(rel)
	if err != nil {
		return rel, false, err
	}
	if err := g.refuseProtectedWrite("write", rel); err != nil {
		return rel, false, err
	}
	if err := g.refuseGitlink("write", rel, rel, target); err != nil {
		return rel, false, err
	}
	mode := fs.FileMode(0o644)
	if fi != nil {
		if fi.IsDir() {
			return rel, false, &Error{Op: "write", Path: rel, Reason: ReasonIsDir, Detail: "a folder cannot be overwritten with a file"}
		}
		if !fi.Mode().IsRegular() {
			return rel, false, &Error{Op: "write", Path: rel, Reason: ReasonNotRegular,
				Detail: "only regular files can be written; this is a " + TypeName(fi.Mode())}
		}
		// Perm is the 0777 bits only: setuid, setgid and sticky are never carried over, so no write leaves a setuid
		// file (TestWriteStripsSetuid, TestOwnershipAsRoot).
		mode = fi.Mode().Perm()
	}
	if perm != nil {
		mode = perm.Perm()
	}
	done, err := g.reserveSpace("write", rel, fi, size)
	if err != nil {
		return rel, false, err
	}
	wrote := false
	defer func() { done(wrote) }()
	if err := g.mkdirParents("write", target); err != nil {
		return rel, false, err
	}
	// The file is made and renamed in target's folder: by its path from the workspace, or, when project files are
	// protected, from a handle of that folder proved not to be a protected one (writeFolder).
	dir, prefix, closeDir, err := g.writeFolder(rel, target)
	if err != nil {
		return rel, false, err
	}
	defer closeDir()
	if err := g.writeIn(dir, prefix, path.Base(target), rel, fi, mode, perm != nil, src, size, sync); err != nil {
		return rel, false, err
	}
	wrote = true
	return rel, fi == nil, nil
}

// writeIn writes size bytes of src as the file name of the folder prefix of dir (a folder the caller checked):
// a temporary file, its owner, the permission bits mode (set explicitly when setMode, or when old, the file it
// replaces, had bits the umask may cut), the bytes, a sync when sync is set, and a rename over name. rel is the path
// errors name. Nothing is left behind when it fails.
func (g *Guard) writeIn(dir root, prefix, name, rel string, old fs.FileInfo, mode fs.FileMode, setMode bool, src io.Reader, size int64, sync bool) error {
	tmp, final := path.Join(prefix, g.tempName()), path.Join(prefix, name)
	f, err := dir.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return wrap("write", rel, err)
	}
	committed := false
	defer func() {
		if !committed {
			f.Close()
			_ = dir.Remove(tmp)
		}
	}()
	if own := g.ownerFor(old); own != nil {
		if err := f.Chown(own.uid, own.gid); err != nil {
			return wrap("write", rel, err)
		}
	}
	if setMode || (old != nil && mode&^0o644 != 0) {
		// The umask may have cut bits the old file had (group write, say); give them back.
		if err := f.Chmod(mode); err != nil {
			return wrap("write", rel, err)
		}
	}
	if n, err := copyInto(f, src, size); err != nil || n != size {
		if err == nil {
			err = fmt.Errorf("%d bytes came where %d were expected: the source changed while it was written", n, size)
		}
		return wrap("write", rel, err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			return wrap("write", rel, err)
		}
	}
	if err := f.Close(); err != nil {
		return wrap("write", rel, err)
	}
	if err := dir.Rename(tmp, final); err != nil {
		_ = dir.Remove(tmp)
		committed = true
		return wrap("write", rel, err)
	}
	committed = true
	return nil
}

// WriteTarget is the workspace-relative path WriteFile(p) writes: p itself, or where p leads when it is a symlink
// that stays inside, as the links are now.
func (g *Guard) WriteTarget(p string) (string, error) {
	rel, err := g.Clean(p)
	if err != nil {
		return "", err
	}
	target, _, err := g.resolveLinks(rel)
	return target, err
}

// resolveLinks returns the path WriteFile writes for rel and the info of what is there (nil when nothing exists
// yet). Usually that is rel itself; when rel is a symlink, it is where the symlink leads, which must stay inside.
func (g *Guard) resolveLinks(rel string) (string, fs.FileInfo, error) {
	fi, err := g.root.Lstat(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return rel, nil, nil
	}
	if err != nil {
		return "", nil, wrap("write", rel, err)
	}
	if fi.Mode()&fs.ModeSymlink == 0 {
		return rel, fi, nil
	}
	target, fi, err := g.resolve("write", rel)
	if err != nil {
		if IsReason(err, ReasonOutside) {
			return "", nil, &Error{Op: "write", Path: rel, Reason: ReasonOutside,
				Detail: "it is a symlink that leads out of the workspace; only relative symlinks that stay inside are followed"}
		}
		return "", nil, err
	}
	return target, fi, nil
}

func (g *Guard) mkdirParents(op, rel string) error {
	dir := path.Dir(rel)
	if dir == "." {
		return nil
	}
	return wrap(op, dir, g.mkdirAll(dir))
}

// MkdirAll makes a folder and its missing parents.
func (g *Guard) MkdirAll(p string) (string, error) {
	rel, err := g.Clean(p)
	if err != nil {
		return "", err
	}
	if err := g.refuseProtectedWrite("mkdir", rel); err != nil {
		return rel, err
	}
	return rel, wrap("mkdir", rel, g.mkdirAll(rel))
}

// ReadDir lists a folder's entries, sorted by name, without the temporary files of writes in progress.
func (g *Guard) ReadDir(p string) (string, []fs.DirEntry, error) {
	rel, err := g.Clean(p)
	if err != nil {
		return "", nil, err
	}
	f, fi, err := g.open("list", rel, true)
	if err != nil {
		return rel, nil, err
	}
	defer f.Close()
	if !fi.IsDir() {
		return rel, nil, &Error{Op: "list", Path: rel, Reason: ReasonNotDir}
	}
	entries, err := f.ReadDir(-1)
	if err != nil {
		return rel, nil, wrap("list", rel, err)
	}
	entries = slices.DeleteFunc(entries, func(e fs.DirEntry) bool { return IsTempName(e.Name()) })
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return rel, entries, nil
}

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
	if err := g.refuseProtectedEntry("delete", rel); err != nil {
		return rel, false, err
	}
	if fi.IsDir() && recursive {
		// Nothing is deleted unless nothing in the folder is protected: walk it first.
		if err := g.refuseProtectedTree("delete", rel, fi, "delete it with a command, or its contents in parts"); err != nil {
			return rel, false, err
		}
		err := g.removeTree(rel, fi)
		g.forgetUsage() // what a tree held is not known without walking it: the next write counts again
		if err != nil {
			return rel, false, err
		}
		return rel, true, nil
	}
	if g.opts.Protection.active() {
		// From a handle of its folder, proved to be the checked one (guardprotect.go).
		err = g.removeChecked(rel, fi)
	} else {
		err = g.root.Remove(rel)
	}
	if IsReason(err, ReasonProtected) || IsReason(err, ReasonChanged) {
		return rel, false, err
	}
	if err == nil && fi.Mode().IsRegular() {
		g.freed(fi)
	}
	if fi.IsDir() && err != nil && notEmpty(err) {
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
	// Relative symlinks are judged from the real folder they will land in: moving one, or a folder holding one,
	// must not make it lead out.
	dparent, _, err := g.resolve("move", path.Dir(rd))
	if err != nil {
		return rs, rd, err
	}
	dest := path.Join(dparent, path.Base(rd))
	// Protected paths: the source, the destination, and (below) what a folder holds, where it is and where it lands.
	if err := g.refuseProtectedEntry("move", rs); err != nil {
		return rs, rd, err
	}
	if err := g.refuseProtected("move", rd, rd, dest); err != nil {
		return rs, rd, err
	}
	if !sfi.IsDir() {
		if err := g.refuseGitlink("move", rd, rd, dest); err != nil {
			return rs, rd, err
		}
	}
	var inside *treeCheck
	if sfi.IsDir() && g.opts.Protection.active() {
		real, err := g.entryPath("move", rs)
		if err != nil {
			return rs, rd, err
		}
		inside = g.newTreeCheck("move", rs, real, dest)
	}
	if err := g.checkMovedLinks(rs, dest, sfi, inside); err != nil {
		return rs, rd, err
	}
	var replaced fs.FileInfo // a file the move replaces
	if dfi, err := g.root.Lstat(rd); err == nil {
		if !overwrite {
			return rs, rd, &Error{Op: "move", Path: rd, Reason: ReasonExists, Detail: "set overwrite to replace it"}
		}
		if dfi.IsDir() {
			return rs, rd, &Error{Op: "move", Path: rd, Reason: ReasonIsDir, Detail: "an existing folder is never replaced; delete it first"}
		}
		if dfi.Mode().IsRegular() {
			replaced = dfi
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return rs, rd, wrap("move", rd, err)
	}
	if err := g.mkdirParents("move", dest); err != nil {
		return rs, rd, err
	}
	rename := func() error { return wrap("move", rs, g.root.Rename(rs, dest)) }
	if g.opts.Protection.active() {
		// From handles of both folders, proved to be the checked ones (guardprotect.go).
		rename = func() error { return g.renameChecked(rs, rd, dest, sfi) }
	}
	if err := rename(); err != nil {
		return rs, rd, err
	}
	// A move renames: it adds no bytes to the workspace, so the disk cap never refuses one.
	g.freed(replaced)
	return rs, rd, nil
}

// checkMovedLinks refuses a move of src (a symlink, or a folder holding symlinks) to the real path dest when a
// relative symlink would then lead out of the workspace, and, with inside, a move of a folder that holds a
// protected path or would put one in place. Absolute symlinks are never followed, so they are left as they are. A
// folder is walked once, from handles (linear in its entries), within the walk caps: one too deep or too large to
// check is refused with the cap that stopped it.
func (g *Guard) checkMovedLinks(src, dest string, fi fs.FileInfo, inside *treeCheck) error {
	check := func(at, name, link string) error {
		if !path.IsAbs(link) && escapes(path.Join(path.Dir(at), link)) {
			return &Error{Op: "move", Path: name, Reason: ReasonOutside,
				Detail: "at the destination this symlink would lead out of the workspace"}
		}
		return nil
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		link, err := g.root.Readlink(src)
		if err != nil {
			return wrap("move", src, err)
		}
		return check(dest, src, link)
	case !fi.IsDir():
		return nil
	}
	err := g.Walk(context.Background(), src, WalkOptions{Unsorted: true}, func(e *Entry) error {
		if err := inside.entry(e, src); err != nil {
			return err
		}
		if e.Type&fs.ModeSymlink == 0 {
			return nil
		}
		link, err := e.Readlink()
		if err != nil {
			return err
		}
		p := e.Path()
		return check(dest+p[len(src):], p, link)
	})
	if isCap(err) {
		what := "its symlinks"
		if inside != nil {
			what = "its symlinks and protected project files"
		}
		return capRefusal("move", src, err, what+" could not all be checked", "move it with a command, or its contents in parts")
	}
	return err
}

// TypeName names a file type in a refusal: FIFO, socket, device, symlink, folder or special file.
func TypeName(m fs.FileMode) string {
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
