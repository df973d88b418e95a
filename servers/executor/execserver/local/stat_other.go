//go:build !unix

package local

import "io/fs"

// fileBlocks has nothing to tell where a stat carries no blocks (Windows): the disk cap counts sizes there. The local
// backend itself needs Linux (local_other.go); this keeps the package building.
func fileBlocks(fi fs.FileInfo) (key [2]uint64, nlink uint64, blocks int64, ok bool) {
	return key, 0, 0, false
}
