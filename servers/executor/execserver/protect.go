package execserver

// Protected project files, on the executor's side. The workspace is a person's project: its git hooks and config,
// editor and agent settings and .envrc run code on the host later, outside every sandbox (pathguard.Protection
// lists them). Two layers keep commands from planting such code:
//
//  1. Before each command the server finds the protected paths present in the workspace and hands them to the
//     backend (Request.Protected), which makes each one read-only in the command's view where it can (a read-only
//     bind mount: the kernel refuses every write, rename and delete, EROFS or EBUSY).
//  2. After each command and process the server sweeps: a protected path that appeared while it ran is moved out
//     of the workspace into the quarantine (kept, not lost), except what `git init` makes and git never runs (the
//     *.sample hooks, a config of plain settings); where the backend could not make them read-only, a protected
//     file that changed or vanished is put back as it was, its new version quarantined.
//
// A sweep cannot tell a command's change from one the person made on the host at the same time: a protected file
// created or changed on the host while a command runs is treated as the command's (and found in the quarantine).

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver/internal/diskcap"
	"github.com/goalbox/goalbox/servers/executor/execserver/wsguard"
)

// Bounds of the protector's work and memory.
const (
	// protectMaxEntries bounds one cached scan of the workspace (Config.ProtectScanEntries): past it, the scan walks
	// the workspace again without a cache. It matches pathguard's default walk cap.
	protectMaxEntries = pathguard.DefaultMaxTreeEntries
	// protectKeepBytes is the most content kept of one protected file, and protectKeepTotal of all, to put back
	// what a backend that cannot enforce let a command change.
	protectKeepBytes = 1 << 20
	protectKeepTotal = 16 << 20
	// protectQuarantineBytes bounds what the quarantine keeps, all sweeps together.
	protectQuarantineBytes = 256 << 20
)

// protector scans and sweeps one workspace.
type protector struct {
	prot       *pathguard.Protection
	guard      *pathguard.Guard // the workspace without protection: the sweeper's own, symlink-safe access
	dir        string           // the workspace's real path, walked
	quarantine string           // where what a sweep removes is kept
	maxEntries int              // the cached scan's bound (protectMaxEntries unless the config lowers it)
	enforced   bool             // the backend makes Request.Protected read-only
	logger     *slog.Logger
	seq        atomic.Int64
	mu         sync.Mutex // one sweep at a time
	scanMu     sync.Mutex // one scan at a time, over dirs
	dirs       map[string]cachedDir
	gitlinks   bool // git's config or hooks are protected, so a .git file or link is too
}

// protectedEntry is what a scan saw of one protected path.
type protectedEntry struct {
	mode    fs.FileMode
	size    int64
	mtime   time.Time
	content []byte // a regular file's bytes, when the backend does not enforce and the file is small enough
	link    bool
}

func (a protectedEntry) same(b protectedEntry) bool {
	return a.mode == b.mode && a.size == b.size && a.mtime.Equal(b.mtime)
}

// protectedScan is the protected paths of the workspace at one moment.
type protectedScan struct {
	entries   map[string]protectedEntry
	outermost []string // those not inside another: what a backend makes read-only
}

func newProtector(prot *pathguard.Protection, guard *pathguard.Guard, quarantine string, maxEntries int, enforced bool, logger *slog.Logger) (*protector, error) {
	g, err := pathguard.Open(guard.Dir(), pathguard.Options{AdvertisedRoot: guard.AdvertisedRoot()})
	if err != nil {
		return nil, err
	}
	_, cfg := prot.Match(".git/config")
	_, hooks := prot.Match(".git/hooks")
	return &protector{prot: prot, guard: g, dir: guard.Dir(), quarantine: cmp.Or(quarantine, defaultQuarantine(guard.Dir())), maxEntries: maxEntries, enforced: enforced, logger: logger,
		dirs: map[string]cachedDir{}, gitlinks: cfg || hooks}, nil
}

