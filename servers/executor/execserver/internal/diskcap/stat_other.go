//go:build !unix

package diskcap

import "io/fs"

// fileBlocks has nothing to tell where a stat carries no blocks (Windows): the disk cap counts sizes there.
func fileBlocks(fi fs.FileInfo) (key [2]uint64, nlink uint64, blocks int64, ok bool) {
	return key, 0, 0, false
}
