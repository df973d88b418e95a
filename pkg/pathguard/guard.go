// Package pathguard confines file operations to one workspace folder. It is the only way a goalbox server touches
// files.
//
// It is built on os.Root, which resolves every path component with openat and refuses "..", absolute symlinks and
// symlinks that lead out of the root without the check-then-open race of realpath-based guards. On top of os.Root it
// accepts client paths in the forms the tool contract allows (workspace-relative, or absolute under the advertised
// root or the workspace's real path), refuses NUL bytes, refuses anything that is not a regular file or a folder
// (a FIFO would block a reader forever), refuses creating symlinks that point out, and caps sizes.
//
// Errors are *Error values whose messages name only workspace-relative paths.
package pathguard

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/goalbox/goalbox/pkg/envflag"
)

// Options tune a Guard. Zero values take the defaults.
type Options struct {
	// AdvertisedRoot is the absolute path clients see for the workspace, "/workspace" by default.
	AdvertisedRoot string
	// MaxReadBytes caps how much of one file is read into memory (default 10 MiB).
	MaxReadBytes int64
	// MaxWriteBytes caps the size of one write (default 10 MiB).
	MaxWriteBytes int64
	// MaxTreeDepth caps how many levels of folders below its start one walk (list, search, the symlink check of a
	// move) opens (default 1024): a walk holds a handle per level.
	MaxTreeDepth int
	// MaxTreeEntries caps the entries one walk reads, over all its folders (default 200,000): a sorted walk holds
	// the entries of the folders on its way down, and every entry costs time.
	MaxTreeEntries int
	// MaxWorkspaceBytes caps what the workspace may hold, in bytes of regular files: a write that would take it past
	// the cap is refused (see usage.go for how it is counted and what it can miss). 0, the default, is no cap.
	MaxWorkspaceBytes int64
	// Protection is the protected project files (protect.go): every operation that changes the tree refuses to
	// create, replace, move or delete a protected path, or anything that holds one (guardprotect.go). Reads are not
	// affected. nil protects nothing; the servers always set one (the defaults at least).
	Protection *Protection
}

// Defaults for Options.
const (
	DefaultAdvertisedRoot = "/workspace"
	DefaultMaxReadBytes   = 10 << 20
	DefaultMaxWriteBytes  = 10 << 20
	// DefaultMaxTreeDepth is far deeper than any real tree (a path of 1024 one-letter folders is half of PATH_MAX)
	// and keeps a walk's open handles few.
	DefaultMaxTreeDepth = 1024
	// DefaultMaxTreeEntries covers a large repository with its dependencies while bounding one walk's memory to
	// about 20 MB and its time to a second or two.
	DefaultMaxTreeEntries = 200_000
)

// Guard is an open workspace. It is safe for concurrent use.
type Guard struct {
	root     root
	realDir  string // the workspace's real (symlink-free) host path
	opts     Options
	tempName func() string
	owner    *owner // who new files and folders belong to; nil leaves it to the kernel (see owner.go)
	handles  handles
	usage    usage
}

// Open opens dir as a workspace, creating it if it is missing.
func Open(dir string, opts Options) (*Guard, error) {
	opts.AdvertisedRoot = path.Clean(cmp.Or(opts.AdvertisedRoot, DefaultAdvertisedRoot))
	if !path.IsAbs(opts.AdvertisedRoot) {
		return nil, fmt.Errorf("advertised root %q must be an absolute path", opts.AdvertisedRoot)
	}
	envflag.PositiveOr(&opts.MaxReadBytes, DefaultMaxReadBytes)
	envflag.PositiveOr(&opts.MaxWriteBytes, DefaultMaxWriteBytes)
	envflag.PositiveOr(&opts.MaxTreeDepth, DefaultMaxTreeDepth)
	envflag.PositiveOr(&opts.MaxTreeEntries, DefaultMaxTreeEntries)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create workspace: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace path: %w", err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace path: %w", err)
	}
	r, err := os.OpenRoot(real)
	if err != nil {
		return nil, fmt.Errorf("open workspace: %w", err)
	}
	fi, err := r.Stat(".")
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("open workspace: %w", err)
	}
	g := &Guard{root: root{r, new(atomic.Int64)}, realDir: real, opts: opts, tempName: randomTempName,
		owner: workspaceOwner(fi), handles: handles{max: handleBudget()}}
	if opts.MaxWorkspaceBytes > 0 {
		// Count now, so that the first write does not wait for it.
		g.usage.mu.Lock()
		g.count(&g.usage)
		g.usage.mu.Unlock()
	}
	return g, nil
}

// Close releases the workspace handle.
func (g *Guard) Close() error { return g.root.Close() }

// Dir is the workspace's real host path. Commands on the local backend see the workspace under this path.
func (g *Guard) Dir() string { return g.realDir }

// AdvertisedRoot is the absolute path clients see for the workspace.
func (g *Guard) AdvertisedRoot() string { return g.opts.AdvertisedRoot }

// Options returns the options in force, defaults filled in.
func (g *Guard) Options() Options { return g.opts }