// defaultQuarantine is a folder of the server's user, outside the workspace, one per workspace.
func defaultQuarantine(workspace string) string {
	sum := sha256.Sum256([]byte(workspace))
	base := "/var/cache/goalbox-exec"
	if os.Geteuid() != 0 {
		if c, err := os.UserCacheDir(); err == nil {
			base = filepath.Join(c, "goalbox-exec")
		} else {
			base = filepath.Join(os.TempDir(), "goalbox-exec-"+strconv.Itoa(os.Geteuid()))
		}
	}
	return filepath.Join(base, "quarantine", "ws-"+hex.EncodeToString(sum[:8]))
}

// scan walks the workspace (never through a symlink) and records every protected path. A folder whose inode and
// change time are those of the last scan is not read again: its entries come from the cache. The change time, not
// the modification time, because a command can set a folder's mtime back (touch -d) but not its ctime, and every
// entry added, removed or renamed in a folder changes both. So a scan costs one lstat per folder, plus reading the
// folders that changed.
func (p *protector) scan() protectedScan {
	p.scanMu.Lock()
	defer p.scanMu.Unlock()
	s := protectedScan{entries: map[string]protectedEntry{}}
	w := scanWalk{p: p, s: &s, seen: map[string]bool{}}
	w.visit(".", false)
	maps.DeleteFunc(p.dirs, func(rel string, _ cachedDir) bool { return !w.seen[rel] })
	if w.n > p.maxEntries {
		// Fail closed: past the cached scan's bound (its cache holds every folder's names), walk again without a
		// cache, holding one folder's names at a time, so that no filler of the workspace hides a protected path
		// from the sweep (200,001 empty files before .git used to switch protection off).
		p.logger.Info("protected files: the workspace has more entries than the cached scan reads; walking it whole", "limit", p.maxEntries)
		s = protectedScan{entries: map[string]protectedEntry{}}
		w = scanWalk{p: p, s: &s}
		w.walkUncached()
	}
	return s
}

// walkUncached records every protected path of the workspace, reading each folder as it goes and keeping nothing
// of it: linear in the entries, bounded in memory by the largest folder and the depth.
func (w *scanWalk) walkUncached() {
	var inside []string // the protected folders on the current path, outermost first
	_ = filepath.WalkDir(w.p.dir, func(host string, e fs.DirEntry, err error) error {
		if err != nil || host == w.p.dir {
			return nil
		}
		rel := filepath.ToSlash(host[len(w.p.dir)+1:])
		for len(inside) > 0 && !strings.HasPrefix(rel, inside[len(inside)-1]+"/") {
			inside = inside[:len(inside)-1]
		}
		prot := len(inside) > 0
		if !prot && w.p.prot.MayEnd(e.Name()) {
			_, prot = w.p.prot.Match(rel)
		}
		if !prot && !e.IsDir() && w.p.gitlinks && strings.EqualFold(e.Name(), ".git") {
			prot = true
		}
		if prot {
			w.record(rel, len(inside) == 0)
			if e.IsDir() {
				inside = append(inside, rel)
			}
		}
		return nil
	})
}

// cachedDir is what a scan read of one folder.
type cachedDir struct {
	ino   uint64
	ctime time.Time
	names []string
	dirs  []bool // whether each entry is a folder (not a link to one)
}

type scanWalk struct {
	p       *protector
	s       *protectedScan
	seen    map[string]bool
	n, kept int
}

func (w *scanWalk) visit(rel string, protectedDir bool) {
	host := filepath.Join(w.p.dir, filepath.FromSlash(rel))
	ino, ctime, ok := dirStamp(host)
	if !ok {
		return
	}
	w.seen[rel] = true
	c, cached := w.p.dirs[rel]
	if !cached || c.ino != ino || !c.ctime.Equal(ctime) {
		ents, err := os.ReadDir(host)
		if err != nil {
			return // vanished or unreadable: nothing to protect there
		}
		c = cachedDir{ino: ino, ctime: ctime, names: make([]string, len(ents)), dirs: make([]bool, len(ents))}
		for i, e := range ents {
			c.names[i], c.dirs[i] = e.Name(), e.IsDir()
		}
		w.p.dirs[rel] = c
	}
	for i, name := range c.names {
		if w.n++; w.n > w.p.maxEntries {
			return
		}
		child := name
		if rel != "." {
			child = rel + "/" + name
		}
		prot := protectedDir
		if !prot && w.p.prot.MayEnd(name) {
			_, prot = w.p.prot.Match(child)
		}
		// A file or link named .git (a gitlink) points git at another folder's config and hooks: while git's
		// files are protected, one is protected as they are (pathguard refuses making one, the same way).
		if !prot && !c.dirs[i] && w.p.gitlinks && strings.EqualFold(name, ".git") {
			prot = true
		}
		if prot {
			w.record(child, !protectedDir)
		}
		if c.dirs[i] {
			w.visit(child, prot)
		}
	}
}

