//go:build !linux

package fsserver

import (
	"errors"
	"io/fs"
	"strconv"
	"strings"
)

// statKey is what a file looked like when it was hashed (see checkpoint_stat_linux.go); without a ctime, a file
// rewritten with its old size and mtime put back is taken to be unchanged.
type statKey struct {
	Size  int64
	Mtime int64
}

func statKeyOf(fi fs.FileInfo) statKey {
	return statKey{Size: fi.Size(), Mtime: fi.ModTime().UnixNano()}
}

func ctimeOf(statKey) int64 { return 0 }

// appendStat and parseStat write the key as two comma-separated numbers.
func appendStat(b []byte, k statKey) []byte {
	b = strconv.AppendInt(b, k.Size, 10)
	b = append(b, ',')
	return strconv.AppendInt(b, k.Mtime, 10)
}

func parseStat(s string) (statKey, error) {
	var k statKey
	f := strings.Split(s, ",")
	if len(f) != 2 {
		return k, nil // another platform's key, or none: never trusted, the file is read again
	}
	var e1, e2 error
	k.Size, e1 = strconv.ParseInt(f[0], 10, 64)
	k.Mtime, e2 = strconv.ParseInt(f[1], 10, 64)
	return k, errors.Join(e1, e2)
}
