//go:build !linux

package fsserver

import "io/fs"

// statKey is what a file looked like when it was hashed (see checkpoint_stat_linux.go); without a ctime, a file
// rewritten with its old size and mtime put back is taken to be unchanged.
type statKey struct {
	Size  int64 `json:"s"`
	Mtime int64 `json:"m"`
}

func statKeyOf(fi fs.FileInfo) statKey {
	return statKey{Size: fi.Size(), Mtime: fi.ModTime().UnixNano()}
}

func ctimeOf(statKey) int64 { return 0 }