// record notes one protected path; outermost says no protected folder holds it.
func (w *scanWalk) record(rel string, outermost bool) {
	fi, err := os.Lstat(filepath.Join(w.p.dir, filepath.FromSlash(rel)))
	if err != nil {
		return
	}
	e := protectedEntry{mode: fi.Mode(), size: fi.Size(), mtime: fi.ModTime(), link: fi.Mode()&fs.ModeSymlink != 0}
	if !w.p.enforced && fi.Mode().IsRegular() && fi.Size() <= protectKeepBytes && w.kept+int(fi.Size()) <= protectKeepTotal {
		if _, b, err := w.p.guard.ReadFile(rel); err == nil {
			e.content, w.kept = b, w.kept+len(b)
		}
	}
	w.s.entries[rel] = e
	if outermost {
		w.s.outermost = append(w.s.outermost, rel)
	}
}

// swept is what a sweep did: the protected paths it undid (or took out), and among them the ones a command deleted
// that it could not put back (it kept no copy of them).
type swept struct {
	undone, lost []string
}

// sweep undoes what a command did to protected paths since before was taken, and returns the paths it undid.
func (p *protector) sweep(before protectedScan) swept {
	p.mu.Lock()
	defer p.mu.Unlock()
	after := p.scan()
	var undone, lost []string
	var gone []string // quarantined folders: what was inside them is handled
	for _, rel := range slices.Sorted(maps.Keys(after.entries)) {
		if slices.ContainsFunc(gone, func(g string) bool { return strings.HasPrefix(rel, g+"/") }) {
			continue
		}
		e := after.entries[rel]
		old, existed := before.entries[rel]
		switch {
		case !existed:
			if p.harmlessNew(rel, e) {
				continue
			}
			p.quarantineOut(rel)
			undone, gone = append(undone, rel), append(gone, rel)
		case !p.enforced && !old.same(e) && old.mode.IsRegular():
			// Fail closed: a changed file the scan kept no copy of (past protectKeepBytes, or past
			// protectKeepTotal in walk order) cannot be put back, so it is taken out rather than left changed.
			p.quarantineOut(rel)
			if old.content != nil {
				p.putBack(rel, old)
			} else {
				p.logger.Warn("protected files: a changed file the sweep kept no copy of was taken out, not put back", "path", rel)
			}
			undone, gone = append(undone, rel), append(gone, rel)
		}
	}
	if !p.enforced {
		for _, rel := range slices.Sorted(maps.Keys(before.entries)) {
			old := before.entries[rel]
			if _, still := after.entries[rel]; still {
				continue
			}
			if old.mode.IsDir() || (old.mode.IsRegular() && old.content != nil) {
				p.putBack(rel, old)
				undone = append(undone, rel)
			} else if old.mode.IsRegular() {
				// Fail closed as far as it goes: it cannot be put back, so the result names it (protected_undone,
				// and the note says it is lost), never the log alone.
				p.logger.Warn("protected files: a command deleted a file the sweep kept no copy of; it cannot be put back", "path", rel)
				undone, lost = append(undone, rel), append(lost, rel)
			}
		}
	}
	return swept{undone: undone, lost: lost}
}

// harmlessNew reports whether a new protected path is one that `git init` makes and git never runs
// (wsguard.HarmlessNew).
func (p *protector) harmlessNew(rel string, e protectedEntry) bool {
	if e.link {
		return false
	}
	return wsguard.HarmlessNew(rel, e.mode, func() ([]byte, error) { _, b, err := p.guard.ReadFile(rel); return b, err })
}

