package pathguard

import (
	"io/fs"
	"slices"
	"strings"
)

// resolve follows every symlink in the clean workspace-relative path rel the way os.Root (and the kernel) does —
// a link's text replaces its name, ".." then drops the folder before it — and returns the path with no symlink left
// in it, plus the info of what is there (nil when the path, or its tail, does not exist yet; the missing tail is
// kept as given). A relative symlink's meaning depends on the real folder that holds it, not on the spelling used
// to reach it: "d/l -> ../x" where d is a link to "." points out of the workspace although "d/../x" is "x". Every
// check on a symlink's target is made from the path resolve returns. Absolute symlink targets are refused, as
// os.Root refuses them.
//
// It is resolveOpen without the handle: one name at a time from the folder reached, a few lookups per name.
// (Naming each prefix from the workspace, as it once did, cost the sum of their depths: a move 2,000 folders down
// resolved two million names.)
func (g *Guard) resolve(op, rel string) (string, fs.FileInfo, error) {
	real, fi, _, _, release, err := g.resolveOpen(op, rel)
	if err != nil {
		return "", nil, err
	}
	release()
	return real, fi, nil
}

// loopDetail explains ELOOP: os.Root gives up after 8 symlinks in one path (the kernel after 40).
const loopDetail = "too many levels of symlinks: a loop, or more than 8 symlinks on one path"

// splitPath splits a slash-separated path into its names, dropping empty and "." names.
func splitPath(p string) []string {
	return slices.DeleteFunc(strings.Split(p, "/"), func(s string) bool { return s == "" || s == "." })
}

// escapes reports whether a clean relative path climbs out of the folder it is relative to.
func escapes(clean string) bool {
	return clean == ".." || strings.HasPrefix(clean, "../")
}
