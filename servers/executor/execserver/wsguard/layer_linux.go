package wsguard

import (
	"bytes"
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

// otherLayerMarks reports whether the entry name of the layer's open folder dir holds a mark that makes its content
// come from elsewhere (a redirect or a metacopy): the layers are made with both off, so one is never expected. One
// llistxattr through the folder's /proc/self/fd link, the entry itself not followed.
func otherLayerMarks(dir *os.File, name string) bool {
	p := "/proc/self/fd/" + strconv.Itoa(int(dir.Fd())) + "/" + name
	var buf [256]byte
	n, err := unix.Llistxattr(p, buf[:])
	list := buf[:max(n, 0)]
	if err == unix.ERANGE {
		size, err := unix.Llistxattr(p, nil)
		if err != nil {
			return false
		}
		list = make([]byte, size)
		if n, err = unix.Llistxattr(p, list); err != nil {
			return false
		}
		list = list[:n]
	} else if err != nil {
		return false
	}
	for _, attr := range bytes.Split(list, []byte{0}) {
		if s := string(attr); s == xattrRedirect || s == xattrMetacopy {
			return true
		}
	}
	return false
}
