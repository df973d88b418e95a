//go:build linux

package fsserver

import (
	"errors"
	"io/fs"
	"strconv"
	"strings"
	"syscall"
)

// statKey is what a file looked like when it was hashed: if all of it is the same at the next checkpoint, the
// content is taken to be the same (git's index makes the same bet). ctime changes on every write and every chmod,
// and cannot be set back by a program, so a file rewritten with its old mtime restored is still read again.
type statKey struct {
	Size  int64
	Mtime int64
	Ctime int64
	Ino   uint64
	Dev   uint64
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

// appendStat and parseStat write the key as five comma-separated numbers.
func appendStat(b []byte, k statKey) []byte {
	b = strconv.AppendInt(b, k.Size, 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, k.Mtime, 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, k.Ctime, 10)
	b = append(b, ',')
	b = strconv.AppendUint(b, k.Ino, 10)
	b = append(b, ',')
	return strconv.AppendUint(b, k.Dev, 10)
}

func parseStat(s string) (statKey, error) {
	var k statKey
	f := strings.Split(s, ",")
	if len(f) != 5 {
		return k, nil // another platform's key, or none: never trusted, the file is read again
	}
	var errs [5]error
	k.Size, errs[0] = strconv.ParseInt(f[0], 10, 64)
	k.Mtime, errs[1] = strconv.ParseInt(f[1], 10, 64)
	k.Ctime, errs[2] = strconv.ParseInt(f[2], 10, 64)
	k.Ino, errs[3] = strconv.ParseUint(f[3], 10, 64)
	k.Dev, errs[4] = strconv.ParseUint(f[4], 10, 64)
	return k, errors.Join(errs[:]...)
}
