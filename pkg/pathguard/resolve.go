package pathguard

import (
	"errors"
	"io/fs"
	"path"
	"strings"
)

// resolve follows every symlink in the clean workspace-relative path rel the way os.Root (and the kernel) does —
// a link's text replaces its name, ".." then drops the folder before it — and returns the path with no symlink left
// in it, plus the info of what is there (nil when the path, or its tail, does not exist yet; the missing tail is
// kept as given). A relative symlink's meaning depends on the real folder that holds it, not on the spelling used
// to reach it: "d/l -> ../x" where d is a link to "." points out of the workspace although "d/../x" is "x". Every
// check on a symlink's target is made from the path resolve returns. Absolute symlink targets are refused, as
// os.Root refuses them.
func (g *Guard) resolve(op, rel string) (string, fs.FileInfo, error) {
	todo := splitPath(rel)
	var done []string
	var last fs.FileInfo
	hops := 0
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		if name == ".." {
			if len(done) == 0 {
				return "", nil, &Error{Op: op, Path: rel, Reason: ReasonOutside, Detail: "a symlink on the way leads out of the workspace"}
			}
			done = done[:len(done)-1]
			last = nil
			continue
		}
		cur := path.Join(strings.Join(done, "/"), name)
		fi, err := g.root.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			for _, n := range todo {
				if n == ".." {
					// The kernel would stop at the missing folder; so do we.
					return "", nil, wrap(op, rel, err)
				}
			}
			return path.Join(cur, strings.Join(todo, "/")), nil, nil
		}
		if err != nil {
			return "", nil, wrap(op, rel, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			done = append(done, name)
			last = fi
			continue
		}
		if hops++; hops > maxLinkHops {
			return "", nil, &Error{Op: op, Path: rel, Reason: ReasonInvalid, Detail: loopDetail}
		}
		link, err := g.root.Readlink(cur)
		if err != nil {
			return "", nil, wrap(op, rel, err)
		}
		if link == "" || path.IsAbs(link) {
			return "", nil, &Error{Op: op, Path: rel, Reason: ReasonOutside,
				Detail: "a symlink on the way has an absolute target; only relative symlinks that stay inside are followed"}
		}
		todo = append(splitPath(link), todo...)
	}
	real := strings.Join(done, "/")
	if real == "" {
		real = "."
	}
	if last == nil {
		fi, err := g.root.Lstat(real)
		if err != nil {
			return "", nil, wrap(op, rel, err)
		}
		last = fi
	}
	return real, last, nil
}

// loopDetail explains ELOOP: os.Root gives up after 8 symlinks in one path (the kernel after 40).
const loopDetail = "too many levels of symlinks: a loop, or more than 8 symlinks on one path"

// splitPath splits a slash-separated path into its names, dropping empty and "." names.
func splitPath(p string) []string {
	parts := strings.Split(p, "/")
	out := parts[:0]
	for _, s := range parts {
		if s != "" && s != "." {
			out = append(out, s)
		}
	}
	return out
}

// escapes reports whether a clean relative path climbs out of the folder it is relative to.
func escapes(clean string) bool {
	return clean == ".." || strings.HasPrefix(clean, "../")
}
