//go:build unix

package diskcap

import (
	"io/fs"
	"syscall"
)

// fileBlocks is what the disk cap counts of the file fi describes: its identity (device and inode, to count a file
// with several hard links once), its link count and its allocated 512-byte blocks.
func fileBlocks(fi fs.FileInfo) (key [2]uint64, nlink uint64, blocks int64, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return key, 0, 0, false
	}
	return [2]uint64{uint64(st.Dev), uint64(st.Ino)}, uint64(st.Nlink), int64(st.Blocks), true
}
