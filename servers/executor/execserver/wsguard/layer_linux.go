package wsguard

import (
	"io/fs"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// The overlay's marks in a user namespace (mount option userxattr): user.overlay.* extended attributes.
const (
	xattrOpaque   = "user.overlay.opaque"
	xattrRedirect = "user.overlay.redirect"
	xattrMetacopy = "user.overlay.metacopy"
)

// isWhiteout reports whether fi is an overlay whiteout: a character device 0/0.
func isWhiteout(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && fi.Mode()&fs.ModeCharDevice != 0 && st.Rdev == 0
}

// isOpaque reports whether the open folder f is opaque: it replaces the workspace's folder rather than adding to it.
func isOpaque(f *os.File) bool {
	var v [1]byte
	n, err := unix.Fgetxattr(int(f.Fd()), xattrOpaque, v[:])
	return err == nil && n == 1 && v[0] == 'y'
}

// otherLayerMarks reports whether the entry rel of the layer holds a mark that makes its content come from
// elsewhere (a redirect or a metacopy): the layers are made with both off, so one is never expected.
func otherLayerMarks(layer *os.Root, rel string) bool {
	f, err := layer.OpenFile(rel, unix.O_PATH|unix.O_NOFOLLOW, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	// An O_PATH descriptor cannot read attributes itself; its /proc/self/fd link can.
	p := "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	for _, name := range []string{xattrRedirect, xattrMetacopy} {
		if _, err := unix.Getxattr(p, name, nil); err == nil {
			return true
		}
	}
	return false
}