// Clean turns a client path into a clean workspace-relative path ("." for the workspace itself; an empty path means
// the workspace too, and operations that need a file refuse "." themselves). It refuses NUL bytes, Windows-style
// paths and names (names.go), absolute paths outside the advertised root and the workspace's real path, and ".." that
// climbs out lexically. Clean does not touch the file system: symlinks are judged when the path is opened.
func (g *Guard) Clean(p string) (string, error) {
	if strings.IndexByte(p, 0) >= 0 {
		return "", invalid(p, "the path contains a NUL byte")
	}
	if p == "" {
		return ".", nil
	}
	if err := portable(p, g.opts.AdvertisedRoot); err != nil {
		return "", err
	}
	orig := p
	if path.IsAbs(p) {
		rel, ok := g.underRoot(p)
		if !ok {
			return "", &Error{Path: printable(p), Reason: ReasonOutside,
				Detail: fmt.Sprintf("absolute paths must be under %s", g.opts.AdvertisedRoot)}
		}
		p = rel
	}
	if err := portableNames(orig, p); err != nil {
		return "", err
	}
	c := path.Clean(p)
	if escapes(c) {
		return "", &Error{Path: printable(p), Reason: ReasonOutside, Detail: "\"..\" may not climb out of the workspace"}
	}
	return c, nil
}

// underRoot maps an absolute client path under the advertised root or the real workspace path to a relative one.
// The comparison is by whole path elements, so "/workspace_evil" is not under "/workspace" (CVE-2025-53110).
func (g *Guard) underRoot(p string) (string, bool) {
	c := path.Clean(p)
	bases := []string{g.opts.AdvertisedRoot, filepath.ToSlash(g.realDir)}
	if len(bases[1]) > len(bases[0]) {
		// When one contains the other (a workspace at /workspace/ws), the longer, more specific one wins.
		bases[0], bases[1] = bases[1], bases[0]
	}
	for _, base := range bases {
		if c == base {
			return ".", true
		}
		if rest, ok := strings.CutPrefix(c, strings.TrimSuffix(base, "/")+"/"); ok {
			return rest, true
		}
	}
	return "", false
}

// namesFolder reports whether the client path p can only name a folder, as open(2) reads it: it ends in "/", "/."
// or "/..". path.Clean would turn "a.txt/." into "a.txt", the file, so this is judged on the path as given.
func namesFolder(p string) bool {
	return strings.HasSuffix(p, "/") || strings.HasSuffix(p, "/.") || strings.HasSuffix(p, "/..")
}

// printable keeps a refused path fit for an error message: no NUL bytes, bounded length.
func printable(p string) string {
	p = strings.ReplaceAll(p, "\x00", `\x00`)
	if len(p) > 200 {
		p = p[:200] + "..."
	}
	return p
}

// Reasons an operation is refused.
const (
	ReasonInvalid    = "invalid path"
	ReasonOutside    = "outside the workspace"
	ReasonNotFound   = "not found"
	ReasonExists     = "already exists"
	ReasonNotRegular = "not a regular file"
	ReasonIsDir      = "is a folder"
	ReasonNotDir     = "not a folder"
	ReasonTooLarge   = "too large"
	ReasonNotEmpty   = "folder not empty"
	ReasonTooDeep    = "too deep"
	ReasonTooMany    = "too many entries"
	ReasonBusy       = "busy"
	ReasonChanged    = "changed while in use"
	ReasonNoSpace    = "over the workspace's disk cap"
	ReasonProtected  = "protected project file"
)

// invalid refuses the client path p as ReasonInvalid, saying why.
func invalid(p, detail string) error {
	return &Error{Path: printable(p), Reason: ReasonInvalid, Detail: detail}
}

// isCap reports whether err is a refusal by one of the caps on a walk, which a walk never skips over.
func isCap(err error) bool {
	return IsReason(err, ReasonTooDeep) || IsReason(err, ReasonTooMany) || IsReason(err, ReasonBusy)
}

// capRefusal refuses op on rel because a walk's cap (err, isCap) stopped it checking the tree: what was not
// checked, why, and what the client can do instead.
func capRefusal(op, rel string, err error, unchecked, instead string) error {
	var ge *Error
	errors.As(err, &ge)
	return &Error{Op: op, Path: rel, Reason: ge.Reason, Detail: unchecked + ": " + ge.Detail + "; " + instead}
}

// Error is a refused or failed operation. Path is workspace-relative (or the client's own input when that was
// refused); no other host path ever appears in it.
type Error struct {
	Op     string
	Path   string
	Reason string
	Detail string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Op != "" {
		b.WriteString(e.Op)
		b.WriteString(" ")
	}
	fmt.Fprintf(&b, "%q: %s", printable(e.Path), e.Reason)
	if e.Detail != "" {
		b.WriteString(" (")
		b.WriteString(e.Detail)
		b.WriteString(")")
	}
	return b.String()
}

// IsReason reports whether err is an *Error with the given reason.
func IsReason(err error, reason string) bool {
	var e *Error
	return errors.As(err, &e) && e.Reason == reason
}
