package pathguard

import (
	"errors"
	"io/fs"
	"path"
	"strings"
)

// resolveByPath is how resolve was first written, kept as the reference that resolveOpen is held to
// (TestResolveOpenMatchesResolve): every prefix named from the workspace, simple and quadratic in the depth.
func (g *Guard) resolveByPath(op, rel string) (string, fs.FileInfo, error) {
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
