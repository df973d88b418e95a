//go:build unix

package fsserver

import (
	"fmt"
	"io/fs"
	"syscall"
)

// folderID names the folder fi describes by device and inode, the same for every path that reaches it.
func folderID(fi fs.FileInfo) (string, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", false
	}
	return fmt.Sprintf("%d:%d", uint64(st.Dev), uint64(st.Ino)), true
}