// quarantineOut moves rel (a file, a link or a whole folder) out of the workspace into the quarantine. It copies
// through the guard, which never follows a link out, and then removes; a link is recorded by name only.
func (p *protector) quarantineOut(rel string) {
	dest := filepath.Join(p.quarantine, time.Now().UTC().Format("20060102T150405")+"-"+strconv.FormatInt(p.seq.Add(1), 10), filepath.FromSlash(rel))
	// The quarantine is outside the workspace, where no disk cap counts: what a command plants is kept only while
	// the quarantine holds less than protectQuarantineBytes, else removed without a copy (and logged), or a
	// command planting a large .vscode/ again and again would fill the host's disk through it.
	budget := protectQuarantineBytes - diskcap.Usage(p.quarantine)
	if err := p.copyOut(rel, dest, 0, &budget); err != nil {
		p.logger.Warn("protected files: could not keep a copy before removing", "path", rel, "error", err)
	}
	if _, _, err := p.guard.Remove(rel, true); err != nil {
		p.logger.Error("protected files: could not remove what a command planted", "path", rel, "error", err)
		return
	}
	p.logger.Warn("protected files: moved what a command changed to the quarantine", "path", rel, "quarantine", dest)
}

func (p *protector) copyOut(rel, dest string, depth int, budget *int64) error {
	_, fi, err := p.guard.Lstat(rel)
	if err != nil {
		return err
	}
	switch {
	case depth > 64:
		return fmt.Errorf("deeper than 64 folders")
	case fi.Mode()&fs.ModeSymlink != 0:
		return os.WriteFile(dest+".symlink", nil, 0o600)
	case fi.IsDir():
		if err := os.MkdirAll(dest, 0o700); err != nil {
			return err
		}
		_, ents, err := p.guard.ReadDir(rel)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if err := p.copyOut(rel+"/"+e.Name(), filepath.Join(dest, e.Name()), depth+1, budget); err != nil {
				return err
			}
		}
		return nil
	case fi.Mode().IsRegular():
		if fi.Size() > *budget {
			return fmt.Errorf("the quarantine is full (%d bytes, -quarantine-dir): %s removed without a copy", protectQuarantineBytes, rel)
		}
		*budget -= fi.Size()
		_, b, err := p.guard.ReadFile(rel)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(dest), 0o700); err != nil {
			return err
		}
		return os.WriteFile(dest, b, 0o600)
	}
	return nil
}

// putBack restores a protected path as the scan before the command saw it.
func (p *protector) putBack(rel string, old protectedEntry) {
	var err error
	if old.mode.IsDir() {
		_, err = p.guard.MkdirAll(rel)
	} else {
		_, _, err = p.guard.WriteFile(rel, old.content)
	}
	if err != nil {
		p.logger.Error("protected files: could not put back", "path", rel, "error", err)
	}
}

// bounds are the sweep's limits, for /healthz.
func (p *protector) bounds() *protocol.SweepBounds {
	return &protocol.SweepBounds{ScanCachedEntries: p.maxEntries, KeepFileBytes: protectKeepBytes, KeepTotalBytes: protectKeepTotal,
		QuarantineMaxBytes: protectQuarantineBytes}
}

// protectedNote is what a command whose changes to protected files were undone finds at the end of its stderr.
func protectedNote(s swept) string {
	var put []string
	for _, u := range s.undone {
		if !slices.Contains(s.lost, u) {
			put = append(put, u)
		}
	}
	var b strings.Builder
	b.WriteString("\n[goalbox: ")
	if len(put) > 0 {
		fmt.Fprintf(&b, "protected project files changed by this command were undone and kept out of the workspace: %s. ", strings.Join(put, ", "))
	}
	if len(s.lost) > 0 {
		fmt.Fprintf(&b, "Protected project files this command deleted could NOT be put back, since no copy of them was kept (past %d bytes each, or past %d bytes of copies): %s; restore them from git or a backup. ",
			protectKeepBytes, protectKeepTotal, strings.Join(s.lost, ", "))
	}
	b.WriteString("Git hooks and config, editor and agent settings and .envrc run code on the host, so commands may read them but not create, " +
		"change, move or delete them (the server's -protect and -unprotect set the list)]\n")
	return b.String()
}
