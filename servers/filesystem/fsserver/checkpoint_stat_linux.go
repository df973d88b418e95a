//go:build linux

package fsserver

import (
	"io/fs"
	"syscall"
)

// statKey is what a file looked like when it was hashed: if all of it is the same at the next checkpoint, the
// content is taken to be the same (git's index makes the same bet). ctime changes on every write and every chmod,
// and cannot be set back by a program, so a file rewritten with its old mtime restored is still read again.
type statKey struct {
	Size  int64  `json:"s"`
	Mtime int64  `json:"m"`
	Ctime int64  `json:"c"`
	Ino   uint64 `json:"i"`
	Dev   uint64 `json:"d"`
}

func statKeyOf(fi fs.FileInfo) statKey {
	k := statKey{Size: fi.Size(), Mtime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		k.Ctime = st.Ctim.Sec*1e9 + st.Ctim.Nsec
		k.Ino, k.Dev = uint64(st.Ino), uint64(st.Dev)
	}
	return k
}

func ctimeOf(k statKey) int64 { return k.Ctime }
